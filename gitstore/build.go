package gitstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// BuildTree writes the tree that results from applying changes to the
// tree base (ZeroOID for an empty tree) and returns its id. Only the
// directories on changed paths are re-encoded; every other subtree keeps
// its id. New trees are queued in the batch; nothing is durable until
// Flush.
//
// Rules: paths are slash-separated with no empty components; each path
// appears once; a put at P together with a change below P, or a change
// below a path that is a file and is neither deleted nor replaced, fails
// with ErrCollision; modes are canonicalized and must be a blob mode, a
// gitlink, or ModeDir to put a whole subtree by its tree id (which the
// caller vouches for: it may be queued in the same batch). A directory
// left empty disappears, as in git.
//
// Changes may come in any order; sorted component by component (a
// directory's paths right after its name, as a walk of trees yields
// them), they are used as they are.
func (b *Batch) BuildTree(ctx context.Context, base OID, changes []Change) (OID, error) {
	for i := range changes {
		c := &changes[i]
		if c.Path == "" || strings.HasPrefix(c.Path, "/") || strings.HasSuffix(c.Path, "/") || strings.Contains(c.Path, "//") {
			return OID{}, fmt.Errorf("build tree: bad path %q", c.Path)
		}
		if !c.Delete {
			m := c.Mode.Canonical()
			if !m.IsBlob() && m != ModeGitlink && m != ModeDir {
				return OID{}, fmt.Errorf("build tree: %q: %w %s", c.Path, ErrInvalidMode, c.Mode)
			}
			if c.OID.IsZero() {
				return OID{}, fmt.Errorf("build tree: %q: no object id", c.Path)
			}
		}
	}
	byPath := func(a, b Change) int { return comparePaths(a.Path, b.Path) }
	if !slices.IsSortedFunc(changes, byPath) {
		changes = slices.Clone(changes)
		slices.SortFunc(changes, byPath)
	}
	for i := 1; i < len(changes); i++ {
		if changes[i].Path == changes[i-1].Path {
			return OID{}, fmt.Errorf("build tree: %q changed twice", changes[i].Path)
		}
	}
	id, _, err := b.buildDir(ctx, base, changes, "")
	if err != nil {
		return OID{}, err
	}
	if id.IsZero() { // everything deleted: git's empty tree
		id = b.Add(KindTree, nil)
	}
	return id, nil
}

// BuildTree is Batch.BuildTree followed by a durable Flush.
func (r *Repo) BuildTree(ctx context.Context, base OID, changes []Change) (OID, error) {
	b := r.NewBatch()
	id, err := b.BuildTree(ctx, base, changes)
	if err != nil {
		return OID{}, err
	}
	return id, b.Flush(ctx)
}

// comparePaths orders slash-separated paths component by component: a
// directory's paths follow its name directly ("a", "a/x", "a-b"), unlike
// plain string order, where "a-b" sorts before "a/x".
func comparePaths(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	switch {
	case i == n:
		return cmp.Compare(len(a), len(b))
	case a[i] == '/':
		return -1
	case b[i] == '/':
		return 1
	}
	return cmp.Compare(a[i], b[i])
}

// buildDir applies changes, in comparePaths order, to directory dir (zero:
// none yet) at path, each change's path relative to dir starting at
// len(path)+1 (at 0 for the root). It returns the new tree id, zero when
// the directory ends up empty, and whether anything differs from dir.
func (b *Batch) buildDir(ctx context.Context, dir OID, changes []Change, path string) (OID, bool, error) {
	if err := ctx.Err(); err != nil {
		return OID{}, false, err
	}
	var t *Tree
	if !dir.IsZero() {
		var err error
		if t, err = b.r.Tree(ctx, dir); err != nil {
			return OID{}, false, fmt.Errorf("build tree at %q: %w", path, err)
		}
	} else {
		t = &Tree{}
	}
	off := 0
	if path != "" {
		off = len(path) + 1
	}
	var out []TreeEntry // t's entries once one changes; removed ones have no name
	resort := false     // an entry was added, or changed between file and directory
	removed := false
	for len(changes) > 0 {
		// The changes at and below the next name.
		name, _, _ := strings.Cut(changes[0].Path[off:], "/")
		childPath := changes[0].Path[:off+len(name)]
		k := 1
		for k < len(changes) && inDir(changes[k].Path, childPath) {
			k++
		}
		below := changes[:k]
		changes = changes[k:]
		var c *Change
		if below[0].Path == childPath {
			c = &below[0]
			below = below[1:]
		}

		i := t.index(name)
		var cur *TreeEntry
		if i >= 0 {
			cur = &t.Entries[i]
		}
		// set replaces (or removes, e == nil) the entry for name.
		set := func(e *TreeEntry) {
			if e == nil && cur == nil || e != nil && cur != nil && *e == *cur {
				return
			}
			if out == nil {
				out = slices.Clone(t.Entries)
			}
			switch {
			case e == nil:
				out[i].Name = ""
				removed = true
			case cur == nil:
				out = append(out, *e)
				resort = true
			default:
				resort = resort || e.Mode.IsDir() != cur.Mode.IsDir()
				out[i] = *e
			}
		}
		switch {
		case c != nil && !c.Delete:
			if len(below) > 0 {
				return OID{}, false, fmt.Errorf("build tree: %q is written as a file and has changes below it: %w", childPath, ErrCollision)
			}
			set(&TreeEntry{Name: name, Mode: c.Mode.Canonical(), OID: c.OID})
		case len(below) == 0: // a delete
			set(nil)
		default:
			// Changes below, after a delete or not: the subdirectory
			// starts from what is there unless it was deleted.
			var sub OID
			if c == nil && cur != nil {
				if !cur.Mode.IsDir() {
					return OID{}, false, fmt.Errorf("build tree: %q is a file: %w", childPath, ErrCollision)
				}
				sub = cur.OID
			}
			id, subChanged, err := b.buildDir(ctx, sub, below, childPath)
			if err != nil {
				return OID{}, false, err
			}
			if id.IsZero() {
				set(nil)
			} else if subChanged || c != nil {
				set(&TreeEntry{Name: name, Mode: ModeDir, OID: id})
			}
		}
	}
	if out == nil {
		return dir, false, nil
	}
	if removed {
		out = slices.DeleteFunc(out, func(e TreeEntry) bool { return e.Name == "" })
	}
	if len(out) == 0 {
		return OID{}, true, nil
	}
	if resort {
		SortEntries(out)
	}
	return b.addTree(out), true, nil
}

// inDir reports whether path p is below directory dir.
func inDir(p, dir string) bool {
	return len(p) > len(dir) && p[len(dir)] == '/' && p[:len(dir)] == dir
}
