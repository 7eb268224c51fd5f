package overlay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/sessiond/sessiond/gitstore"
)

// The caseCollision rule asks, for each new name, whether a sibling in
// the merged view has the same folded form. Listing the directory for
// that made a batch of n new files in one directory cost n² (and 100,000
// of them a quarter of an hour); instead two indexes by (directory,
// folded name) give the few siblings that may collide, and Stat says
// which of them the merged view has:
//
//   - kids, in the overlay, names every child that a live entry has
//     given a directory (the entry itself, or the directory on its way
//     down). It only grows: a name stays when its entries go, so it is a
//     superset, and Stat drops what is no longer there.
//   - the base's children of a directory, folded once when the rule
//     first looks at that directory, in a cache the overlay's clones
//     share (the base never changes). The same cache counts them, for
//     collapseUp's question whether a directory still shows one.
//
// So a put costs a fold and a map lookup per level of its path, plus one
// listing of a base directory the first time a name is created in it.

// kidKey names the children of dir whose names fold to fold.
type kidKey struct{ dir, fold string }

// addKids records, for each directory on the way to live entry path p,
// the child that leads to p.
func (o *Overlay) addKids(p string) {
	dir := ""
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		child := p[:i]
		k := kidKey{dir, foldName(baseName(child))}
		if names := o.kids[k]; !slices.Contains(names, child) {
			// Clip so that a clone sharing the slice never sees the append.
			o.kids[k] = append(slices.Clip(names), child)
		}
		dir = child
	}
}

// foldCache holds, per directory of one base, its children: how many,
// and by folded name. It is shared by an overlay and its clones, which
// may be used from different goroutines: mu guards dirs.
type foldCache struct {
	mu   sync.Mutex
	dirs map[string]*baseDir
}

// baseDir is a base directory's children, as foldCache keeps them.
type baseDir struct {
	n      int
	byFold map[string][]string
}

// baseDir returns the base's children of directory dir (none when the
// base has no directory there), listing and folding them the first
// time.
func (o *Overlay) baseDir(ctx context.Context, dir string) (*baseDir, error) {
	c := o.folds
	c.mu.Lock()
	bd, ok := c.dirs[dir]
	c.mu.Unlock()
	if ok {
		return bd, nil
	}
	bd = &baseDir{byFold: map[string][]string{}}
	raw, found, err := o.rawBase(ctx, dir)
	if err != nil {
		return nil, err
	}
	if dir == "" || found && raw.Mode.IsDir() {
		err := o.base.List(ctx, dir, false, func(e gitstore.Entry) error {
			if bd.n++; bd.n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			f := foldName(baseName(e.Path))
			bd.byFold[f] = append(bd.byFold[f], e.Path)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list %q: %w", dir, err)
		}
	}
	c.mu.Lock()
	c.dirs[dir] = bd
	c.mu.Unlock()
	return bd, nil
}

// checkCase rejects creating name (a path whose parent exists in the
// merged view) when a sibling differs from it only in case or
// normalization; the error names the first such sibling in git order, as
// a listing of the directory would meet it.
func (o *Overlay) checkCase(ctx context.Context, p, name string) error {
	dir, want := parentDir(name), foldName(baseName(name))
	bd, err := o.baseDir(ctx, dir)
	if err != nil {
		return fmt.Errorf("case check of %q: %w", p, err)
	}
	other, otherKey := "", ""
	for _, c := range append(slices.Clip(bd.byFold[want]), o.kids[kidKey{dir, want}]...) {
		n, err := o.Stat(ctx, c)
		switch {
		case errors.Is(err, ErrNotFound):
			continue
		case err != nil:
			return fmt.Errorf("case check of %q: %w", p, err)
		}
		if k := gitKey(c, n.Mode); other == "" || k < otherKey {
			other, otherKey = c, k
		}
	}
	if other != "" {
		return pathErr(RuleCaseCollision, p, "%q differs from existing %q only in case or Unicode normalization", name, other)
	}
	return nil
}
