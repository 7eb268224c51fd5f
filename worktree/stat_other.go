//go:build !linux

package worktree

import (
	"io/fs"

	"github.com/sessiond/sessiond/gitstore"
)

// statOf is the stat data git keeps of fi in an index entry, as far as
// this system's fs.FileInfo tells it: a file whose other fields git
// recorded is compared by content.
func statOf(fi fs.FileInfo) gitstore.IndexStat {
	return gitstore.IndexStat{MTime: fi.ModTime(), Size: uint32(fi.Size())}
}
