package worktree

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/durable"
	"github.com/sessiond/sessiond/merge"
)

// Update moves a non-bare repository's index and work tree from one
// commit to another: Begin, Apply, then Commit or Abort (see the package
// doc). It holds the index's lock from Begin until Commit or Abort.
type Update struct {
	r        *gitstore.Repo
	root     string // the work tree
	gitDir   string
	lockPath string
	lock     *os.File // index.lock, created by Begin

	filemode bool // core.filemode: the executable bit counts
	symlinks bool // core.symlinks: symlinks are symlinks, else files

	from gitstore.OID // the tree the work tree is clean against
	ix   *gitstore.Index
	// tracked are the index's entries (stage 0) in its order, their stat
	// data refreshed where Begin compared content.
	tracked []*gitstore.IndexEntry

	steps   []step // the paths that differ between the two commits
	applied bool
	closed  bool
}

// step is one path an update changes: what the old and new commits have
// there (a zero Mode: nothing).
type step struct {
	path     string
	old, new gitstore.Entry
}

// Begin takes the index lock of r's work tree and checks that moving it
// from commit from (zero: an unborn branch, an empty tree) to commit to
// can be done as git would: ErrLocked when the lock is taken; a
// *DirtyError naming every path that is not clean against from, and every
// untracked file that a file of to would overwrite or lose; ErrUnsupported
// for what it cannot write as git would. On error nothing is held and
// nothing was written.
func Begin(ctx context.Context, r *gitstore.Repo, from, to gitstore.OID) (*Update, error) {
	if r.Bare() {
		return nil, fmt.Errorf("%w: a bare repository has no work tree", ErrUnsupported)
	}
	u := &Update{r: r, root: r.WorkDir(), gitDir: r.GitDir()}
	u.lockPath = filepath.Join(u.gitDir, "index.lock")
	lock, err := os.OpenFile(u.lockPath, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%w (%s)", ErrLocked, u.lockPath)
	}
	if err != nil {
		return nil, fmt.Errorf("index lock: %w", err)
	}
	u.lock = lock
	ok := false
	defer func() {
		if !ok {
			u.release()
		}
	}()
	cfg, err := gitstore.ReadConfig(u.gitDir)
	if err != nil {
		return nil, err
	}
	u.filemode = cfg.Bool("core", "", "filemode", true)
	u.symlinks = cfg.Bool("core", "", "symlinks", true)
	if v, set := cfg.Get("core", "", "autocrlf"); set && !strings.EqualFold(v, "false") {
		return nil, fmt.Errorf("%w: core.autocrlf is %q: sessiond writes files without line-ending conversion", ErrUnsupported, v)
	}
	if u.from, err = r.TreeOf(ctx, from); err != nil {
		return nil, err
	}
	if u.ix, err = gitstore.ReadIndex(filepath.Join(u.gitDir, "index")); err != nil {
		if errors.Is(err, gitstore.ErrIndexFormat) {
			return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
		}
		return nil, err
	}
	dirty, err := u.check(ctx)
	if err != nil {
		return nil, err
	}
	toTree, err := r.TreeOf(ctx, to)
	if err != nil {
		return nil, err
	}
	ways, err := u.plan(ctx, toTree)
	if err != nil {
		return nil, err
	}
	if dirty = append(dirty, ways...); len(dirty) > 0 {
		slices.SortFunc(dirty, func(a, b DirtyPath) int { return strings.Compare(a.Path, b.Path) })
		return nil, &DirtyError{Paths: slices.CompactFunc(dirty, func(a, b DirtyPath) bool { return a.Path == b.Path })}
	}
	ok = true
	return u, nil
}

// check compares the index with the tree (what git diff-index --cached
// shows) and the work tree with the index (git diff-files, after git
// update-index --refresh), and returns what differs.
func (u *Update) check(ctx context.Context) ([]DirtyPath, error) {
	// The tree's files come in git's order, which for whole paths is the
	// index's: the two are walked side by side.
	var tree []gitstore.Entry
	if !u.from.IsZero() {
		if err := u.r.List(ctx, u.from, "", true, func(e gitstore.Entry) error {
			if !e.Mode.IsDir() {
				tree = append(tree, e)
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	var dirty []DirtyPath
	seen := map[string]bool{}
	add := func(p, why string) {
		if !seen[p] {
			seen[p] = true
			dirty = append(dirty, DirtyPath{Path: p, Status: why})
		}
	}
	entries := u.ix.Entries
	u.tracked = make([]*gitstore.IndexEntry, 0, len(entries))
	for i, j := 0, 0; i < len(entries) || j < len(tree); {
		if i < len(entries) && entries[i].SkipWorktree {
			return nil, fmt.Errorf("%w: %s is outside a sparse checkout", ErrUnsupported, entries[i].Path)
		}
		switch {
		case i >= len(entries) || (j < len(tree) && tree[j].Path < entries[i].Path):
			add(tree[j].Path, Staged) // deleted from the index
			j++
			continue
		case j < len(tree) && tree[j].Path == entries[i].Path:
			j++
		default:
			// In the index only: the tree has no such path.
			if e := &entries[i]; e.Stage == 0 && !e.IntentToAdd {
				u.tracked = append(u.tracked, e)
				add(e.Path, Staged)
				i++
				continue
			}
		}
		e := &entries[i]
		i++
		switch {
		case e.Stage != 0:
			add(e.Path, Unmerged)
			for i < len(entries) && entries[i].Path == e.Path {
				i++ // the conflict's other stages
			}
		case e.IntentToAdd:
			add(e.Path, IntentToAdd)
		default:
			u.tracked = append(u.tracked, e)
			if te := tree[j-1]; te.Path != e.Path || te.Mode != e.Mode || te.OID != e.OID {
				add(e.Path, Staged)
			}
		}
	}
	// The work tree against the index; assume-unchanged entries are
	// taken at their word, as git does.
	var files []*gitstore.IndexEntry
	for i := range u.ix.Entries {
		if e := &u.ix.Entries[i]; !seen[e.Path] && e.Mode != gitstore.ModeGitlink && !e.AssumeValid {
			files = append(files, e)
		}
	}
	states, err := u.fileStates(ctx, files)
	if err != nil {
		return nil, err
	}
	for i, why := range states {
		if why != "" {
			add(files[i].Path, why)
		}
	}
	sort.Slice(dirty, func(i, j int) bool { return dirty[i].Path < dirty[j].Path })
	return dirty, nil
}

// fileStates is fileState of each entry, in parallel (a stat call at a
// time per worker, as git's preload-index does for a large index).
func (u *Update) fileStates(ctx context.Context, files []*gitstore.IndexEntry) ([]string, error) {
	out := make([]string, len(files))
	workers := min(max(runtime.NumCPU(), 2), 8, len(files)/500+1)
	per := (len(files) + workers - 1) / workers
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := min(w*per, len(files)), min((w+1)*per, len(files))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				if i%256 == 0 && ctx.Err() != nil {
					errs[w] = ctx.Err()
					return
				}
				why, err := u.fileState(files[i])
				if err != nil {
					errs[w] = err
					return
				}
				out[i] = why
			}
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// full is the work tree path of a repository path.
func (u *Update) full(p string) string { return filepath.Join(u.root, filepath.FromSlash(p)) }

// fileState says how the work tree's file differs from its index entry
// ("" when it does not), refreshing the entry's stat data when only that
// changed, as git update-index --refresh does.
func (u *Update) fileState(e *gitstore.IndexEntry) (string, error) {
	full := u.full(e.Path)
	fi, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return Deleted, nil
	}
	if err != nil {
		return "", err
	}
	link := fi.Mode()&fs.ModeSymlink != 0
	switch {
	case e.Mode == gitstore.ModeSymlink && u.symlinks:
		if !link {
			return TypeChanged, nil
		}
	case !fi.Mode().IsRegular():
		return TypeChanged, nil
	case e.Mode != gitstore.ModeSymlink && u.filemode && (fi.Mode()&0o100 != 0) != (e.Mode == gitstore.ModeExec):
		return Modified, nil
	}
	st := statOf(fi)
	racy := !u.ix.ModTime.IsZero() && !e.Stat.MTime.Before(u.ix.ModTime)
	if sameStat(st, e.Stat) && !racy {
		return "", nil
	}
	if e.Stat.Size != 0 && st.Size != e.Stat.Size {
		return Modified, nil // git trusts a size change (a size of 0 may be racy-smudged)
	}
	id, err := hashFile(full, link)
	if err != nil {
		return "", err
	}
	if id != e.OID {
		return Modified, nil
	}
	e.Stat = st
	return "", nil
}

// sameStat compares stat data as git's default core.checkStat does
// (modification and change times, inode, owner, size).
func sameStat(a, b gitstore.IndexStat) bool {
	sec := func(t interface{ Unix() int64 }) uint32 { return uint32(t.Unix()) }
	return sec(a.MTime) == sec(b.MTime) && a.MTime.Nanosecond() == b.MTime.Nanosecond() &&
		sec(a.CTime) == sec(b.CTime) && a.CTime.Nanosecond() == b.CTime.Nanosecond() &&
		a.Ino == b.Ino && a.UID == b.UID && a.GID == b.GID && a.Size == b.Size
}

// hashFile is the blob id of a work tree file's content, or of a
// symlink's target.
func hashFile(full string, link bool) (gitstore.OID, error) {
	if link {
		t, err := os.Readlink(full)
		if err != nil {
			return gitstore.OID{}, err
		}
		return gitstore.HashObject(gitstore.KindBlob, []byte(t)), nil
	}
	f, err := os.Open(full)
	if err != nil {
		return gitstore.OID{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return gitstore.OID{}, err
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", fi.Size())
	if n, err := io.Copy(h, f); err != nil || n != fi.Size() {
		return gitstore.OID{}, fmt.Errorf("read %s: %d of %d bytes: %v", full, n, fi.Size(), err)
	}
	var id gitstore.OID
	copy(id[:], h.Sum(nil))
	return id, nil
}

// conversionAttrs are the attributes under which git would not write a
// blob's bytes as they are.
var conversionAttrs = []string{"filter", "ident", "working-tree-encoding", "eol"}

// plan lists the paths that differ between the tree Begin checks
// against and toTree, and returns the untracked files in their way; a
// path it would write with a content conversion is ErrUnsupported.
func (u *Update) plan(ctx context.Context, toTree gitstore.OID) ([]DirtyPath, error) {
	changes, err := merge.DiffTrees(ctx, u.r, u.from, toTree, merge.DiffOptions{NoRenames: true})
	if err != nil {
		return nil, err
	}
	u.steps = make([]step, len(changes))
	for i, c := range changes {
		u.steps[i] = step{path: c.Path(), old: c.From(), new: c.To()}
	}
	attrs, err := gitstore.NewAttributes(ctx, u.r, toTree)
	if err != nil {
		return nil, err
	}
	deleted := map[string]bool{}
	for _, s := range u.steps {
		if s.new.Mode == 0 {
			deleted[s.path] = true
		}
	}
	var inTheWay []DirtyPath
	for _, s := range u.steps {
		if s.new.Mode == 0 {
			continue
		}
		if s.new.Mode.IsBlob() {
			a, err := attrs.Get(ctx, s.path, conversionAttrs...)
			if err != nil {
				return nil, err
			}
			for _, n := range conversionAttrs {
				v := a[n]
				if (n == "eol" && v.State == gitstore.AttrValue && v.Value == "crlf") ||
					(n != "eol" && (v.State == gitstore.AttrValue || (n == "ident" && v.State == gitstore.AttrSet))) {
					return nil, fmt.Errorf("%w: %s has the attribute %s: sessiond writes a blob's bytes as they are, without git's conversion", ErrUnsupported, s.path, n)
				}
			}
		}
		ways, err := u.inTheWay(s.path, deleted)
		if err != nil {
			return nil, err
		}
		inTheWay = append(inTheWay, ways...)
	}
	return inTheWay, nil
}

// Apply writes into the work tree the paths that differ between the two
// commits and prepares the new commit's index (in index.lock, until
// Commit). After an error, Abort gives the work tree back.
func (u *Update) Apply(ctx context.Context) error {
	if u.closed || u.applied {
		return errors.New("worktree: Apply on an update already applied or closed")
	}
	u.applied = true
	written, err := u.write(ctx, u.steps)
	if err != nil {
		return err
	}
	return u.prepareIndex(u.steps, written)
}

// isTracked reports whether the index has path p (stage 0).
func (u *Update) isTracked(p string) bool {
	i := sort.Search(len(u.tracked), func(i int) bool { return u.tracked[i].Path >= p })
	return i < len(u.tracked) && u.tracked[i].Path == p
}

// inTheWay returns the untracked files that writing a new file at p
// would overwrite or lose: at p itself (a file, or a directory holding
// untracked files) and at a directory above p that is a file.
func (u *Update) inTheWay(p string, deleted map[string]bool) ([]DirtyPath, error) {
	var out []DirtyPath
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		dir := p[:i]
		fi, err := os.Lstat(u.full(dir))
		if err != nil || fi.IsDir() {
			continue // absent (made on the way), or a directory
		}
		if !(u.isTracked(dir) && deleted[dir]) {
			out = append(out, DirtyPath{Path: dir, Status: Untracked})
		}
	}
	if u.isTracked(p) {
		return out, nil // what the index says (or named by check): overwritten as git does
	}
	fi, err := os.Lstat(u.full(p))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return append(out, DirtyPath{Path: p, Status: Untracked}), nil
	}
	// A directory: only the tracked files the update deletes may be in it.
	err = filepath.WalkDir(u.full(p), func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(u.root, full)
		rel = filepath.ToSlash(rel)
		if !(u.isTracked(rel) && deleted[rel]) {
			out = append(out, DirtyPath{Path: rel, Status: Untracked})
		}
		return nil
	})
	return out, err
}

// write makes the work tree hold each step's new side: removals first,
// deepest first, pruning directories left empty; then each new file
// written beside its place and renamed over it, shallowest first. It
// returns the stat data of each file written.
func (u *Update) write(ctx context.Context, steps []step) (map[string]gitstore.IndexStat, error) {
	byDepth := slices.Clone(steps)
	sort.Slice(byDepth, func(i, j int) bool { return byDepth[i].path > byDepth[j].path })
	for _, s := range byDepth {
		if s.old.Mode == 0 || (s.new.Mode != 0 && s.new.Mode != gitstore.ModeGitlink && s.old.Mode != gitstore.ModeGitlink) {
			continue // nothing there, or replaced in place below
		}
		if err := os.Remove(u.full(s.path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if s.old.Mode != gitstore.ModeGitlink { // a submodule's directory with content stays
				return nil, err
			}
		}
		u.prune(parentOf(s.path))
	}
	written := map[string]gitstore.IndexStat{}
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s.new.Mode == 0 {
			continue
		}
		full := u.full(s.path)
		if err := os.MkdirAll(filepath.Dir(full), 0o777); err != nil {
			return nil, err
		}
		if fi, err := os.Lstat(full); err == nil && fi.IsDir() && s.new.Mode != gitstore.ModeGitlink {
			if err := os.Remove(full); err != nil { // empty: inTheWay saw to that
				return nil, err
			}
		}
		if s.new.Mode == gitstore.ModeGitlink {
			if err := os.Mkdir(full, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, err
			}
			continue
		}
		data, err := u.r.ReadBlob(ctx, s.new.OID)
		if err != nil {
			return nil, err
		}
		if err := writeAtomic(full, s.new.Mode, data, u.symlinks); err != nil {
			return nil, fmt.Errorf("write %s: %w", s.path, err)
		}
		fi, err := os.Lstat(full)
		if err != nil {
			return nil, err
		}
		written[s.path] = statOf(fi)
	}
	return written, nil
}

// prune removes dir and the directories above it while they are empty,
// never the work tree itself.
func (u *Update) prune(dir string) {
	for dir != "" {
		if os.Remove(u.full(dir)) != nil {
			return
		}
		dir = parentOf(dir)
	}
}

func parentOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// writeAtomic writes a file or symlink beside full and renames it over
// full, with git's permissions (0666 or, executable, 0777, less the
// umask). Without core.symlinks a symlink is a file holding its target.
func writeAtomic(full string, mode gitstore.Mode, data []byte, symlinks bool) error {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(full), ".sessiond-"+hex.EncodeToString(rnd[:])+".tmp")
	if mode == gitstore.ModeSymlink && symlinks {
		if err := os.Symlink(string(data), tmp); err != nil {
			return err
		}
	} else {
		perm := os.FileMode(0o666)
		if mode == gitstore.ModeExec {
			perm = 0o777
		}
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(tmp)
			return err
		}
	}
	if err := os.Rename(tmp, full); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// prepareIndex writes the index of the new commit into index.lock: the
// old entries (stat data refreshed), less the paths deleted, with the
// paths written and the stat data of their files; the two sorted lists
// are merged side by side.
func (u *Update) prepareIndex(steps []step, written map[string]gitstore.IndexStat) error {
	steps = slices.Clone(steps)
	slices.SortFunc(steps, func(a, b step) int { return strings.Compare(a.path, b.path) })
	ix := &gitstore.Index{Version: u.ix.Version, Entries: make([]gitstore.IndexEntry, 0, len(u.tracked)+len(steps))}
	for i, j := 0, 0; i < len(u.tracked) || j < len(steps); {
		if j >= len(steps) || (i < len(u.tracked) && u.tracked[i].Path < steps[j].path) {
			ix.Entries = append(ix.Entries, *u.tracked[i])
			i++
			continue
		}
		s := steps[j]
		j++
		if i < len(u.tracked) && u.tracked[i].Path == s.path {
			i++ // replaced or deleted
		}
		if s.new.Mode != 0 {
			ix.Entries = append(ix.Entries, gitstore.IndexEntry{Path: s.path, Mode: s.new.Mode, OID: s.new.OID, Stat: written[s.path]})
		}
	}
	if err := u.lock.Truncate(0); err != nil {
		return err
	}
	if _, err := u.lock.Seek(0, io.SeekStart); err != nil {
		return err
	}
	w := bufio.NewWriter(u.lock)
	if err := ix.Encode(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return u.lock.Sync()
}

// Commit puts the new index in place (index.lock renamed over index) and
// releases the lock. Call it once the branch has moved.
func (u *Update) Commit() error {
	if !u.applied || u.closed {
		return errors.New("worktree: Commit without Apply, or after Commit or Abort")
	}
	u.closed = true
	if err := u.lock.Close(); err != nil {
		_ = os.Remove(u.lockPath)
		return err
	}
	if err := os.Rename(u.lockPath, filepath.Join(u.gitDir, "index")); err != nil {
		_ = os.Remove(u.lockPath)
		return err
	}
	return durable.SyncDir(u.gitDir)
}

// Abort gives the work tree back what Apply changed, as the old commit
// has it, and releases the lock with the index untouched. Call it when
// the branch did not move.
func (u *Update) Abort(ctx context.Context) error {
	if u.closed {
		return nil
	}
	var err error
	if u.applied {
		back := make([]step, len(u.steps))
		for i, s := range u.steps {
			back[i] = step{path: s.path, old: s.new, new: s.old}
		}
		_, err = u.write(context.WithoutCancel(ctx), back)
	}
	u.release()
	return err
}

// release closes and removes the lock file.
func (u *Update) release() {
	u.closed = true
	_ = u.lock.Close()
	_ = os.Remove(u.lockPath)
}
