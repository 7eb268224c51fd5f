package merge

import (
	"bytes"

	"github.com/sessiond/sessiond/gitstore"
)

// FilePatch is the unified diff of one file changing from old to new
// content (mode kept), as Patch.Unified prints it: what an edit would do,
// shown before it is written. Equal contents give an empty patch.
func FilePatch(path string, mode gitstore.Mode, old, new []byte) []byte {
	if bytes.Equal(old, new) {
		return nil
	}
	fd := FileDiff{FileChange: FileChange{Status: StatusModified, OldPath: path, NewPath: path,
		OldMode: mode, NewMode: mode,
		OldOID: gitstore.HashObject(gitstore.KindBlob, old), NewOID: gitstore.HashObject(gitstore.KindBlob, new)},
		old: old, new: new}
	fd.Binary = IsBinary(old) || IsBinary(new)
	if !fd.Binary {
		fd.Hunks = hunks(splitLines(old), splitLines(new), 3)
	}
	var b bytes.Buffer
	writeFile(&b, &fd)
	return b.Bytes()
}
