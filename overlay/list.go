package overlay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sessiond/sessiond/gitstore"
)

// ListOptions select what List reports.
type ListOptions struct {
	// Prefix is the directory to list ("" is the root). The filter is
	// applied to both sides before they are merged.
	Prefix string
	// Recursive lists the whole subtree, directories before their
	// children; otherwise one level.
	Recursive bool
	// OnlyModified lists only what the overlay changes: added, modified
	// and deleted nodes (deletions included), and the directories that
	// contain them.
	OnlyModified bool
	// IncludeDeleted also reports deleted paths in a full listing. A
	// recursive listing reports a deleted directory and every file and
	// directory it hid; one level reports the deleted directory alone.
	IncludeDeleted bool
}

// List calls fn for each node under opts.Prefix in the merged view, in git
// order (a directory sorts as "name/" and comes before its children). It
// is a merge of two sorted streams, the base listing and the overlay's
// entries; each node carries its status relative to the base. An error
// from fn stops the listing and is returned as is.
func (o *Overlay) List(ctx context.Context, opts ListOptions, fn func(Node) error) error {
	prefix := opts.Prefix
	withDeleted := opts.IncludeDeleted || opts.OnlyModified
	if prefix != "" {
		if err := o.CheckExisting(ctx, prefix); err != nil {
			return err
		}
		n, err := o.Stat(ctx, prefix)
		if errors.Is(err, ErrNotFound) && opts.OnlyModified {
			return nil // a deleted directory is reported by its parent's listing
		}
		if err != nil {
			return err
		}
		if !n.IsDir() {
			return fmt.Errorf("list %q: %w", prefix, ErrNotDir)
		}
	}
	if len(o.entries) == 0 {
		if opts.OnlyModified {
			return nil
		}
		return o.base.List(ctx, prefix, opts.Recursive, func(b gitstore.Entry) error {
			return fn(Node{Path: b.Path, Mode: b.Mode, OID: b.OID, Status: Unchanged})
		})
	}

	ov, err := o.overlayNodes(ctx, prefix, opts.Recursive)
	if err != nil {
		return err
	}
	emit := func(n Node) error {
		if (n.Status == Deleted && !withDeleted) || (opts.OnlyModified && n.Status == Unchanged) {
			return nil
		}
		return fn(n)
	}
	i := 0
	baseDir := prefix == ""
	if !baseDir {
		raw, found, err := o.rawBase(ctx, prefix)
		if err != nil {
			return err
		}
		baseDir = found && raw.Mode.IsDir()
	}
	if baseDir && (withDeleted || !o.hidesBase(prefix)) {
		err := o.base.List(ctx, prefix, opts.Recursive, func(b gitstore.Entry) error {
			k := gitKey(b.Path, b.Mode)
			for ; i < len(ov) && ov[i].key < k; i++ {
				if err := emit(ov[i].node); err != nil {
					return err
				}
			}
			if i < len(ov) && ov[i].key == k {
				i++
				return emit(ov[i-1].node)
			}
			if n, ok := o.classify(b, withDeleted); ok {
				return emit(n)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for ; i < len(ov); i++ {
		if err := emit(ov[i].node); err != nil {
			return err
		}
	}
	return nil
}

// hidesBase reports whether an entry at or above p hides the base's p.
func (o *Overlay) hidesBase(p string) bool {
	if _, ok := o.entries[p]; ok {
		return true
	}
	_, _, ok := o.ancestorEntry(p)
	return ok
}

// classify gives the node for base entry b that no overlay node replaces.
// ok is false when b is not reported: hidden and deletions not wanted, or
// its path holds something else now (a file where b was a directory, a
// directory where b was a file), which is what the listing reports, so
// that a path appears once. A recursive listing reports every base entry
// a deletion hid, files included, whether or not its directory still
// exists; one level reports the hidden entries at that level.
func (o *Overlay) classify(b gitstore.Entry, withDeleted bool) (Node, bool) {
	e, atP := o.entries[b.Path]
	_, _, underEntry := o.ancestorEntry(b.Path)
	if !atP && !underEntry {
		if b.Mode.IsDir() && o.below[b.Path] > 0 {
			return Node{Path: b.Path, Mode: gitstore.ModeDir, Status: Modified}, true
		}
		return Node{Path: b.Path, Mode: b.Mode, OID: b.OID, Status: Unchanged}, true
	}
	if !withDeleted || atP && e.Status != Deleted || o.live[b.Path] > 0 {
		return Node{}, false
	}
	return Node{Path: b.Path, Mode: b.Mode, OID: b.OID, Status: Deleted}, true
}

type keyedNode struct {
	key  string
	node Node
}

// overlayNodes is the overlay side of a listing: its entries under prefix
// and the directories that hold added or modified entries, sorted in git
// order.
func (o *Overlay) overlayNodes(ctx context.Context, prefix string, recursive bool) ([]keyedNode, error) {
	var out []keyedNode
	var dirs []string
	seen := map[string]bool{}
	start := 0
	if prefix != "" {
		start = len(prefix) + 1
	}
	ks := o.keys()
	lo, hi := o.keyRange(prefix)
	for i := lo; i < hi; i++ {
		p := strings.TrimSuffix(ks[i], "/")
		if p == prefix {
			continue
		}
		e := o.entries[p]
		rel := p[start:]
		if slash := strings.IndexByte(rel, '/'); slash >= 0 && !recursive {
			// One level: the child directory stands for everything below
			// it; skip to the end of its keys.
			d := p[:start+slash]
			if o.live[d] > 0 && !seen[d] {
				seen[d] = true
				dirs = append(dirs, d)
			}
			j, _ := slices.BinarySearch(ks, d+"0")
			i = j - 1
			continue
		}
		if e.Status != Deleted {
			for j := 0; j < len(rel); j++ {
				if rel[j] == '/' {
					if d := p[:start+j]; !seen[d] {
						seen[d] = true
						dirs = append(dirs, d)
					}
				}
			}
			out = append(out, keyedNode{ks[i], Node{Path: p, Mode: e.Mode, OID: e.OID, Status: e.Status}})
			continue
		}
		if o.live[p] == 0 {
			// A path recreated as a directory is reported as that
			// directory, through its children.
			out = append(out, keyedNode{ks[i], Node{Path: p, Mode: e.Mode, OID: e.OID, Status: Deleted}})
		} else if !recursive && !seen[p] {
			seen[p] = true
			dirs = append(dirs, p)
		}
	}
	for _, d := range dirs {
		n, err := o.Stat(ctx, d)
		if err != nil {
			return nil, err
		}
		out = append(out, keyedNode{d + "/", n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out, nil
}
