package gitstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// ForeignObjects reads the objects of a git directory sessiond does not
// trust: a view's .git, which the command run in it wrote. Loose objects
// and packs are read; its objects/info/alternates is ignored and no
// symlink leads out of the directory, so it reads only what is in it.
// Every object's content is checked against its id. It is not safe for
// concurrent use.
type ForeignObjects struct {
	s *filesystem.Storage
}

// OpenForeignObjects reads the objects of the git directory gitDir.
func OpenForeignObjects(gitDir string) *ForeignObjects {
	fs := noAlternatesFS{osfs.New(gitDir, osfs.WithBoundOS())}
	return &ForeignObjects{s: filesystem.NewStorageWithOptions(fs, cache.NewObjectLRU(1<<20), filesystem.Options{AlternatesFS: fs})}
}

// noAlternatesFS hides objects/info/alternates.
type noAlternatesFS struct{ billy.Filesystem }

func (f noAlternatesFS) Open(name string) (billy.File, error) {
	if filepath.Clean(name) == filepath.Join("objects", "info", "alternates") {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	return f.Filesystem.Open(name)
}

// ErrForeignMissing: the foreign directory lacks the object.
var ErrForeignMissing = errors.New("object not in the directory")

// Read returns object id's kind and content.
func (f *ForeignObjects) Read(id OID) (Kind, []byte, error) {
	if f == nil {
		return 0, nil, fmt.Errorf("object %s: %w", id, ErrForeignMissing)
	}
	raw, err := readEncoded(f.s, id)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return 0, nil, fmt.Errorf("object %s: %w", id, ErrForeignMissing)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("object %s: %v: %w", id, err, ErrCorrupt)
	}
	if HashObject(raw.kind, raw.data) != id {
		return 0, nil, fmt.Errorf("object %s: content does not hash to its id: %w", id, ErrCorrupt)
	}
	return raw.kind, raw.data, nil
}

// Commit reads and decodes commit id.
func (f *ForeignObjects) Commit(id OID) (*Commit, error) {
	k, data, err := f.Read(id)
	if err != nil {
		return nil, err
	}
	if k != KindCommit {
		return nil, fmt.Errorf("object %s is a %s, not a commit: %w", id, k, ErrWrongKind)
	}
	return decodeCommit(id, data)
}

// Tree reads and decodes tree id.
func (f *ForeignObjects) Tree(id OID) (*Tree, error) {
	k, data, err := f.Read(id)
	if err != nil {
		return nil, err
	}
	if k != KindTree {
		return nil, fmt.Errorf("object %s is a %s, not a tree: %w", id, k, ErrWrongKind)
	}
	return decodeTree(id, data)
}

// Blob reads blob id.
func (f *ForeignObjects) Blob(id OID) ([]byte, error) {
	k, data, err := f.Read(id)
	if err != nil {
		return nil, err
	}
	if k != KindBlob {
		return nil, fmt.Errorf("object %s is a %s, not a blob: %w", id, k, ErrWrongKind)
	}
	return data, nil
}
