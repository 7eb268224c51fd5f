package gitstore

import (
	"context"
	"fmt"
)

// TreeChange is one difference between two trees at a blob (or gitlink)
// path: From is the zero Entry for an addition, To for a deletion. A path
// whose type changes between file and directory shows as a deletion of the
// one and additions (or deletions) of the other.
type TreeChange struct {
	Path string
	From Entry
	To   Entry
}

// DiffTrees calls fn for every blob or gitlink path that differs between
// trees a and b (ZeroOID is the empty tree), in git order. Subtrees with
// equal ids are skipped without being read, so the cost is proportional to
// what changed, not to the size of the trees. fn's error stops the walk.
func (r *Repo) DiffTrees(ctx context.Context, a, b OID, fn func(TreeChange) error) error {
	return r.diffDir(ctx, a, b, "", fn)
}

func (r *Repo) entries(ctx context.Context, id OID) ([]TreeEntry, error) {
	if id.IsZero() {
		return nil, nil
	}
	t, err := r.Tree(ctx, id)
	if err != nil {
		return nil, err
	}
	return t.Entries, nil
}

func (r *Repo) diffDir(ctx context.Context, a, b OID, dir string, fn func(TreeChange) error) error {
	if a == b {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ea, err := r.entries(ctx, a)
	if err != nil {
		return fmt.Errorf("diff %q: %w", dir, err)
	}
	eb, err := r.entries(ctx, b)
	if err != nil {
		return fmt.Errorf("diff %q: %w", dir, err)
	}
	join := func(name string) string {
		if dir == "" {
			return name
		}
		return dir + "/" + name
	}
	// side reports one entry present on one side only (or of a different
	// type): a whole subtree is walked against the empty tree.
	side := func(e TreeEntry, isFrom bool) error {
		p := join(e.Name)
		if e.Mode.IsDir() {
			if isFrom {
				return r.diffDir(ctx, e.OID, ZeroOID, p, fn)
			}
			return r.diffDir(ctx, ZeroOID, e.OID, p, fn)
		}
		ent := Entry{Path: p, Mode: e.Mode, OID: e.OID}
		if isFrom {
			return fn(TreeChange{Path: p, From: ent})
		}
		return fn(TreeChange{Path: p, To: ent})
	}
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		var c int
		switch {
		case i == len(ea):
			c = 1
		case j == len(eb):
			c = -1
		default:
			c = compareEntries(ea[i].Name, ea[i].Mode.IsDir(), eb[j].Name, eb[j].Mode.IsDir())
		}
		switch {
		case c < 0:
			if err := side(ea[i], true); err != nil {
				return err
			}
			i++
		case c > 0:
			if err := side(eb[j], false); err != nil {
				return err
			}
			j++
		default:
			x, y := ea[i], eb[j]
			i++
			j++
			if x == y {
				continue
			}
			if x.Mode.IsDir() {
				if err := r.diffDir(ctx, x.OID, y.OID, join(x.Name), fn); err != nil {
					return err
				}
				continue
			}
			p := join(x.Name)
			if err := fn(TreeChange{Path: p, From: Entry{p, x.Mode, x.OID}, To: Entry{p, y.Mode, y.OID}}); err != nil {
				return err
			}
		}
	}
	return nil
}
