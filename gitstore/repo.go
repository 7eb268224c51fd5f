package gitstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/sessiond/sessiond/gitstore/housekeeping"
	"github.com/sessiond/sessiond/internal/durable"
)

// Options tunes a Repo. The zero value gives the defaults.
type Options struct {
	// NoSpace, when set, wraps the error of a write that failed for lack
	// of space (ENOSPC, EDQUOT) before it is returned, with the part of
	// the repository that is full (SpaceObjects, SpaceRefs): the registry
	// of repositories makes it the error kind the API answers with 507.
	NoSpace func(part string, err error) error
	// TreeCacheSize is how many decoded trees the LRU keeps (default
	// 4,096: a few KiB each, so about 10 MiB; the 100,000-file repository
	// has 2,000 directories, and each session's writes add a few).
	TreeCacheSize int
	// BlobCacheSize is how many small blobs the LRU keeps (default 4,096).
	BlobCacheSize int
	// BlobCacheMaxBytes is the largest blob the blob cache holds (default
	// 16 KiB), which bounds the cache at 64 MiB by default.
	BlobCacheMaxBytes int
	// OwnIndexSize is how many objects of the packs this Repo wrote it
	// indexes in memory, for reading them without go-git (default 65,536,
	// about 5 MiB). Past it, the oldest packs are forgotten and read
	// through go-git like any other pack (as is a pack of more objects),
	// so the index does not grow with every object a long-running daemon
	// writes.
	OwnIndexSize int
	// Readers is how many go-git storages serve reads in parallel
	// (default 2 × GOMAXPROCS).
	Readers int
	// Housekeeping decides what housekeeping does (package housekeeping).
	Housekeeping housekeeping.HeuristicStrategy
	// HousekeepInterval is how often housekeeping runs in the background
	// (default 10 minutes). It also runs when the Repo opens and after
	// every housekeeping.RunEvery packs this Repo writes. Negative: never
	// in the background, only when Housekeep is called.
	HousekeepInterval time.Duration
	// Logger reports what housekeeping could not do; slog.Default() when
	// nil.
	Logger *slog.Logger
	// Origin, when not "", is the git URL the repository is a clone of
	// (remote.go): Fetch brings its branches and tags, Publish moves a
	// branch there first, by compare-and-swap.
	Origin string

	runHook func() // for tests: called as each housekeeping run starts
}

func (o *Options) fill() {
	if o.TreeCacheSize <= 0 {
		o.TreeCacheSize = 1 << 12
	}
	if o.BlobCacheSize <= 0 {
		o.BlobCacheSize = 4096
	}
	if o.BlobCacheMaxBytes <= 0 {
		o.BlobCacheMaxBytes = 16 << 10
	}
	if o.OwnIndexSize <= 0 {
		o.OwnIndexSize = 1 << 16
	}
	if o.Readers <= 0 {
		o.Readers = 2 * runtime.GOMAXPROCS(0)
	}
	if o.HousekeepInterval == 0 {
		o.HousekeepInterval = 10 * time.Minute
	}
}

// Repo is an open git repository. It is safe for concurrent use: go-git's
// storages are not, so each one is lent to one goroutine at a time from a
// pool, and everything handed out (trees, commits, blob bytes) is an
// immutable copy.
type Repo struct {
	gitDir  string // the repository's git directory (".git" or the bare repo)
	workDir string // the work tree of a non-bare repository, else ""
	opts    Options

	// pool lends the go-git storages (storagePool); refs reads and
	// writes the ref files (refs.go).
	pool *storagePool
	refs refFiles

	trees *lru.Cache[OID, *Tree]
	blobs *lru.Cache[OID, []byte]

	packs   *ownPacks   // objects this process wrote into packs
	checks  packChecks  // which packs the storages may see
	bad     badLoose    // loose objects found corrupt
	locator packLocator // which pack holds an object, for freshening

	// hk runs housekeeping (package housekeeping) over the object
	// directory (objectDir, housekeep.go).
	hk *housekeeping.Manager
	// meta is what housekeeping knows of each pack listed (packmeta.go).
	meta packMetas

	// reach knows which commits the shared refs reach, for scoped
	// resolutions (scope.go, reach.go).
	reach *reach

	closeOnce sync.Once

	// alternates are the object directories of objects/info/alternates,
	// opened read-only (alternates.go).
	alternates alternateSet

	// fetchMu serializes the fetches from the origin (remote.go), so two
	// never race for the same ref locks.
	fetchMu sync.Mutex
}

// Open opens the repository at path: a work tree with a .git directory (or
// .git file), or a bare repository.
func Open(path string, opts ...Options) (*Repo, error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	o.fill()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open %q: %w", path, err)
	}
	gitDir, workDir, err := findGitDir(abs)
	if err != nil {
		return nil, err
	}
	self := filepath.Join(gitDir, "objects")
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	return openRepo(gitDir, workDir, o, map[string]bool{self: true}, 0)
}

// openRepo opens the repository at gitDir and, depth levels down from the
// repository opened, its alternates (alternates.go).
func openRepo(gitDir, workDir string, o Options, seen map[string]bool, depth int) (*Repo, error) {
	r := &Repo{gitDir: gitDir, workDir: workDir, opts: o}
	r.trees, _ = lru.New[OID, *Tree](o.TreeCacheSize)
	r.blobs, _ = lru.New[OID, []byte](o.BlobCacheSize)
	r.packs = newOwnPacks(o.OwnIndexSize)
	r.reach = newReach()
	alts, err := openAlternates(gitDir, Options{TreeCacheSize: 16, BlobCacheSize: 16, BlobCacheMaxBytes: 1, Readers: o.Readers}, seen, depth)
	if err != nil {
		return nil, fmt.Errorf("open %q: %w", gitDir, err)
	}
	r.alternates = alts
	r.refs = refFiles{gitDir: gitDir, packed: &packedCache{}}
	r.pool = &storagePool{gitDir: gitDir, opts: o, checks: &r.checks, bad: &r.bad, meta: &r.meta,
		readers: make(chan *filesystem.Storage, o.Readers)}
	for i := 0; i < o.Readers; i++ {
		r.pool.readers <- r.pool.newStorage()
	}
	r.pool.packDirMod = r.pool.statPackDir()
	r.hk = housekeeping.Start(&objectDir{Repo: r}, housekeeping.Config{Strategy: o.Housekeeping,
		Interval: o.HousekeepInterval, Logger: o.Logger, Name: gitDir, RunHook: o.runHook})
	return r, nil
}

// storagePool lends go-git's storages, which are not safe to share, to
// one goroutine at a time, and replaces them when the pack directory
// changed under them (git gc, a push, another process, housekeeping):
// it owns the pool, the objects/pack mtime the storages last indexed and
// meta's generation then. Its methods' receiver is r, as the Repo's,
// whose part it is.
type storagePool struct {
	gitDir string
	opts   Options
	checks *packChecks // which packs the storages may see
	bad    *badLoose   // loose objects found corrupt
	meta   *packMetas

	readers chan *filesystem.Storage // a storage is owned by whoever took it
	// swappedGen is meta's generation when the storages were last made:
	// a pack forgotten since may hide an object the storages do not know.
	swappedGen atomic.Int64
	// packDirMu guards packDirMod: the objects/pack mtime the pooled
	// storages last indexed; a lookup miss after it changed re-indexes.
	packDirMu  sync.Mutex
	packDirMod time.Time
}

func (r *storagePool) newStorage() *filesystem.Storage {
	fs := objectFS{Filesystem: osfs.New(r.gitDir, osfs.WithBoundOS()),
		packDir: filepath.Join(r.gitDir, "objects", "pack"), checks: r.checks, bad: r.bad, own: r.meta.isOwn}
	return filesystem.NewStorageWithOptions(fs,
		cache.NewObjectLRU(4*cache.MiByte),
		filesystem.Options{KeepDescriptors: true})
}

// findGitDir locates the git directory for a path given by a user.
func findGitDir(abs string) (gitDir, workDir string, err error) {
	dotGit := filepath.Join(abs, ".git")
	if fi, err := os.Stat(dotGit); err == nil {
		if fi.IsDir() {
			return dotGit, abs, nil
		}
		// A .git file ("gitdir: <path>") as in linked work trees.
		b, err := os.ReadFile(dotGit)
		if err != nil {
			return "", "", fmt.Errorf("open %q: %w", abs, err)
		}
		line := strings.TrimSpace(string(b))
		target, ok := strings.CutPrefix(line, "gitdir: ")
		if !ok {
			return "", "", fmt.Errorf("open %q: %w: malformed .git file", abs, ErrNotRepository)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(abs, target)
		}
		if common, err := os.ReadFile(filepath.Join(target, "commondir")); err == nil {
			c := strings.TrimSpace(string(common))
			if !filepath.IsAbs(c) {
				c = filepath.Join(target, c)
			}
			target = c
		}
		return filepath.Clean(target), abs, nil
	}
	if isGitDir(abs) {
		return abs, "", nil
	}
	return "", "", fmt.Errorf("open %q: %w", abs, ErrNotRepository)
}

func isGitDir(dir string) bool {
	for _, name := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}

// Init creates an empty repository at path (bare or with a work tree) whose
// HEAD names refs/heads/main, and opens it. It refuses a path that already
// holds a repository.
func Init(path string, bare bool, opts ...Options) (*Repo, error) {
	gitDir := path
	if !bare {
		gitDir = filepath.Join(path, ".git")
	}
	if isGitDir(gitDir) {
		return nil, fmt.Errorf("init %q: %w", path, os.ErrExist)
	}
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(gitDir, d), 0o755); err != nil {
			return nil, fmt.Errorf("init %q: %w", path, err)
		}
	}
	config := "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = " + fmt.Sprint(bare) + "\n"
	if !bare {
		config += "\tlogallrefupdates = true\n"
	}
	if err := durable.WriteFile(filepath.Join(gitDir, "config"), []byte(config), 0o644); err != nil {
		return nil, fmt.Errorf("init %q: %w", path, err)
	}
	if err := durable.WriteFile(filepath.Join(gitDir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		return nil, fmt.Errorf("init %q: %w", path, err)
	}
	return Open(path, opts...)
}

// GitDir returns the repository's git directory.
func (r *Repo) GitDir() string { return r.gitDir }

// WorkDir returns the work tree of a non-bare repository, or "" if bare.
func (r *Repo) WorkDir() string { return r.workDir }

// Bare reports whether the repository has no work tree.
func (r *Repo) Bare() bool { return r.workDir == "" }

// Close releases the file descriptors the storages hold. The Repo must not
// be used afterwards.
func (r *Repo) Close() error {
	var errs []error
	r.closeOnce.Do(func() {
		r.hk.Close()
		for i := 0; i < r.opts.Readers; i++ {
			s := <-r.pool.readers
			if err := s.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		for _, alt := range r.alternates {
			if err := alt.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
}

// withStorage lends a pooled go-git storage to fn.
func (r *storagePool) withStorage(ctx context.Context, fn func(*filesystem.Storage) error) error {
	var s *filesystem.Storage
	select {
	case s = <-r.readers:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { r.readers <- s }()
	return fn(s)
}

func (r *storagePool) statPackDir() time.Time {
	fi, err := os.Stat(filepath.Join(r.gitDir, "objects", "pack"))
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// refreshIfPacksChanged makes every pooled storage re-read the pack
// indexes when objects/pack changed since they last did (git gc, a push,
// or another process). It reports whether it did.
func (r *storagePool) refreshIfPacksChanged(ctx context.Context) bool {
	return r.refreshStorages(ctx, false)
}

// refreshIfPackForgotten replaces the storages when an own pack, hidden
// from them, was forgotten since they were made (another process merged
// and deleted it: the pack holding its objects now may be one they have
// not listed). It reports whether it did.
func (r *storagePool) refreshIfPackForgotten(ctx context.Context) bool {
	if r.meta.generation() == r.swappedGen.Load() {
		return false
	}
	return r.refreshStorages(ctx, true)
}

// refreshStorages replaces every pooled storage, when objects/pack changed
// since they last did or when forced (after a consolidation, so they let
// go of the deleted packs' descriptors).
func (r *storagePool) refreshStorages(ctx context.Context, force bool) bool {
	return r.swapStorages(ctx, force, nil)
}

// swapStorages takes every pooled storage, so none is mid-read, runs
// change (if any: a change to the pack directory that no reader of this
// process may see half done), and replaces the storages with fresh ones
// when the directory changed or when forced.
func (r *storagePool) swapStorages(ctx context.Context, force bool, change func()) bool {
	r.packDirMu.Lock()
	defer r.packDirMu.Unlock()
	if change == nil && !force && r.statPackDir().Equal(r.packDirMod) {
		return false
	}
	taken := make([]*filesystem.Storage, 0, r.opts.Readers)
	for range r.opts.Readers {
		select {
		case s := <-r.readers:
			taken = append(taken, s)
		case <-ctx.Done():
			for _, s := range taken {
				r.readers <- s
			}
			return false
		}
	}
	if change != nil {
		change()
	}
	mod := r.statPackDir()
	if mod.Equal(r.packDirMod) && !force && change == nil {
		for _, s := range taken {
			r.readers <- s
		}
		return false
	}
	r.packDirMod = mod
	r.swappedGen.Store(r.meta.generation())
	for i, s := range taken {
		// Packs may have been deleted: reopen to drop stale descriptors.
		_ = s.Close()
		taken[i] = r.newStorage()
	}
	for _, s := range taken {
		r.readers <- s
	}
	return true
}

// rawObject is an object's kind and full content.
type rawObject struct {
	kind Kind
	data []byte
}

// readObject returns the content of object id, from this process's own
// packs, or through go-git (loose objects and every other pack). A miss
// or a failed read is tried again once the storages have re-read the pack
// directory: a consolidation or git gc may have replaced the pack a
// storage had listed. What is still absent then is an *ObjectError with
// ErrMissingObject; an object that does not decode, one with ErrCorrupt.
func (r *Repo) readObject(ctx context.Context, id OID) (rawObject, error) {
	if err := ctx.Err(); err != nil {
		return rawObject{}, err
	}
	if obj, ok := r.packs.read(id); ok {
		return obj, nil
	}
	if obj, ok := r.readOwnDisk(id); ok {
		return obj, nil
	}
	obj, err := r.readGoGit(ctx, id)
	if err != nil && ctx.Err() == nil {
		// This process's housekeeping may have packed the object (a loose
		// file, or a pack it merged) into a new pack of its own meanwhile.
		if obj, ok := r.packs.read(id); ok {
			return obj, nil
		}
		if obj, ok := r.readOwnDisk(id); ok {
			return obj, nil
		}
		if r.pool.refreshIfPacksChanged(ctx) {
			obj, err = r.readGoGit(ctx, id)
		}
	}
	if len(r.alternates) > 0 && absent(err) {
		return r.alternates.read(ctx, id, err)
	}
	return obj, err
}

// readOwnDisk reads id from an own pack that this process does not index
// in memory, through the pack's index on disk (packMetas.find). A pack
// that went meanwhile (merged by another process) is forgotten, and the
// object looked for again.
func (r *Repo) readOwnDisk(id OID) (rawObject, bool) {
	packDir := filepath.Join(r.gitDir, "objects", "pack")
	for attempt := 0; attempt < 3; attempt++ {
		loc, ok := r.meta.find(packDir, id)
		if !ok {
			return rawObject{}, false
		}
		obj, err := readPacked(loc)
		if err == nil {
			return obj, true
		}
		r.meta.forget(strings.TrimSuffix(filepath.Base(loc.path), ".pack"))
	}
	return rawObject{}, false
}

// readGoGit reads id through a pooled storage. A storage whose pack index
// failed to load (a pack removed between listing and opening) is made to
// re-read it, and a loose object that does not inflate is hidden so the
// packs are searched, as git does.
func (r *Repo) readGoGit(ctx context.Context, id OID) (rawObject, error) {
	var obj rawObject
	looseBad := false
	err := r.pool.withStorage(ctx, func(s *filesystem.Storage) error {
		var err error
		// A failure other than "not found" is a pack or index that went
		// between the storage's listing and its opening it (another
		// process's consolidation or git gc, deleting pack after pack):
		// list again, a few times.
		for attempt := 0; attempt < 5; attempt++ {
			obj, err = readEncoded(s, id)
			if err == nil {
				break
			}
			if errors.Is(err, plumbing.ErrObjectNotFound) {
				if attempt > 0 {
					break
				}
				// The storage may have listed the packs before the one
				// holding id appeared (a write or consolidation within
				// the directory's mtime granularity): list them again.
				s.Reindex()
				continue
			}
			if r.looseCorrupt(id) {
				looseBad = true
				r.bad.set(looseRel(id), true)
			}
			s.Reindex()
		}
		return err
	})
	switch {
	case err == nil:
		return obj, nil
	case ctx.Err() != nil:
		return rawObject{}, ctx.Err()
	case errors.Is(err, plumbing.ErrObjectNotFound) && looseBad:
		return rawObject{}, corruptObject(id, "loose object does not inflate")
	case errors.Is(err, plumbing.ErrObjectNotFound):
		return rawObject{}, missingObject(id)
	}
	return rawObject{}, corruptObject(id, err.Error())
}

func readEncoded(s *filesystem.Storage, id OID) (rawObject, error) {
	eo, err := s.EncodedObject(plumbing.AnyObject, plumbing.Hash(id))
	if err != nil {
		return rawObject{}, err
	}
	rd, err := eo.Reader()
	if err != nil {
		return rawObject{}, err
	}
	defer rd.Close()
	data := make([]byte, eo.Size())
	if _, err := io.ReadFull(rd, data); err != nil {
		return rawObject{}, err
	}
	return rawObject{kind: Kind(eo.Type()), data: data}, nil
}

// looseCorrupt reports whether id's loose file exists and fails to
// inflate whole.
func (r *Repo) looseCorrupt(id OID) bool {
	b, err := os.ReadFile(loosePath(r.gitDir, id))
	if err != nil {
		return false
	}
	_, err = inflateLoose(b)
	return err != nil
}

// HasObject reports whether the repository holds object id. It never
// re-indexes packs, so it stays cheap for ids that do not exist.
func (r *Repo) HasObject(ctx context.Context, id OID) (bool, error) {
	if r.packs.has(id) {
		return true, nil
	}
	if _, ok := r.meta.find(filepath.Join(r.gitDir, "objects", "pack"), id); ok {
		return true, nil
	}
	found, err := r.hasGoGit(ctx, id)
	if err != nil && ctx.Err() == nil && r.pool.refreshIfPacksChanged(ctx) {
		found, err = r.hasGoGit(ctx, id)
	}
	if err == nil && !found && r.pool.refreshIfPackForgotten(ctx) {
		found, err = r.hasGoGit(ctx, id)
	}
	if err == nil && !found && len(r.alternates) > 0 {
		return r.alternates.has(ctx, id)
	}
	return found, err
}

func (r *Repo) hasGoGit(ctx context.Context, id OID) (bool, error) {
	found := false
	err := r.pool.withStorage(ctx, func(s *filesystem.Storage) error {
		var err error
		for attempt := 0; attempt < 3; attempt++ {
			err = s.HasEncodedObject(plumbing.Hash(id))
			switch {
			case err == nil:
				found = true
				return nil
			case errors.Is(err, plumbing.ErrObjectNotFound):
				return nil
			}
			s.Reindex()
		}
		return fmt.Errorf("has object %s: %v", id, err)
	})
	return found, err
}

// readKind reads object id and checks its kind.
func (r *Repo) readKind(ctx context.Context, id OID, want Kind) ([]byte, error) {
	obj, err := r.readObject(ctx, id)
	if err != nil {
		return nil, err
	}
	if obj.kind != want {
		return nil, fmt.Errorf("object %s is a %s, not a %s: %w", id, obj.kind, want, ErrWrongKind)
	}
	return obj.data, nil
}

// ReadBlob returns the content of blob id. The slice is shared with the
// cache: callers must not modify it.
func (r *Repo) ReadBlob(ctx context.Context, id OID) ([]byte, error) {
	if b, ok := r.blobs.Get(id); ok {
		return b, nil
	}
	data, err := r.readKind(ctx, id, KindBlob)
	if err != nil {
		return nil, err
	}
	if len(data) <= r.opts.BlobCacheMaxBytes {
		r.blobs.Add(id, data)
	}
	return data, nil
}

// ReadBlobRange returns up to n bytes of blob id starting at off; fewer at
// the end of the blob, none past it. n < 0 means to the end.
func (r *Repo) ReadBlobRange(ctx context.Context, id OID, off, n int64) ([]byte, error) {
	if off < 0 {
		return nil, fmt.Errorf("read blob %s: negative offset %d", id, off)
	}
	data, err := r.ReadBlob(ctx, id)
	if err != nil {
		return nil, err
	}
	size := int64(len(data))
	if off >= size {
		return []byte{}, nil
	}
	end := size
	if n >= 0 && off+n < size {
		end = off + n
	}
	return data[off:end], nil
}

// BlobSize returns the size in bytes of blob id, reading only the object
// header when the blob is not cached.
func (r *Repo) BlobSize(ctx context.Context, id OID) (int64, error) {
	if b, ok := r.blobs.Get(id); ok {
		return int64(len(b)), nil
	}
	if loc, ok := r.packs.loc(id); ok {
		return int64(loc.size), nil
	}
	if loc, ok := r.meta.find(filepath.Join(r.gitDir, "objects", "pack"), id); ok {
		if _, size, err := entryHeader(loc); err == nil {
			return int64(size), nil
		}
	}
	var size int64
	err := r.pool.withStorage(ctx, func(s *filesystem.Storage) error {
		var err error
		size, err = s.EncodedObjectSize(plumbing.Hash(id))
		return err
	})
	if err != nil {
		// Not found through the pool (or a repack under it): the full read
		// path knows how to recover.
		data, rerr := r.ReadBlob(ctx, id)
		if rerr != nil {
			return 0, rerr
		}
		return int64(len(data)), nil
	}
	return size, nil
}
