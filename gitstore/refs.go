package gitstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/sessiond/sessiond/internal/durable"
	"github.com/sessiond/sessiond/internal/failpoint"
)

// RefName is a full ref name such as "refs/heads/main", or "HEAD".
type RefName string

// BranchRef returns the ref name of branch.
func BranchRef(branch string) RefName { return RefName("refs/heads/" + branch) }

// Ref is a ref and the object it names.
type Ref struct {
	Name RefName
	OID  OID
}

// RefConflictError is a failed compare-and-swap: the ref holds Current
// (ZeroOID when it does not exist), not the expected value.
type RefConflictError struct {
	Name    RefName
	Current OID
}

func (e *RefConflictError) Error() string {
	return fmt.Sprintf("ref %s is at %s, not at the expected value", e.Name, e.Current)
}

func (e *RefConflictError) Unwrap() error { return ErrRefConflict }

// ValidateRefName applies git's check-ref-format rules to a full ref name.
func ValidateRefName(name RefName) error {
	s := string(name)
	bad := func(why string) error { return fmt.Errorf("%w: %q: %s", ErrInvalidRef, s, why) }
	if s == "HEAD" {
		return nil
	}
	if !strings.HasPrefix(s, "refs/") {
		return bad("must start with refs/")
	}
	if !utf8.ValidString(s) {
		return bad("invalid UTF-8")
	}
	if strings.HasSuffix(s, "/") || strings.HasSuffix(s, ".") || strings.Contains(s, "//") ||
		strings.Contains(s, "..") || strings.Contains(s, "@{") {
		return bad("malformed")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return bad("forbidden character")
		}
	}
	for _, comp := range strings.Split(s, "/") {
		if strings.HasPrefix(comp, ".") || strings.HasSuffix(comp, ".lock") {
			return bad("component starts with '.' or ends with .lock")
		}
	}
	return nil
}

// ValidateBranchName applies git branch's rules to a branch's short name
// such as "main" or "topic/x" (refs.c's check_branch_ref): refs/heads/<name>
// must be a valid ref name, and the name may not start with '-' nor be
// "HEAD".
func ValidateBranchName(name string) error {
	bad := func(why string) error { return fmt.Errorf("%w: branch name %q: %s", ErrInvalidRef, name, why) }
	switch {
	case name == "":
		return bad("empty")
	case name == "HEAD":
		return bad("not a branch name")
	case strings.HasPrefix(name, "-"):
		return bad("starts with '-'")
	}
	return ValidateRefName(BranchRef(name))
}

// refFiles is the ref store's files: loose refs under refs/ and
// packed-refs, each changed only under its refLock (one discipline for
// all of them). Its methods' receiver is r, as the Repo's, whose part it
// is.
type refFiles struct {
	gitDir string
	packed *packedCache
}

// packedCache keeps the last parse of packed-refs with the identity of
// the file it came from (inode, size, modification time), as git's own
// packed-refs snapshot does (stat_validity): packed-refs is only ever
// replaced by a rename (git's lock file, and ours), so a file with the
// same identity holds the same refs, and a read of a ref, or a listing,
// costs a stat instead of a parse of every packed ref. mu guards the
// fields; the map is never changed once made.
type packedCache struct {
	mu   sync.Mutex
	id   fileIdentity
	refs map[RefName]OID
}

type fileIdentity struct {
	ino  uint64
	size int64
	mod  time.Time
}

func (r *refFiles) refPath(name RefName) string {
	return filepath.Join(r.gitDir, filepath.FromSlash(string(name)))
}

// readLooseOrPacked returns the raw value of name: an id, or the target of
// a symbolic ref. It reports ErrNotFound when neither a loose file nor a
// packed-refs line exists.
func (r *refFiles) readRefRaw(name RefName) (id OID, symbolic RefName, err error) {
	b, err := os.ReadFile(r.refPath(name))
	switch {
	case err == nil:
		line := strings.TrimSpace(string(b))
		if t, ok := strings.CutPrefix(line, "ref: "); ok {
			return OID{}, RefName(t), nil
		}
		id, err := ParseOID(line)
		if err != nil {
			return OID{}, "", fmt.Errorf("ref %s: %w", name, ErrCorrupt)
		}
		return id, "", nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR):
	default:
		return OID{}, "", fmt.Errorf("read ref %s: %w", name, err)
	}
	packed, err := r.packedSnapshot()
	if err != nil {
		return OID{}, "", err
	}
	if id, ok := packed[name]; ok {
		return id, "", nil
	}
	return OID{}, "", fmt.Errorf("ref %s: %w", name, ErrNotFound)
}

// packedSnapshot returns the refs of packed-refs, parsed again only when
// the file is another one than last time (packedCache). The map is
// shared: read it only.
func (r *refFiles) packedSnapshot() (map[RefName]OID, error) {
	path := filepath.Join(r.gitDir, "packed-refs")
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[RefName]OID{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read packed-refs: %w", err)
	}
	c := r.packed
	c.mu.Lock()
	refs, same := c.refs, c.refs != nil && c.id == identityOf(fi)
	c.mu.Unlock()
	if same {
		return refs, nil
	}
	// The identity and the content come from one open file, so what is
	// kept is what that file held.
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[RefName]OID{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read packed-refs: %w", err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("read packed-refs: %w", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read packed-refs: %w", err)
	}
	if refs, err = parsePacked(b); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.id, c.refs = identityOf(fi), refs
	c.mu.Unlock()
	return refs, nil
}

func identityOf(fi fs.FileInfo) fileIdentity {
	id := fileIdentity{size: fi.Size(), mod: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.ino = uint64(st.Ino)
	}
	return id
}

// parsePacked parses the content of packed-refs.
func parsePacked(b []byte) (map[RefName]OID, error) {
	refs := make(map[RefName]OID)
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		hexID, name, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if id, err := ParseOID(hexID); err == nil {
			refs[RefName(name)] = id
		}
	}
	return refs, sc.Err()
}

// ReadRef returns the object a ref names, following symbolic refs.
func (r *Repo) ReadRef(ctx context.Context, name RefName) (OID, error) {
	return r.refs.readRef(ctx, name)
}

// readRef is ReadRef: it follows symbolic refs, at most 8 deep.
func (r *refFiles) readRef(ctx context.Context, name RefName) (OID, error) {
	for range 8 {
		if err := ctx.Err(); err != nil {
			return OID{}, err
		}
		id, sym, err := r.readRefRaw(name)
		if err != nil {
			return OID{}, err
		}
		if sym == "" {
			return id, nil
		}
		name = sym
	}
	return OID{}, fmt.Errorf("ref %s: symbolic refs nested too deep: %w", name, ErrCorrupt)
}

// HeadBranch returns the branch HEAD names (for a non-bare repository, the
// one checked out), or "" when HEAD is detached.
func (r *Repo) HeadBranch() (string, error) {
	_, sym, err := r.refs.readRefRaw("HEAD")
	if err != nil && !errors.Is(err, ErrNotFound) {
		return "", err
	}
	b, _ := strings.CutPrefix(string(sym), "refs/heads/")
	return b, nil
}

// ListRefs returns the refs whose names start with prefix, sorted by name;
// a loose ref wins over a packed one.
func (r *Repo) ListRefs(ctx context.Context, prefix string) ([]Ref, error) {
	return r.refs.list(ctx, prefix)
}

// list returns the refs whose names start with any of prefixes,
// sorted by name, reading packed-refs once and walking only the
// directories of loose refs the prefixes lie in (refs/heads for
// "refs/heads/", not every session's refs).
func (r *refFiles) list(ctx context.Context, prefixes ...string) ([]Ref, error) {
	packed, err := r.packedSnapshot()
	if err != nil {
		return nil, err
	}
	matches := func(name RefName) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(string(name), p) {
				return true
			}
		}
		return false
	}
	loose := map[RefName]OID{}
	walked := map[string]bool{}
	for _, prefix := range prefixes {
		dir := "refs"
		if i := strings.LastIndexByte(prefix, '/'); i > 0 && strings.HasPrefix(prefix, "refs/") {
			dir = prefix[:i]
		}
		if walked[dir] {
			continue
		}
		walked[dir] = true
		if err := r.walkLoose(ctx, dir, loose); err != nil {
			return nil, fmt.Errorf("list refs: %w", err)
		}
	}
	var out []Ref
	for name, id := range loose {
		if matches(name) {
			out = append(out, Ref{Name: name, OID: id})
		}
	}
	for name, id := range packed {
		if _, shadowed := loose[name]; !shadowed && matches(name) {
			out = append(out, Ref{Name: name, OID: id})
		}
	}
	slices.SortFunc(out, func(a, b Ref) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return out, nil
}

// walkLoose puts into refs the value of every loose ref below dir
// (a slash-separated path under the git directory, such as "refs/heads").
func (r *refFiles) walkLoose(ctx context.Context, dir string, refs map[RefName]OID) error {
	root := filepath.Join(r.gitDir, filepath.FromSlash(dir))
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || strings.HasSuffix(p, ".lock") {
			return nil
		}
		rel, _ := filepath.Rel(r.gitDir, p)
		name := RefName(filepath.ToSlash(rel))
		if id, err := r.readRef(ctx, name); err == nil {
			refs[name] = id
		}
		return nil
	})
}

// lockTimeout is how long UpdateRef waits for another writer's lock, as
// git's core.filesRefLockTimeout (100 ms by default) does.
const lockTimeout = 100 * time.Millisecond

// refLock is git's lock on one file of the ref store (a loose ref or
// packed-refs): path + ".lock", created exclusively. The one discipline
// for every ref write: take it, write the new content into it, then
// either commit (rename it over the file: the lock is gone, and the name
// may at once be another writer's lock) or release (remove it, only if it
// was never committed). A lock file is removed only by its owner, before
// it was renamed away.
type refLock struct {
	f      *os.File
	path   string // the file the lock guards
	closed bool   // f is closed
	done   bool   // committed: the lock file is no longer ours
}

// lockFile takes git's lock on path, retrying until lockTimeout.
func lockFile(ctx context.Context, path string) (*refLock, error) {
	deadline := time.Now().Add(lockTimeout)
	backoff := time.Millisecond
	for {
		f, err := os.OpenFile(path+".lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			return &refLock{f: f, path: path}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: %s.lock exists", ErrRefLocked, filepath.Base(path))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 20*time.Millisecond)
	}
}

// commit makes data the guarded file's content: written into the lock
// file, fsynced, and the lock renamed over the file. After commit the
// lock is released whatever happened.
func (l *refLock) commit(data []byte) error {
	if _, err := l.f.Write(data); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return err
	}
	return l.install()
}

// install renames the written and fsynced lock file over the guarded
// file (commit's last step).
func (l *refLock) install() error {
	l.closed = true
	if err := l.f.Close(); err != nil {
		return err
	}
	if err := os.Rename(l.path+".lock", l.path); err != nil {
		return err
	}
	l.done = true
	if testHookLockCommitted != nil {
		testHookLockCommitted(l.path)
	}
	return nil
}

// release removes the lock file unless commit renamed it away: from then
// on that name belongs to whoever locks the file next.
func (l *refLock) release() {
	if !l.closed {
		l.f.Close()
	}
	if !l.done {
		os.Remove(l.path + ".lock")
	}
}

// testHookLockCommitted, set by tests, runs after a lock was renamed over
// its file (another writer may take the lock from then on).
var testHookLockCommitted func(path string)

// UpdateRef moves ref name from old to new by compare-and-swap, under git's
// own <ref>.lock so the git CLI and sessiond exclude each other. old ==
// ZeroOID requires that the ref not exist; new == ZeroOID deletes it. The
// new value is fsynced and renamed into place; the object it names must
// already be durable. A mismatch fails with *RefConflictError.
func (r *Repo) UpdateRef(ctx context.Context, name RefName, newID, oldID OID) error {
	return r.noSpace(SpaceRefs, r.refs.update(ctx, name, newID, oldID))
}

// update is UpdateRef without the check for a full disk.
func (r *refFiles) update(ctx context.Context, name RefName, newID, oldID OID) error {
	lock, err := r.lockForUpdate(ctx, RefUpdate{Name: name, New: newID, Old: oldID})
	if err != nil {
		return err
	}
	defer lock.release()
	path := lock.path
	if newID.IsZero() {
		if err := r.removePackedRef(ctx, name); err != nil {
			return err
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete ref %s: %w", name, err)
		}
		return durable.SyncDir(filepath.Dir(path))
	}
	if err := lock.commit([]byte(newID.String() + "\n")); err != nil {
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	return durable.SyncDir(filepath.Dir(path))
}

// RefUpdate is one compare-and-swap of UpdateRefs: Name from Old to New,
// as UpdateRef takes them.
type RefUpdate struct {
	Name     RefName
	New, Old OID
}

// PrepareRefs is the first half of applying each of ups as UpdateRef
// does, each on its own (not atomic together: one that fails leaves the
// others to succeed), with shared waits for the disk: it takes each ref's
// lock, compares its value with Old, writes New into the lock file, and
// fsyncs the lock files together. Nothing is visible yet; Commit renames
// them into place. Preparing needs no object to exist, so a caller can
// prepare while it flushes the objects the refs will name. Deletions
// (a zero New) are made by Commit. Release lets go of what Commit did not
// install; call it always.
func (r *Repo) PrepareRefs(ctx context.Context, ups []RefUpdate) *PreparedRefs {
	p := &PreparedRefs{r: r, ctx: ctx, ups: ups, errs: make([]error, len(ups)), locks: make([]*refLock, len(ups))}
	for i, u := range ups {
		if u.New.IsZero() {
			continue
		}
		p.locks[i], p.errs[i] = r.refs.lockForUpdate(ctx, u)
		if p.errs[i] == nil {
			if _, err := p.locks[i].f.Write([]byte(u.New.String() + "\n")); err != nil {
				p.errs[i] = fmt.Errorf("update ref %s: %w", u.Name, err)
			}
		}
	}
	inParallel(len(ups), func(i int) {
		if p.errs[i] == nil && p.locks[i] != nil {
			if err := p.locks[i].f.Sync(); err != nil {
				p.errs[i] = fmt.Errorf("update ref %s: %w", ups[i].Name, err)
			}
		}
	})
	return p
}

// PreparedRefs are ref updates whose new values are durable in their lock
// files, waiting to be renamed into place (Repo.PrepareRefs).
type PreparedRefs struct {
	r     *Repo
	ctx   context.Context
	ups   []RefUpdate
	locks []*refLock
	errs  []error
}

// Commit installs the prepared updates that include selects (all when
// include is nil): the objects they name must be durable by now. The lock
// files are renamed over the refs and their directories fsynced together.
// errs[i] is update i's result (nil for one not selected, which is not
// made).
func (p *PreparedRefs) Commit(include []bool) []error {
	errs := make([]error, len(p.ups))
	dirs := map[string][]int{}
	installed := 0
	for i, u := range p.ups {
		if include != nil && !include[i] {
			continue
		}
		if errs[i] = p.errs[i]; errs[i] != nil {
			continue
		}
		if u.New.IsZero() { // a deletion: no content to share a sync for
			errs[i] = p.r.refs.update(p.ctx, u.Name, u.New, u.Old)
			continue
		}
		l := p.locks[i]
		if err := l.install(); err != nil {
			errs[i] = fmt.Errorf("update ref %s: %w", u.Name, err)
			continue
		}
		if installed++; installed == 1 && len(p.ups) > 1 {
			failpoint.Hit(failpoint.RefsPartlyMoved)
		}
		dirs[filepath.Dir(l.path)] = append(dirs[filepath.Dir(l.path)], i)
	}
	dirList := slices.Collect(maps.Keys(dirs))
	inParallel(len(dirList), func(j int) {
		if err := durable.SyncDir(dirList[j]); err != nil {
			for _, i := range dirs[dirList[j]] {
				errs[i] = fmt.Errorf("update ref %s: %w", p.ups[i].Name, err)
			}
		}
	})
	for i := range errs {
		errs[i] = p.r.noSpace(SpaceRefs, errs[i])
	}
	return errs
}

// Release lets go of every lock Commit did not install (all of them
// before Commit).
func (p *PreparedRefs) Release() {
	for _, l := range p.locks {
		if l != nil {
			l.release()
		}
	}
}

// lockForUpdate checks u, takes the lock of its loose ref and compares
// the ref's value with u.Old; the caller releases the lock.
func (r *refFiles) lockForUpdate(ctx context.Context, u RefUpdate) (*refLock, error) {
	if err := ValidateRefName(u.Name); err != nil {
		return nil, err
	}
	if u.Name == "HEAD" {
		return nil, fmt.Errorf("%w: HEAD is updated through its branch", ErrInvalidRef)
	}
	path := r.refPath(u.Name)
	if err := durable.MkdirAll(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("update ref %s: %w", u.Name, err)
	}
	lock, err := lockFile(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("update ref %s: %w", u.Name, err)
	}
	cur, _, err := r.readRefRaw(u.Name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		lock.release()
		return nil, err
	}
	if cur != u.Old {
		lock.release()
		return nil, &RefConflictError{Name: u.Name, Current: cur}
	}
	return lock, nil
}

// inParallel runs fn(0) … fn(n-1) concurrently (at most 16 at a time)
// and waits for them: concurrent fsyncs share the file system's journal
// commits.
func inParallel(n int, fn func(i int)) {
	if n <= 1 {
		if n == 1 {
			fn(0)
		}
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}

// removePackedRef rewrites packed-refs without name, under its own lock.
func (r *refFiles) removePackedRef(ctx context.Context, name RefName) error {
	path := filepath.Join(r.gitDir, "packed-refs")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !bytes.Contains(b, []byte(" "+string(name)+"\n")) {
		return nil
	}
	lock, err := lockFile(ctx, path)
	if err != nil {
		return err
	}
	defer lock.release()
	b, err = os.ReadFile(path) // again, under the lock
	if err != nil {
		return err
	}
	var out bytes.Buffer
	skipPeeled := false
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if skipPeeled && strings.HasPrefix(line, "^") {
			continue
		}
		skipPeeled = false
		if _, n, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " "); ok && n == string(name) && line[0] != '#' {
			skipPeeled = true
			continue
		}
		out.WriteString(line)
	}
	if err := lock.commit(out.Bytes()); err != nil {
		return err
	}
	return durable.SyncDir(r.gitDir)
}

// RemoveStaleLocks deletes the lock files of refs under prefix (a
// directory of refs such as "refs/sessions/<id>/") and returns how many it
// removed. Only for refs this process alone writes: a lock found there
// when the owner starts was left by a crash (git never breaks a lock; a
// person must). Branch refs must never be unlocked this way.
func (r *Repo) RemoveStaleLocks(prefix RefName) (int, error) {
	if err := ValidateRefName(RefName(strings.TrimSuffix(string(prefix), "/"))); err != nil {
		return 0, err
	}
	root := r.refs.refPath(prefix)
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".lock") {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
