package workdir

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/overlay"
)

// opaqueXattr marks an upper directory that hides the lower one (the
// user.* spelling that userxattr mounts use, so no privilege is needed).
const opaqueXattr = "user.overlay.opaque"

// overlayLayer keeps a session's changes in an overlayfs upper directory
// over the shared base checkout. The upper directory holds the overlay's
// entries (files, and whiteouts for deletions), the ignored outputs of
// earlier commands, and nothing else, so walking it costs what the
// session changed, not what the repository holds.
type overlayLayer struct {
	lower, upper, work string
	// env is the environment layer stacked over lower ("": none).
	env string
	// cache holds the stat of upper files whose content is known.
	cache map[string]statEntry
	// shared, when set, is the one mount of the view that services and
	// commands share: edits go through it (share.go).
	shared *viewShare
}

func newOverlayLayer(lower, dir, env string) *overlayLayer {
	return &overlayLayer{lower: lower, env: env, upper: filepath.Join(dir, "upper"), work: filepath.Join(dir, "work"), cache: map[string]statEntry{}}
}

func (l *overlayLayer) present() presentation {
	p := presentation{Overlay: true, Env: l.env, Lower: l.lower, Upper: l.upper, Work: l.work}
	if l.shared != nil {
		p.Attach = l.shared.sock
	}
	return p
}

func (l *overlayLayer) cacheState() map[string]statEntry     { return l.cache }
func (l *overlayLayer) setCacheState(c map[string]statEntry) { l.cache = c }

// reset makes the layer show v alone: through the shared mount while
// services hold it, else by emptying the upper directory (kept itself)
// and spelling v out again.
func (l *overlayLayer) reset(ctx context.Context, v View) error {
	if l.shared != nil {
		return l.resetShared(ctx, v)
	}
	// No service holds the view: the work directory is the daemon's.
	if err := removeAll(l.work); err != nil {
		return err
	}
	if err := os.MkdirAll(l.work, 0o755); err != nil {
		return err
	}
	t, err := openLayerRoot(l.upper)
	if err != nil {
		return err
	}
	defer t.close()
	if err := t.clear(); err != nil {
		return err
	}
	clear(l.cache)
	if v.Readable != nil {
		// The whole view, for the whiteouts over what it hides.
		all := v.Overlay.Entries()
		slices.SortFunc(all, func(a, b overlay.Entry) int { return strings.Compare(a.Path, b.Path) })
		return l.rebuild(ctx, t, v, "", all)
	}
	var paths []string
	for _, e := range v.Overlay.Entries() {
		paths = append(paths, e.Path)
	}
	return l.syncIn(ctx, t, v, paths)
}

// isWhiteout reports whether st is overlayfs's whiteout (a 0/0 character
// device).
func isWhiteout(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

// affected is the subtree to rebuild for a change at p: the shallowest
// ancestor (or p) that the overlay deletes or the upper directory marks
// opaque or whites out, since its whole content is spelled out in the
// upper directory; p otherwise.
func (l *overlayLayer) affected(t rootTree, v View, p string) string {
	d, err := t.dir("", false)
	if err != nil {
		return p
	}
	defer func() { d.close() }()
	parts := strings.Split(p, "/")
	for i := 1; i <= len(parts); i++ {
		a := strings.Join(parts[:i], "/")
		if e, ok := v.Overlay.Get(a); ok && e.Status == overlay.Deleted {
			return a
		}
		var st unix.Stat_t
		if err := d.lstat(parts[i-1], &st); err != nil {
			break
		}
		if isWhiteout(&st) {
			return a
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			break
		}
		sub, err := d.sub(parts[i-1])
		if err != nil {
			break
		}
		d.close()
		d = sub
		if d.opaque() {
			return a
		}
	}
	return p
}

func (l *overlayLayer) sync(ctx context.Context, v View, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	if l.shared != nil {
		return l.syncShared(ctx, v, paths)
	}
	t, err := openLayerRoot(l.upper)
	if err != nil {
		return err
	}
	defer t.close()
	return l.syncIn(ctx, t, v, paths)
}

func (l *overlayLayer) syncIn(ctx context.Context, t rootTree, v View, paths []string) error {
	var rs []string
	for _, p := range paths {
		rs = append(rs, l.affected(t, v, p))
	}
	rs = roots(rs)
	all := v.Overlay.Entries()
	slices.SortFunc(all, func(a, b overlay.Entry) int { return strings.Compare(a.Path, b.Path) })
	for _, r := range rs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := l.rebuild(ctx, t, v, r, under(all, r)); err != nil {
			return err
		}
	}
	// An upper directory that hides a lower one stays: removing it
	// would show the base's.
	pruneDirs(t, paths, func(d string) bool {
		_, err := os.Lstat(filepath.Join(l.lower, d))
		return err == nil
	})
	return nil
}

// under returns the entries (sorted by path) at or below r.
func under(all []overlay.Entry, r string) []overlay.Entry {
	if r == "" {
		return all
	}
	i, _ := slices.BinarySearchFunc(all, r, func(e overlay.Entry, t string) int { return strings.Compare(e.Path, t) })
	j := i
	for j < len(all) && (all[j].Path == r || strings.HasPrefix(all[j].Path, r+"/")) {
		j++
	}
	return all[i:j]
}

// rebuild spells out the overlay's entries at or below r in the upper
// directory, replacing whatever was there, and whites out what the view
// hides there.
func (l *overlayLayer) rebuild(ctx context.Context, t rootTree, v View, r string, ents []overlay.Entry) error {
	if r != "" {
		if err := t.removeAll(r); err != nil {
			return err
		}
	}
	dropUnder(l.cache, r)
	hidden, err := hiddenRoots(ctx, v, r)
	if err != nil {
		return err
	}
	hide := newPathSet(hidden)
	// in runs fn on p's parent directory, made a directory first.
	in := func(p string, fn func(d *dirAt, name string) error) error {
		if err := ensureDirs(t, p); err != nil {
			return err
		}
		d, err := t.dir(parentOf(p), false)
		if err != nil {
			return err
		}
		defer d.close()
		return fn(d, baseOf(p))
	}
	var files []gitstore.Entry
	for i, e := range ents {
		if hide.covers(e.Path) {
			continue
		}
		if e.Status != overlay.Deleted {
			files = append(files, gitstore.Entry{Path: e.Path, Mode: e.Mode, OID: e.OID})
			continue
		}
		err := in(e.Path, func(d *dirAt, name string) error {
			if i+1 < len(ents) && strings.HasPrefix(ents[i+1].Path, e.Path+"/") {
				// Something new below a deleted directory: an opaque
				// directory hides the base's content.
				if err := d.mkdir(name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
					return err
				}
				sub, err := d.sub(name)
				if err != nil {
					return err
				}
				defer sub.close()
				return sub.setOpaque()
			}
			return d.whiteout(name)
		})
		if err != nil {
			return err
		}
	}
	for _, f := range files {
		seen := time.Now().UnixNano()
		var st unix.Stat_t
		err := in(f.Path, func(d *dirAt, _ string) error {
			_, err := writeEntry(ctx, v.Repo, d, f, &st)
			return err
		})
		if err != nil {
			return err
		}
		e := statEntryOf(&st, seen)
		e.Git, e.OID = f.Mode, f.OID
		l.cache[f.Path] = e
	}
	for _, h := range hidden {
		err := in(h, func(d *dirAt, name string) error {
			if err := t.removeAll(h); err != nil {
				return err
			}
			return d.whiteout(name)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (l *overlayLayer) capture(ctx context.Context, v View, since, maxFile int64) ([]Change, error) {
	t, err := openLayerRoot(l.upper)
	if err != nil {
		return nil, err
	}
	defer t.close()
	ig := newIgnorer(func(dir string) []byte {
		if d, err := t.dir(dir, false); err == nil {
			defer d.close()
			var st unix.Stat_t
			if err := d.lstat(".gitignore", &st); err == nil {
				if isWhiteout(&st) {
					return nil
				}
				b, _ := d.readFile(".gitignore")
				return b
			}
			if dir != "" && d.opaque() {
				return nil
			}
		}
		return readIgnoreFile(hostTree(l.lower), dir)
	})
	top, err := t.dir("", false)
	if err != nil {
		return nil, err
	}
	var out []Change
	seen := map[string]bool{}
	err = l.walk(ctx, v, ig, top, "", false, since, maxFile, seen, &out)
	top.close()
	if err != nil {
		return nil, err
	}
	// A file the upper directory held (the overlay's, or a copied-up one)
	// and no longer does: overlayfs removes an upper-only file without a
	// whiteout, and the base's version may show again.
	for p := range l.cache {
		if seen[p] {
			continue
		}
		gone, lowerShows := l.merged(t, p)
		switch {
		case gone:
			ds, err := deletions(ctx, v, p)
			if err != nil {
				return nil, err
			}
			out = append(out, ds...)
		case lowerShows:
			c, changed, err := l.examineLower(ctx, v, p, since, maxFile)
			if err != nil {
				return nil, err
			}
			if changed {
				out = append(out, c)
			}
		}
		delete(l.cache, p)
	}
	return dedupe(out), nil
}

// examineLower examines the base's file at p (which only the daemon
// writes), as the view shows it.
func (l *overlayLayer) examineLower(ctx context.Context, v View, p string, since, maxFile int64) (Change, bool, error) {
	d, err := hostTree(l.lower).dir(parentOf(p), false)
	if err != nil {
		return Change{}, false, err
	}
	defer d.close()
	var st unix.Stat_t
	if err := d.lstat(baseOf(p), &st); err != nil {
		return Change{}, false, err
	}
	return examine(ctx, v, p, d, baseOf(p), &st, time.Now().UnixNano(), since, map[string]statEntry{}, maxFile)
}

// merged says what the mounted view shows at p when the upper directory
// has no file there: nothing (gone), or the base's file (lowerShows).
func (l *overlayLayer) merged(t rootTree, p string) (gone, lowerShows bool) {
	if d, err := t.dir("", false); err == nil {
		defer func() { d.close() }()
		parts := strings.Split(p, "/")
		for _, c := range parts[:len(parts)-1] {
			var st unix.Stat_t
			if err := d.lstat(c, &st); err != nil {
				break
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				return true, false
			}
			sub, err := d.sub(c)
			if err != nil {
				break
			}
			d.close()
			d = sub
			if d.opaque() {
				return true, false
			}
		}
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(l.lower, p), &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return true, false
	}
	return false, true
}

// dedupe drops repeated changes of one path, keeping the last.
func dedupe(cs []Change) []Change {
	last := map[string]int{}
	for i, c := range cs {
		last[c.Path] = i
	}
	out := cs[:0]
	for i, c := range cs {
		if last[c.Path] == i {
			out = append(out, c)
		}
	}
	return out
}

// walk captures the upper directory's dir, open as d.
func (l *overlayLayer) walk(ctx context.Context, v View, ig *ignorer, d *dirAt, dir string, opaque bool, since, maxFile int64, seenPaths map[string]bool, out *[]Change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	names, err := d.names()
	if err != nil {
		return err
	}
	sort.Strings(names)
	if opaque {
		// The base's children are hidden: those the view has and the
		// upper directory does not are gone.
		if n, ok, err := viewNode(ctx, v, dir); err != nil {
			return err
		} else if ok && n.IsDir() {
			err := v.Overlay.List(ctx, overlay.ListOptions{Prefix: dir}, func(n overlay.Node) error {
				name := n.Path[strings.LastIndexByte(n.Path, '/')+1:]
				if _, found := slices.BinarySearch(names, name); found {
					return nil
				}
				ds, err := deletions(ctx, v, n.Path)
				*out = append(*out, ds...)
				return err
			})
			if err != nil {
				return err
			}
		}
	}
	for _, name := range names {
		if dir == "" && name == ".git" {
			continue // the view's .git, never part of a capture
		}
		p := join(dir, name)
		seen := time.Now().UnixNano()
		var st unix.Stat_t
		if err := d.lstat(name, &st); errors.Is(err, fs.ErrNotExist) {
			continue // gone since the listing (a service's)
		} else if err != nil {
			return err
		}
		seenPaths[p] = true
		if isWhiteout(&st) {
			ds, err := deletions(ctx, v, p)
			if err != nil {
				return err
			}
			*out = append(*out, ds...)
			continue
		}
		n, inView, err := viewNode(ctx, v, p)
		if err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			if inView && !n.IsDir() {
				// A directory where the view has a file.
				*out = append(*out, Change{Path: p, Deleted: true})
				inView = false
			}
			if !inView && ig.match(p, true) {
				continue
			}
			sub, err := d.sub(name)
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
				continue // gone or replaced since its stat: the next capture sees it
			} else if err != nil {
				return err
			}
			err = l.walk(ctx, v, ig, sub, p, sub.opaque(), since, maxFile, seenPaths, out)
			sub.close()
			if err != nil {
				return err
			}
			continue
		}
		if inView && n.IsDir() {
			// A file where the view has a directory.
			ds, err := deletions(ctx, v, p)
			if err != nil {
				return err
			}
			*out = append(*out, ds...)
			inView = false
		}
		if !inView && ig.match(p, false) {
			continue
		}
		c, changed, gone, err := examineLive(ctx, v, p, d, name, &st, seen, since, l.cache, maxFile)
		if err != nil {
			return err
		}
		if gone {
			// Gone since the listing: the stat cache's pass below
			// says what the view shows there now.
			delete(seenPaths, p)
			continue
		}
		if changed {
			*out = append(*out, c)
		}
	}
	return nil
}
