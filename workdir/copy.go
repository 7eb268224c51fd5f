package workdir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
type copyLayer struct {
	root  string
	cache map[string]statEntry
	// env is the environment layer's tree copied into the view when it
	// is rebuilt ("": none).
	env string
}

func newCopyLayer(dir, env string) *copyLayer {
	return &copyLayer{root: filepath.Join(dir, "view"), cache: map[string]statEntry{}, env: env}
}

func (l *copyLayer) present() presentation                { return presentation{Src: l.root} }
func (l *copyLayer) cacheState() map[string]statEntry     { return l.cache }
func (l *copyLayer) setCacheState(c map[string]statEntry) { l.cache = c }

func (l *copyLayer) reset(ctx context.Context, v View) error {
	if err := removeAll(l.root); err != nil {
		return err
	}
	if err := os.MkdirAll(l.root, 0o755); err != nil {
		return err
	}
	clear(l.cache)
	if err := l.write(ctx, v, ""); err != nil {
		return err
	}
	return l.stackEnv()
}

// stackEnv copies the environment layer into the view, below what the
// view holds (a path of the view wins). Its include files enter the stat
// cache, so capture reports them only once a command changed them (the
// rest of the layer is ignored by construction); a copy keeps the layer's
// modification time, older than any command, so they are not racy.
func (l *copyLayer) stackEnv() error {
	if l.env == "" {
		return nil
	}
	if err := copyTree(l.env, l.root, nil); err != nil {
		return fmt.Errorf("environment layer: %w", err)
	}
	seen := time.Now().UnixNano()
	for _, p := range includePaths(l.env) {
		var st unix.Stat_t
		if unix.Lstat(filepath.Join(l.root, p), &st) != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(l.root, p))
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
func (l *copyLayer) write(ctx context.Context, v View, r string) error {
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
		if err := ensureDirs(l.root, r); err != nil {
			return err
		}
	}
	var mu sync.Mutex
	_, err = writeEntries(ctx, v.Repo, l.root, entries, func(e gitstore.Entry, full string) {
		var st unix.Stat_t
		if unix.Lstat(full, &st) != nil {
			return
		}
		// Written just now: racy until the clock moves past it.
		se := statEntryOf(&st, time.Now().UnixNano())
		se.Git, se.OID = e.Mode, e.OID
		mu.Lock()
		l.cache[e.Path] = se
		mu.Unlock()
	})
	return err
}

func (l *copyLayer) sync(ctx context.Context, v View, paths []string) error {
	for _, r := range roots(paths) {
		if r == "" {
			return l.reset(ctx, v)
		}
		if err := removeAll(filepath.Join(l.root, r)); err != nil {
			return err
		}
		dropUnder(l.cache, r)
		if err := l.write(ctx, v, r); err != nil {
			return err
		}
	}
	pruneDirs(l.root, paths, nil)
	return nil
}

func (l *copyLayer) capture(ctx context.Context, v View, since, maxFile int64) ([]Change, error) {
	ig := newIgnorer(func(dir string) []byte { return readIgnoreFile(filepath.Join(l.root, dir, ".gitignore")) })
	seen := make(map[string]bool, len(l.cache))
	var out []Change
	if err := l.walk(ctx, v, ig, "", since, maxFile, seen, &out); err != nil {
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

func (l *copyLayer) walk(ctx context.Context, v View, ig *ignorer, dir string, since, maxFile int64, seen map[string]bool, out *[]Change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	full := filepath.Join(l.root, dir)
	f, err := os.Open(full)
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if dir == "" && name == ".git" {
			continue // the view's .git, never part of a capture
		}
		p := join(dir, name)
		fp := filepath.Join(full, name)
		now := time.Now().UnixNano()
		var st unix.Stat_t
		if err := unix.Lstat(fp, &st); err != nil {
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
			if err := l.walk(ctx, v, ig, p, since, maxFile, seen, out); err != nil {
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
		c, changed, err := examine(ctx, v, p, fp, &st, now, since, l.cache, maxFile)
		if err != nil {
			return err
		}
		if changed {
			seen[p] = true
			*out = append(*out, c)
		}
	}
	return nil
}
