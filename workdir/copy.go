package workdir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/overlay"
)

// copyLayer is the view as a full directory of its own, kept between
// commands, for where overlayfs is not available. Its stat cache covers
// every file of the view, as git's index covers a work tree, so capture
// hashes only files whose stat changed (or that are racy).
//
// It reaches its directory only beneath an os.Root of it (beneath.go):
// services change the view while the layer syncs and captures. It
// assumes nothing of the directory's parent, so it can edit any
// directory that way.
type copyLayer struct {
	// dir is the view's directory.
	dir   string
	cache map[string]statEntry
	// env is the environment layer's tree copied into the view when it
	// is rebuilt ("": none).
	env string
}

// newCopyLayer is the layer whose view is the directory dir (made on
// first use).
func newCopyLayer(dir, env string) *copyLayer {
	return &copyLayer{dir: dir, cache: map[string]statEntry{}, env: env}
}

func (l *copyLayer) present() presentation                { return presentation{Src: l.dir} }
func (l *copyLayer) cacheState() map[string]statEntry     { return l.cache }
func (l *copyLayer) setCacheState(c map[string]statEntry) { l.cache = c }

func (l *copyLayer) reset(ctx context.Context, v View) error {
	t, err := openLayerRoot(l.dir)
	if err != nil {
		return err
	}
	defer t.close()
	return l.resetIn(ctx, t, v)
}

func (l *copyLayer) resetIn(ctx context.Context, t rootTree, v View) error {
	if err := t.clear(); err != nil {
		return err
	}
	clear(l.cache)
	if err := l.write(ctx, t, v, ""); err != nil {
		return err
	}
	return l.stackEnv(t)
}

// stackEnv copies the environment layer into the view, below what the
// view holds (a path of the view wins). Its include files enter the stat
// cache, so capture reports them only once a command changed them (the
// rest of the layer is ignored by construction); a copy keeps the layer's
// modification time, older than any command, so they are not racy.
func (l *copyLayer) stackEnv(t rootTree) error {
	if l.env == "" {
		return nil
	}
	if err := copyTree(l.env, t, nil); err != nil {
		return fmt.Errorf("environment layer: %w", err)
	}
	seen := time.Now().UnixNano()
	for _, p := range includePaths(l.env) {
		d, err := t.dir(parentOf(p), false)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		var data []byte
		if err = d.lstat(baseOf(p), &st); err == nil {
			data, err = d.readFile(baseOf(p))
		}
		d.close()
		if err != nil {
			continue
		}
		e := statEntryOf(&st, seen)
		e.Git, e.OID, e.Layer = gitModeOf(&st), gitstore.HashObject(gitstore.KindBlob, data), true
		l.cache[p] = e
	}
	return nil
}

// write checks the view's subtree at r out below the root (r "" for all),
// without what the view hides.
func (l *copyLayer) write(ctx context.Context, t rootTree, v View, r string) error {
	var entries []gitstore.Entry
	n, ok, err := viewNode(ctx, v, r)
	if err != nil || !ok {
		return err
	}
	hidden, err := hiddenRoots(ctx, v, r)
	if err != nil {
		return err
	}
	hide := newPathSet(hidden)
	if hide.covers(r) {
		return nil
	}
	if !n.IsDir() {
		entries = append(entries, gitstore.Entry{Path: n.Path, Mode: n.Mode, OID: n.OID})
	} else {
		err := v.Overlay.List(ctx, overlay.ListOptions{Prefix: r, Recursive: true}, func(n overlay.Node) error {
			if hide.covers(n.Path) {
				return nil
			}
			entries = append(entries, gitstore.Entry{Path: n.Path, Mode: n.Mode, OID: n.OID})
			return nil
		})
		if err != nil {
			return err
		}
	}
	if r != "" {
		if err := ensureDirs(t, r); err != nil {
			return err
		}
	}
	var mu sync.Mutex
	_, err = writeEntries(ctx, v.Repo, t, entries, func(e gitstore.Entry, st *unix.Stat_t) {
		// Written just now: racy until the clock moves past it.
		se := statEntryOf(st, time.Now().UnixNano())
		se.Git, se.OID = e.Mode, e.OID
		mu.Lock()
		l.cache[e.Path] = se
		mu.Unlock()
	})
	return err
}

func (l *copyLayer) sync(ctx context.Context, v View, paths []string) error {
	t, err := openLayerRoot(l.dir)
	if err != nil {
		return err
	}
	defer t.close()
	for _, r := range roots(paths) {
		if r == "" {
			return l.resetIn(ctx, t, v)
		}
		if err := t.removeAll(r); err != nil {
			return err
		}
		dropUnder(l.cache, r)
		if err := l.write(ctx, t, v, r); err != nil {
			return err
		}
	}
	pruneDirs(t, paths, nil)
	return nil
}

func (l *copyLayer) capture(ctx context.Context, v View, since, maxFile int64) ([]Change, error) {
	t, err := openLayerRoot(l.dir)
	if err != nil {
		return nil, err
	}
	defer t.close()
	ig := newIgnorer(func(dir string) []byte { return readIgnoreFile(t, dir) })
	top, err := t.dir("", false)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(l.cache))
	var out []Change
	err = l.walk(ctx, v, ig, top, "", since, maxFile, seen, &out)
	top.close()
	if err != nil {
		return nil, err
	}
	var gone []string
	for p := range l.cache {
		if !seen[p] {
			gone = append(gone, p)
		}
	}
	sort.Strings(gone)
	for _, p := range gone {
		delete(l.cache, p)
		ds, err := deletions(ctx, v, p)
		if err != nil {
			return nil, err
		}
		out = append(out, ds...)
	}
	return dedupe(out), nil
}

// walk captures the directory dir of the view, open as d.
func (l *copyLayer) walk(ctx context.Context, v View, ig *ignorer, d *dirAt, dir string, since, maxFile int64, seen map[string]bool, out *[]Change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	names, err := d.names()
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if dir == "" && name == ".git" {
			continue // the view's .git, never part of a capture
		}
		p := join(dir, name)
		now := time.Now().UnixNano()
		var st unix.Stat_t
		if err := d.lstat(name, &st); errors.Is(err, fs.ErrNotExist) {
			continue // gone since the listing (a service's)
		} else if err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			// A directory where the view has a file: the file is never
			// marked seen, so it comes back as deleted.
			if ig.match(p, true) {
				if _, inView, err := viewNode(ctx, v, p); err != nil {
					return err
				} else if !inView {
					continue
				}
			}
			sub, err := d.sub(name)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return err
			}
			err = l.walk(ctx, v, ig, sub, p, since, maxFile, seen, out)
			sub.close()
			if err != nil {
				return err
			}
			continue
		}
		_, tracked := l.cache[p]
		if tracked {
			seen[p] = true
		} else if ig.match(p, false) {
			if _, inView, err := viewNode(ctx, v, p); err != nil {
				return err
			} else if !inView {
				continue
			}
		}
		c, changed, gone, err := examineLive(ctx, v, p, d, name, &st, now, since, l.cache, maxFile)
		if err != nil {
			return err
		}
		if gone {
			delete(seen, p) // gone since the listing: a deletion, if tracked
			continue
		}
		if changed {
			seen[p] = true
			*out = append(*out, c)
		}
	}
	return nil
}
