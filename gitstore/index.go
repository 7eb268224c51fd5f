package gitstore

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	format "github.com/go-git/go-git/v5/plumbing/format/index"
)

// Index is a work tree's git index file (the dircache) as read: its
// version and its entries in git's order. Only what the entries say is
// kept: written again, it has no extensions (the cache tree, the
// untracked cache, fsmonitor data, resolve-undo), which git rebuilds as
// it needs them. An index git writes with extensions that change what the
// entries mean (a split index, a sparse index) does not read
// (ErrIndexFormat).
type Index struct {
	Version uint32
	Entries []IndexEntry
	// ModTime is the file's modification time when read (zero: no file):
	// an entry whose file changed in that same instant is racy, as git
	// calls it, and its content has to be compared.
	ModTime time.Time
}

// IndexEntry is one entry of an Index.
type IndexEntry struct {
	Path  string
	Mode  Mode
	OID   OID
	Stage int // 0, or 1 to 3 for the sides of a conflict
	Stat  IndexStat
	// SkipWorktree marks a path a sparse checkout leaves out of the work
	// tree, IntentToAdd one git add -N recorded without content.
	SkipWorktree, IntentToAdd bool
}

// IndexStat is what git remembers of a file's stat data to tell whether
// it changed without reading it (32 bits each, as git keeps them).
type IndexStat struct {
	CTime, MTime             time.Time
	Dev, Ino, UID, GID, Size uint32
}

// ErrIndexFormat: an index file sessiond cannot read or could not write
// back as it is.
var ErrIndexFormat = errors.New("unsupported index format")

// ReadIndex reads the index file at path; a missing file is an empty
// index.
func ReadIndex(path string) (*Index, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Index{Version: 2}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var ix format.Index
	if err := format.NewDecoder(bufio.NewReader(f)).Decode(&ix); err != nil {
		if errors.Is(err, format.ErrUnknownExtension) || errors.Is(err, format.ErrUnsupportedVersion) {
			return nil, fmt.Errorf("%s: %w (a split or sparse index, or a version other than 2 to 4): %v", path, ErrIndexFormat, err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := &Index{Version: ix.Version, ModTime: fi.ModTime(), Entries: make([]IndexEntry, len(ix.Entries))}
	for i, e := range ix.Entries {
		out.Entries[i] = IndexEntry{
			Path: e.Name, Mode: Mode(e.Mode), OID: OID(e.Hash), Stage: int(e.Stage),
			Stat:         IndexStat{CTime: e.CreatedAt, MTime: e.ModifiedAt, Dev: e.Dev, Ino: e.Inode, UID: e.UID, GID: e.GID, Size: e.Size},
			SkipWorktree: e.SkipWorktree, IntentToAdd: e.IntentToAdd,
		}
	}
	return out, nil
}

// Encode writes the index in git's format, entries sorted by path and
// stage, with its trailing checksum.
func (ix *Index) Encode(w io.Writer) error {
	out := format.Index{Version: ix.Version, Entries: make([]*format.Entry, len(ix.Entries))}
	for i, e := range ix.Entries {
		if (e.SkipWorktree || e.IntentToAdd) && out.Version < 3 {
			out.Version = 3 // the extended flags need version 3
		}
		out.Entries[i] = &format.Entry{
			Hash: plumbing.Hash(e.OID), Name: e.Path, Mode: filemode.FileMode(e.Mode), Stage: format.Stage(e.Stage),
			CreatedAt: e.Stat.CTime, ModifiedAt: e.Stat.MTime, Dev: e.Stat.Dev, Inode: e.Stat.Ino,
			UID: e.Stat.UID, GID: e.Stat.GID, Size: e.Stat.Size,
			SkipWorktree: e.SkipWorktree, IntentToAdd: e.IntentToAdd,
		}
	}
	if err := format.NewEncoder(w).Encode(&out); err != nil {
		return fmt.Errorf("%w: %v", ErrIndexFormat, err)
	}
	return nil
}
