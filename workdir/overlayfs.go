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

func (l *overlayLayer) reset(ctx context.Context, v View) error {
	if l.shared != nil {
		return l.resetShared(ctx, v)
	}
	for _, d := range []string{l.upper, l.work} {
		if err := removeAll(d); err != nil {
			return err
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	clear(l.cache)
	if v.Readable != nil {
		// The whole view, for the whiteouts over what it hides.
		all := v.Overlay.Entries()
		slices.SortFunc(all, func(a, b overlay.Entry) int { return strings.Compare(a.Path, b.Path) })
		return l.rebuild(ctx, v, "", all)
	}
	var paths []string
	for _, e := range v.Overlay.Entries() {
		paths = append(paths, e.Path)
	}
	return l.sync(ctx, v, paths)
}

// isWhiteout reports whether st is overlayfs's whiteout (a 0/0 character
// device).
func isWhiteout(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

func isOpaque(full string) bool {
	var buf [4]byte
	n, err := unix.Lgetxattr(full, opaqueXattr, buf[:])
	return err == nil && n == 1 && buf[0] == 'y'
}

// affected is the subtree to rebuild for a change at p: the shallowest
// ancestor (or p) that the overlay deletes or the upper directory marks
// opaque or whites out, since its whole content is spelled out in the
// upper directory; p otherwise.
func (l *overlayLayer) affected(v View, p string) string {
	parts := strings.Split(p, "/")
	for i := 1; i <= len(parts); i++ {
		a := strings.Join(parts[:i], "/")
		if e, ok := v.Overlay.Get(a); ok && e.Status == overlay.Deleted {
			return a
		}
		var st unix.Stat_t
		full := filepath.Join(l.upper, a)
		if err := unix.Lstat(full, &st); err != nil {
			break
		}
		if isWhiteout(&st) || (st.Mode&unix.S_IFMT == unix.S_IFDIR && isOpaque(full)) {
			return a
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			break
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
	var rs []string
	for _, p := range paths {
		rs = append(rs, l.affected(v, p))
	}
	rs = roots(rs)
	all := v.Overlay.Entries()
	slices.SortFunc(all, func(a, b overlay.Entry) int { return strings.Compare(a.Path, b.Path) })
	for _, r := range rs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := l.rebuild(ctx, v, r, under(all, r)); err != nil {
			return err
		}
	}
	// An upper directory that hides a lower one stays: removing it
	// would show the base's.
	pruneDirs(l.upper, paths, func(d string) bool {
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
func (l *overlayLayer) rebuild(ctx context.Context, v View, r string, ents []overlay.Entry) error {
	if r != "" {
		if err := removeAll(filepath.Join(l.upper, r)); err != nil {
			return err
		}
	}
	dropUnder(l.cache, r)
	hidden, err := hiddenRoots(ctx, v, r)
	if err != nil {
		return err
	}
	hide := newPathSet(hidden)
	var files []gitstore.Entry
	for i, e := range ents {
		if hide.covers(e.Path) {
			continue
		}
		full := filepath.Join(l.upper, e.Path)
		if e.Status != overlay.Deleted {
			files = append(files, gitstore.Entry{Path: e.Path, Mode: e.Mode, OID: e.OID})
			continue
		}
		if err := ensureDirs(l.upper, e.Path); err != nil {
			return err
		}
		if i+1 < len(ents) && strings.HasPrefix(ents[i+1].Path, e.Path+"/") {
			// Something new below a deleted directory: an opaque
			// directory hides the base's content.
			if err := os.Mkdir(full, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			if err := unix.Lsetxattr(full, opaqueXattr, []byte("y"), 0); err != nil {
				return err
			}
			continue
		}
		if err := unix.Mknod(full, unix.S_IFCHR, 0); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := ensureDirs(l.upper, f.Path); err != nil {
			return err
		}
		seen := time.Now().UnixNano()
		if _, err := writeEntry(ctx, v.Repo, l.upper, f); err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(l.upper, f.Path), &st); err != nil {
			return err
		}
		e := statEntryOf(&st, seen)
		e.Git, e.OID = f.Mode, f.OID
		l.cache[f.Path] = e
	}
	for _, h := range hidden {
		if err := ensureDirs(l.upper, h); err != nil {
			return err
		}
		if err := removeAll(filepath.Join(l.upper, h)); err != nil {
			return err
		}
		if err := unix.Mknod(filepath.Join(l.upper, h), unix.S_IFCHR, 0); err != nil {
			return err
		}
	}
	return nil
}

func (l *overlayLayer) capture(ctx context.Context, v View, since, maxFile int64) ([]Change, error) {
	ig := newIgnorer(func(dir string) []byte {
		up := filepath.Join(l.upper, dir, ".gitignore")
		var st unix.Stat_t
		if err := unix.Lstat(up, &st); err == nil {
			if isWhiteout(&st) {
				return nil
			}
			return readIgnoreFile(up)
		}
		if dir != "" && isOpaque(filepath.Join(l.upper, dir)) {
			return nil
		}
		return readIgnoreFile(filepath.Join(l.lower, dir, ".gitignore"))
	})
	var out []Change
	seen := map[string]bool{}
	if err := l.walk(ctx, v, ig, "", false, since, maxFile, seen, &out); err != nil {
		return nil, err
	}
	// A file the upper directory held (the overlay's, or a copied-up one)
	// and no longer does: overlayfs removes an upper-only file without a
	// whiteout, and the base's version may show again.
	for p := range l.cache {
		if seen[p] {
			continue
		}
		gone, lowerShows := l.merged(p)
		switch {
		case gone:
			ds, err := deletions(ctx, v, p)
			if err != nil {
				return nil, err
			}
			out = append(out, ds...)
		case lowerShows:
			var st unix.Stat_t
			full := filepath.Join(l.lower, p)
			if err := unix.Lstat(full, &st); err != nil {
				return nil, err
			}
			c, changed, err := examine(ctx, v, p, full, &st, time.Now().UnixNano(), since, map[string]statEntry{}, maxFile)
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

// merged says what the mounted view shows at p when the upper directory
// has no file there: nothing (gone), or the base's file (lowerShows).
func (l *overlayLayer) merged(p string) (gone, lowerShows bool) {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		full := filepath.Join(l.upper, strings.Join(parts[:i], "/"))
		var st unix.Stat_t
		if err := unix.Lstat(full, &st); err != nil {
			break
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || isOpaque(full) {
			return true, false
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

func (l *overlayLayer) walk(ctx context.Context, v View, ig *ignorer, dir string, opaque bool, since, maxFile int64, seenPaths map[string]bool, out *[]Change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	full := filepath.Join(l.upper, dir)
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
		seenPaths[p] = true
		fp := filepath.Join(full, name)
		seen := time.Now().UnixNano()
		var st unix.Stat_t
		if err := unix.Lstat(fp, &st); err != nil {
			return err
		}
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
			if err := l.walk(ctx, v, ig, p, isOpaque(fp), since, maxFile, seenPaths, out); err != nil {
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
		c, changed, err := examine(ctx, v, p, fp, &st, seen, since, l.cache, maxFile)
		if err != nil {
			return err
		}
		if changed {
			*out = append(*out, c)
		}
	}
	return nil
}
