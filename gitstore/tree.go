package gitstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
)

// TreeEntry is one entry of a decoded tree.
type TreeEntry struct {
	Name string
	Mode Mode
	OID  OID
}

// Tree is a decoded tree object. Trees are immutable and shared through
// the cache: never modify Entries.
type Tree struct {
	OID     OID
	Entries []TreeEntry // in git order
}

// compareEntries orders tree entries the way git does: by name bytes, a
// directory comparing as if its name ended in '/'.
func compareEntries(aName string, aDir bool, bName string, bDir bool) int {
	n := min(len(aName), len(bName))
	if c := strings.Compare(aName[:n], bName[:n]); c != 0 {
		return c
	}
	ac, bc := byte(0), byte(0)
	if len(aName) > n {
		ac = aName[n]
	} else if aDir {
		ac = '/'
	}
	if len(bName) > n {
		bc = bName[n]
	} else if bDir {
		bc = '/'
	}
	switch {
	case ac < bc:
		return -1
	case ac > bc:
		return 1
	}
	return 0
}

// SortEntries sorts entries into git order.
func SortEntries(entries []TreeEntry) {
	slices.SortFunc(entries, func(a, b TreeEntry) int {
		return compareEntries(a.Name, a.Mode.IsDir(), b.Name, b.Mode.IsDir())
	})
}

// Find returns the entry named name.
func (t *Tree) Find(name string) (TreeEntry, bool) {
	if i := t.index(name); i >= 0 {
		return t.Entries[i], true
	}
	return TreeEntry{}, false
}

// index returns the position of the entry named name, or -1.
func (t *Tree) index(name string) int {
	// The entry sorts either as a file ("name") or as a directory
	// ("name/"); try both positions.
	for _, dir := range [2]bool{false, true} {
		i, ok := slices.BinarySearchFunc(t.Entries, name, func(e TreeEntry, n string) int {
			return compareEntries(e.Name, e.Mode.IsDir(), n, dir)
		})
		if ok {
			return i
		}
	}
	return -1
}

// decodeTree parses a tree object's content.
func decodeTree(id OID, data []byte) (*Tree, error) {
	t := &Tree{OID: id}
	// Entries are at least 28 bytes ("1 x\0" + 20 id bytes + a bit).
	t.Entries = make([]TreeEntry, 0, len(data)/40+1)
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp <= 0 {
			return nil, fmt.Errorf("tree %s: %w: bad mode", id, ErrCorrupt)
		}
		mode, err := ParseMode(string(data[:sp]))
		if err != nil {
			return nil, fmt.Errorf("tree %s: %w", id, ErrCorrupt)
		}
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul <= 0 || len(data) < nul+1+OIDSize {
			return nil, fmt.Errorf("tree %s: %w: truncated entry", id, ErrCorrupt)
		}
		e := TreeEntry{Name: string(data[:nul]), Mode: mode}
		copy(e.OID[:], data[nul+1:])
		t.Entries = append(t.Entries, e)
		data = data[nul+1+OIDSize:]
	}
	return t, nil
}

// EncodeTree returns the canonical encoding of entries, which must be in
// git order with unique names.
func EncodeTree(entries []TreeEntry) []byte {
	return appendTreeEntries(make([]byte, 0, treeSize(entries)), entries)
}

// treeSize is the length of the encoding of entries.
func treeSize(entries []TreeEntry) int {
	n := 0
	for _, e := range entries {
		n += len(e.Mode.treeMode()) + len(e.Name) + 2 + OIDSize
	}
	return n
}

func appendTreeEntries(b []byte, entries []TreeEntry) []byte {
	for _, e := range entries {
		b = append(b, e.Mode.treeMode()...)
		b = append(b, ' ')
		b = append(b, e.Name...)
		b = append(b, 0)
		b = append(b, e.OID[:]...)
	}
	return b
}

// Tree returns the decoded tree id, from the cache when it can.
func (r *Repo) Tree(ctx context.Context, id OID) (*Tree, error) {
	if t, ok := r.trees.Get(id); ok {
		return t, nil
	}
	data, err := r.readKind(ctx, id, KindTree)
	if err != nil {
		return nil, err
	}
	t, err := decodeTree(id, data)
	if err != nil {
		return nil, err
	}
	r.trees.Add(id, t)
	return t, nil
}

// Lookup returns the entry at path in the tree root; path "" is the root
// itself. It fails with ErrNotFound when nothing is there, including when a
// component on the way is a file.
func (r *Repo) Lookup(ctx context.Context, root OID, path string) (Entry, error) {
	e := Entry{Path: path, Mode: ModeDir, OID: root}
	rest := path
	for rest != "" {
		name, tail, _ := strings.Cut(rest, "/")
		rest = tail
		if !e.Mode.IsDir() {
			return Entry{}, fmt.Errorf("lookup %q: %w", path, ErrNotFound)
		}
		t, err := r.Tree(ctx, e.OID)
		if err != nil {
			return Entry{}, fmt.Errorf("lookup %q: %w", path, err)
		}
		te, ok := t.Find(name)
		if !ok {
			return Entry{}, fmt.Errorf("lookup %q: %w", path, ErrNotFound)
		}
		e.Mode, e.OID = te.Mode, te.OID
	}
	return e, nil
}

// List calls fn for every entry under the directory prefix ("" for the
// root) of tree root, in git order: a pre-order walk in which each
// directory is reported before its children. recursive=false lists one
// level. Its cost is proportional to the entries listed. fn's error stops
// the walk and is returned.
func (r *Repo) List(ctx context.Context, root OID, prefix string, recursive bool, fn func(Entry) error) error {
	dir, err := r.Lookup(ctx, root, prefix)
	if err != nil {
		return err
	}
	if !dir.Mode.IsDir() {
		return fmt.Errorf("list %q: not a directory: %w", prefix, ErrNotFound)
	}
	return r.walk(ctx, dir.OID, prefix, recursive, fn)
}

func (r *Repo) walk(ctx context.Context, id OID, dir string, recursive bool, fn func(Entry) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t, err := r.Tree(ctx, id)
	if err != nil {
		return err
	}
	for _, te := range t.Entries {
		p := te.Name
		if dir != "" {
			p = dir + "/" + te.Name
		}
		if err := fn(Entry{Path: p, Mode: te.Mode, OID: te.OID}); err != nil {
			return err
		}
		if recursive && te.Mode.IsDir() {
			if err := r.walk(ctx, te.OID, p, true, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// TreeView is a read-only view of one tree: the base a session's overlay
// resolves against. It is a value and safe for concurrent use.
type TreeView struct {
	repo *Repo
	root OID
}

// View returns a view of tree root.
func (r *Repo) View(root OID) *TreeView { return &TreeView{repo: r, root: root} }

// Root returns the tree id the view shows.
func (v *TreeView) Root() OID { return v.root }

// Lookup returns the entry at path ("" is the root).
func (v *TreeView) Lookup(ctx context.Context, path string) (Entry, error) {
	return v.repo.Lookup(ctx, v.root, path)
}

// List lists entries under the directory prefix; see Repo.List.
func (v *TreeView) List(ctx context.Context, prefix string, recursive bool, fn func(Entry) error) error {
	return v.repo.List(ctx, v.root, prefix, recursive, fn)
}

// ReadBlob returns the content of blob id.
func (v *TreeView) ReadBlob(ctx context.Context, id OID) ([]byte, error) {
	return v.repo.ReadBlob(ctx, id)
}

// ReadBlobRange returns part of blob id; see Repo.ReadBlobRange.
func (v *TreeView) ReadBlobRange(ctx context.Context, id OID, off, n int64) ([]byte, error) {
	return v.repo.ReadBlobRange(ctx, id, off, n)
}

// BlobSize returns the size of blob id.
func (v *TreeView) BlobSize(ctx context.Context, id OID) (int64, error) {
	return v.repo.BlobSize(ctx, id)
}
