package workdir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/overlay"
)

// Mode selects how a session's view directory is made.
type Mode string

// Modes. Auto picks overlay where the kernel mounts it in a user
// namespace, copy otherwise.
const (
	ModeOverlay Mode = "overlay"
	ModeCopy    Mode = "copy"
	ModeAuto    Mode = "auto"
)

// ParseMode checks a mode name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeOverlay, ModeCopy, ModeAuto:
		return m, nil
	case "":
		return ModeAuto, nil
	}
	return "", fmt.Errorf("workdir mode %q: use overlay, copy or auto", s)
}

// Repo is what a view directory reads from a repository.
type Repo interface {
	treeLister
}

// View is a session's view at one point of its mutation log: what a
// scratch directory is brought in step with.
type View struct {
	Session string
	Repo    Repo
	// RepoName names the repository (for the view's path inside).
	RepoName string
	BaseTree gitstore.OID
	// Seq is the sequence number of the view's latest mutation.
	Seq     int64
	Overlay *overlay.Overlay
	// Changed returns the paths the mutations after seq changed; full is
	// true when one of them changed more than its paths say (the layer is
	// then rebuilt).
	Changed func(ctx context.Context, after int64) (paths []string, full bool, err error)
	// Readable, when set, says which files the directory shows (the
	// session's read policy): the others are not in it, and a directory
	// shows only with a readable file below it. Nil shows everything.
	Readable func(p string) bool
	// Env, when set, is the environment layer stacked between the base
	// checkout and the session's own layer (environment.go).
	Env *Env
	// KeepEnv (with Env nil): the view stacks whatever environment layer
	// the scratch stacks now, so that a Prepare only to capture (what
	// services wrote) changes nothing of how the view is made.
	KeepEnv bool
}

// Change is one path a command changed, relative to the view it started
// from.
type Change struct {
	Path    string
	Deleted bool
	// Mode is ModeFile, ModeExec or ModeSymlink for a write.
	Mode gitstore.Mode
	OID  gitstore.OID
	// Data is the content, or a symlink's target. Nil when the file is
	// over the size limit capture was given (Size says how large).
	Data []byte
	Size int64
	// Special names a file git cannot hold ("fifo", "socket", "device");
	// empty for files and symlinks.
	Special string
}

// layer is one session's writable view over a base checkout: the
// interface both modes implement, and the one the conformance suite
// checks.
type layer interface {
	// reset rebuilds the layer from v alone, dropping everything else.
	reset(ctx context.Context, v View) error
	// sync brings the given paths (and what is below them) in step with v.
	sync(ctx context.Context, v View, paths []string) error
	// capture lists every path whose content differs from v and that the
	// view's .gitignore files do not ignore (a tracked path counts even
	// when ignored).
	// since is when the command started (wall clock, ns), for the stat
	// cache's racy rule.
	capture(ctx context.Context, v View, since, maxFile int64) ([]Change, error)
	// present says how the command is shown the view.
	present() presentation
	// cacheState is the stat cache to persist; setCacheState restores it.
	cacheState() map[string]statEntry
	setCacheState(map[string]statEntry)
}

// presentation is what the helper mounts at the view's path: an overlay
// of lower and upper (with work), or a bind of src.
type presentation struct {
	Overlay bool `json:"overlay,omitempty"`
	// Env is a lower directory stacked over Lower (an environment
	// layer); "" for none.
	Env   string `json:"env,omitempty"`
	Lower string `json:"lower,omitempty"`
	Upper string `json:"upper,omitempty"`
	Work  string `json:"work,omitempty"`
	Src   string `json:"src,omitempty"`
	// Attach: the overlay is the one mounted for the session's
	// services; a clone of it comes from this socket (share.go).
	Attach string `json:"attach,omitempty"`
}

// statEntry is what the stat cache knows of one file, as git's index
// does: the stat data seen when its content was last hashed.
type statEntry struct {
	Size  int64
	Mtime int64
	Ctime int64
	Ino   uint64
	Mode  uint32
	Git   gitstore.Mode
	OID   gitstore.OID
	// Seen is when the stat was taken (wall clock, ns).
	Seen int64
	// Layer: the file is the environment layer's (copy mode), not the
	// view's; unchanged while its content is OID.
	Layer bool
}

// racyWindow covers the file system's timestamp granularity (the coarse
// kernel clock lags the wall clock by up to a tick).
const racyWindow = 50 * time.Millisecond

// statTimes are the modification and change times of st (ns).
func statTimes(st *unix.Stat_t) (mtime, ctime int64) { return st.Mtim.Nano(), st.Ctim.Nano() }

func statEntryOf(st *unix.Stat_t, seen int64) statEntry {
	mtime, ctime := statTimes(st)
	return statEntry{
		Size: st.Size, Mtime: mtime, Ctime: ctime, Ino: st.Ino, Mode: uint32(st.Mode), Seen: seen,
	}
}

// clean reports whether st matches the entry and the entry is not racy.
// since is when the command that may have changed the file started: a
// change after it gets a timestamp of at least since minus the clock's
// granularity, so an entry whose own timestamp is that late could have
// changed again with the same stat data and, as git does with entries as
// new as its index, is hashed again.
func (e statEntry) clean(st *unix.Stat_t, since int64) bool {
	mtime, ctime := statTimes(st)
	if e.Size != st.Size || e.Mtime != mtime || e.Ctime != ctime || e.Ino != st.Ino || e.Mode != uint32(st.Mode) {
		return false
	}
	return e.Mtime < since-int64(racyWindow)
}

// gitModeOf is the git mode of a file with stat st; 0 for a directory or
// a special file.
func gitModeOf(st *unix.Stat_t) gitstore.Mode {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return gitstore.ModeSymlink
	case unix.S_IFREG:
		if st.Mode&0o100 != 0 {
			return gitstore.ModeExec
		}
		return gitstore.ModeFile
	}
	return 0
}

func specialName(st *unix.Stat_t) string {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "device"
	}
	return ""
}

// examine compares the file name of directory d (view path p, stat st)
// with the view, using and refreshing the stat cache. It returns the
// change, or ok false when the file is what the view holds. It reads the
// file through d, following no link: one swapped in after the stat was
// taken fails the read instead of leading out of the directory.
//
// A cache entry always describes a file equal to the view (sync writes
// them, capture keeps only unchanged files, and sync drops the entries of
// every path it changes), so a clean entry needs no look at the view.
func examine(ctx context.Context, v View, p string, d *dirAt, name string, st *unix.Stat_t, seen, since int64, cache map[string]statEntry, maxFile int64) (Change, bool, error) {
	if sp := specialName(st); sp != "" {
		delete(cache, p)
		return Change{Path: p, Special: sp}, true, nil
	}
	prev, cached := cache[p]
	if cached && prev.clean(st, since) {
		return Change{}, false, nil
	}
	delete(cache, p)
	n, err := v.Overlay.Stat(ctx, p)
	if err != nil && !errors.Is(err, overlay.ErrNotFound) {
		return Change{}, false, err
	}
	tracked := err == nil && n.Mode.IsBlob() && !v.hides(p)
	gm := gitModeOf(st)
	c := Change{Path: p, Mode: gm, Size: st.Size}
	if maxFile > 0 && st.Size > maxFile {
		return c, true, nil
	}
	var data []byte
	if gm == gitstore.ModeSymlink {
		t, err := d.readlink(name)
		if err != nil {
			return Change{}, false, err
		}
		data = []byte(t)
	} else if data, err = d.readFile(name); err != nil {
		return Change{}, false, err
	}
	c.Data, c.Size, c.OID = data, int64(len(data)), gitstore.HashObject(gitstore.KindBlob, data)
	if (tracked && n.OID == c.OID && n.Mode == gm) || (!tracked && cached && prev.Layer && prev.OID == c.OID && prev.Git == gm) {
		e := statEntryOf(st, seen)
		e.Git, e.OID, e.Layer = gm, c.OID, prev.Layer && !tracked
		cache[p] = e
		return Change{}, false, nil
	}
	return c, true, nil
}

// examineLive is examine for a file that a live service may change
// between its stat and its read: when the read finds it gone or of
// another kind, it is looked at again from a fresh stat, until a stat
// and its read agree (gone true when it is no longer there at all). A
// tool that keeps swapping a file for a link may win a few rounds of
// this, not many: after liveTries the last read's error stands.
func examineLive(ctx context.Context, v View, p string, d *dirAt, name string, st *unix.Stat_t, seen, since int64, cache map[string]statEntry, maxFile int64) (c Change, changed, gone bool, err error) {
	c, changed, err = examine(ctx, v, p, d, name, st, seen, since, cache, maxFile)
	for try := 1; err != nil && changedUnder(err) && try < liveTries; try++ {
		var again unix.Stat_t
		if err := d.lstat(name, &again); errors.Is(err, fs.ErrNotExist) {
			return Change{}, false, true, nil
		} else if err != nil {
			return Change{}, false, false, err
		}
		*st = again
		c, changed, err = examine(ctx, v, p, d, name, st, time.Now().UnixNano(), since, cache, maxFile)
	}
	return c, changed, false, err
}

// liveTries bounds examineLive's stats and reads of one file.
const liveTries = 100

// changedUnder: err is a read that found the file gone or of another
// kind than its stat said (a link where a file was, say).
func changedUnder(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotRegular) ||
		errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTDIR)
}

// deletions lists a deletion for every file of the view at or below p
// (that the view shows).
func deletions(ctx context.Context, v View, p string) ([]Change, error) {
	n, err := v.Overlay.Stat(ctx, p)
	if errors.Is(err, overlay.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !n.IsDir() {
		if !n.Mode.IsBlob() || v.hides(p) {
			return nil, nil
		}
		return []Change{{Path: p, Deleted: true}}, nil
	}
	var out []Change
	err = v.Overlay.List(ctx, overlay.ListOptions{Prefix: p, Recursive: true}, func(n overlay.Node) error {
		if n.Mode.IsBlob() && !v.hides(n.Path) {
			out = append(out, Change{Path: n.Path, Deleted: true})
		}
		return nil
	})
	return out, err
}

// viewNode is the view's node at p, ok false when there is none or the
// view hides that file.
func viewNode(ctx context.Context, v View, p string) (overlay.Node, bool, error) {
	n, err := v.Overlay.Stat(ctx, p)
	if errors.Is(err, overlay.ErrNotFound) || (err == nil && !n.IsDir() && v.hides(p)) {
		return overlay.Node{}, false, nil
	}
	return n, err == nil, err
}

// ignorer loads the view's .gitignore files lazily, parents first.
type ignorer struct {
	ig     gitstore.Ignore
	loaded map[string]bool
	read   func(dir string) []byte
}

func newIgnorer(read func(dir string) []byte) *ignorer {
	return &ignorer{loaded: map[string]bool{}, read: read}
}

func (i *ignorer) load(dir string) {
	if i.loaded[dir] {
		return
	}
	if dir != "" {
		i.load(parentOf(dir))
	}
	i.loaded[dir] = true
	if b := i.read(dir); b != nil {
		i.ig.AddFile(dir, b)
	}
}

func (i *ignorer) match(p string, isDir bool) bool {
	i.load(parentOf(p))
	return i.ig.Match(p, isDir)
}

func parentOf(p string) string {
	if d := path.Dir(p); d != "." {
		return d
	}
	return ""
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// roots sorts paths and drops those below another one.
func roots(paths []string) []string {
	ps := append([]string(nil), paths...)
	sort.Strings(ps)
	var out []string
	for _, p := range ps {
		if p == "" {
			return []string{""}
		}
		if n := len(out); n > 0 && (out[n-1] == p || strings.HasPrefix(p, out[n-1]+"/")) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// dropUnder removes the cache entries at or below p.
func dropUnder(cache map[string]statEntry, p string) {
	if p == "" {
		clear(cache)
		return
	}
	delete(cache, p)
	pre := p + "/"
	for k := range cache {
		if strings.HasPrefix(k, pre) {
			delete(cache, k)
		}
	}
}
