package gitstore

import (
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
func (b *Batch) BuildTree(ctx context.Context, base OID, changes []Change) (OID, error) {
	root := &buildNode{}
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
		n := root
		for _, name := range strings.Split(c.Path, "/") {
			if n.children == nil {
				n.children = make(map[string]*buildNode)
			}
			child := n.children[name]
			if child == nil {
				child = &buildNode{}
				n.children[name] = child
			}
			n = child
		}
		if n.change != nil {
			return OID{}, fmt.Errorf("build tree: %q changed twice", c.Path)
		}
		n.change = c
	}
	id, _, err := b.buildDir(ctx, base, root, "")
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

type buildNode struct {
	change   *Change // the change at exactly this path, if any
	children map[string]*buildNode
}

// buildDir applies node's changes to directory dir (zero: none yet) and
// returns the new tree id, zero when it ends up empty, and whether anything
// differs from dir.
func (b *Batch) buildDir(ctx context.Context, dir OID, node *buildNode, path string) (OID, bool, error) {
	if err := ctx.Err(); err != nil {
		return OID{}, false, err
	}
	var entries []TreeEntry
	if !dir.IsZero() {
		t, err := b.r.Tree(ctx, dir)
		if err != nil {
			return OID{}, false, fmt.Errorf("build tree at %q: %w", path, err)
		}
		entries = slices.Clone(t.Entries)
	}
	index := make(map[string]int, len(node.children))
	for _, name := range sortedKeys(node.children) {
		index[name] = -1
	}
	for i, e := range entries {
		if _, ok := index[e.Name]; ok {
			index[e.Name] = i
		}
	}
	changed := false
	var added []TreeEntry
	removed := make(map[int]bool)
	for _, name := range sortedKeys(node.children) {
		child := node.children[name]
		childPath := name
		if path != "" {
			childPath = path + "/" + name
		}
		i := index[name]
		var cur *TreeEntry
		if i >= 0 {
			cur = &entries[i]
		}
		// set replaces (or removes) the entry for name.
		set := func(e *TreeEntry) {
			switch {
			case e == nil && cur != nil:
				removed[i] = true
				changed = true
			case e != nil && cur == nil:
				added = append(added, *e)
				changed = true
			case e != nil && *e != *cur:
				entries[i] = *e
				changed = true
			}
		}
		c := child.change
		switch {
		case c != nil && !c.Delete:
			if len(child.children) > 0 {
				return OID{}, false, fmt.Errorf("build tree: %q is written as a file and has changes below it: %w", childPath, ErrCollision)
			}
			set(&TreeEntry{Name: name, Mode: c.Mode.Canonical(), OID: c.OID})
		default:
			// A delete, or only changes below: the subdirectory starts
			// from what is there unless it was deleted.
			var sub OID
			if c == nil && cur != nil {
				if !cur.Mode.IsDir() {
					return OID{}, false, fmt.Errorf("build tree: %q is a file: %w", childPath, ErrCollision)
				}
				sub = cur.OID
			}
			if len(child.children) == 0 {
				set(nil)
				continue
			}
			id, subChanged, err := b.buildDir(ctx, sub, child, childPath)
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
	if !changed {
		return dir, false, nil
	}
	out := make([]TreeEntry, 0, len(entries)+len(added))
	for i, e := range entries {
		if !removed[i] {
			out = append(out, e)
		}
	}
	out = append(out, added...)
	if len(out) == 0 {
		return OID{}, true, nil
	}
	SortEntries(out)
	id := b.Add(KindTree, EncodeTree(out))
	b.built[id] = &Tree{OID: id, Entries: out}
	return id, true, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
