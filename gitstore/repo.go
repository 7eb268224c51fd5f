package gitstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Options tunes a Repo. The zero value gives the defaults.
type Options struct {
	// TreeCacheSize is how many decoded trees the LRU keeps (default
	// 4,096: a few KiB each, so about 10 MiB; the 100,000-file repository
	// has 2,000 directories, and each session's writes add a few).
	TreeCacheSize int
	// BlobCacheSize is how many small blobs the LRU keeps (default 4,096).
	BlobCacheSize int
	// BlobCacheMaxBytes is the largest blob the blob cache holds (default
	// 16 KiB), which bounds the cache at 64 MiB by default.
	BlobCacheMaxBytes int
	// Readers is how many go-git storages serve reads in parallel
	// (default 2 × GOMAXPROCS).
	Readers int
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
	if o.Readers <= 0 {
		o.Readers = 2 * runtime.GOMAXPROCS(0)
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

	readers chan *filesystem.Storage // pool; a storage is owned by whoever took it

	trees *lru.Cache[OID, *Tree]
	blobs *lru.Cache[OID, []byte]

	packs   *ownPacks   // objects this process wrote into packs
	locator packLocator // which pack holds an object, for freshening
	// compactMu serializes pack compaction.
	compactMu sync.Mutex

	// packDirMu guards packDirMod: the objects/pack mtime the pooled
	// storages last indexed; a lookup miss after it changed re-indexes.
	packDirMu  sync.Mutex
	packDirMod time.Time

	closeOnce sync.Once
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
	r := &Repo{gitDir: gitDir, workDir: workDir, opts: o}
	r.trees, _ = lru.New[OID, *Tree](o.TreeCacheSize)
	r.blobs, _ = lru.New[OID, []byte](o.BlobCacheSize)
	r.packs = newOwnPacks()
	r.readers = make(chan *filesystem.Storage, o.Readers)
	for i := 0; i < o.Readers; i++ {
		r.readers <- r.newStorage()
	}
	r.packDirMod = r.statPackDir()
	return r, nil
}

func (r *Repo) newStorage() *filesystem.Storage {
	return filesystem.NewStorageWithOptions(osfs.New(r.gitDir, osfs.WithBoundOS()),
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
func Init(path string, bare bool) (*Repo, error) {
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
	if err := writeFileDurable(filepath.Join(gitDir, "config"), []byte(config)); err != nil {
		return nil, fmt.Errorf("init %q: %w", path, err)
	}
	if err := writeFileDurable(filepath.Join(gitDir, "HEAD"), []byte("ref: refs/heads/main\n")); err != nil {
		return nil, fmt.Errorf("init %q: %w", path, err)
	}
	return Open(path)
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
		for i := 0; i < r.opts.Readers; i++ {
			s := <-r.readers
			if err := s.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
}

// withStorage lends a pooled go-git storage to fn.
func (r *Repo) withStorage(ctx context.Context, fn func(*filesystem.Storage) error) error {
	var s *filesystem.Storage
	select {
	case s = <-r.readers:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { r.readers <- s }()
	return fn(s)
}

func (r *Repo) statPackDir() time.Time {
	fi, err := os.Stat(filepath.Join(r.gitDir, "objects", "pack"))
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// refreshIfPacksChanged makes every pooled storage re-read the pack
// indexes when objects/pack changed since they last did (git gc, a push,
// or another process). It reports whether it did.
func (r *Repo) refreshIfPacksChanged(ctx context.Context) bool {
	r.packDirMu.Lock()
	defer r.packDirMu.Unlock()
	mod := r.statPackDir()
	if mod.Equal(r.packDirMod) {
		return false
	}
	r.packDirMod = mod
	// Take every storage so none is mid-read while its index is dropped.
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
// packs, or through go-git (loose objects and every other pack).
func (r *Repo) readObject(ctx context.Context, id OID) (rawObject, error) {
	if err := ctx.Err(); err != nil {
		return rawObject{}, err
	}
	if obj, ok, err := r.packs.read(id); ok || err != nil {
		return obj, err
	}
	obj, err := r.readGoGit(ctx, id)
	if err != nil && ctx.Err() == nil && r.refreshIfPacksChanged(ctx) {
		obj, err = r.readGoGit(ctx, id)
	}
	return obj, err
}

func (r *Repo) readGoGit(ctx context.Context, id OID) (rawObject, error) {
	var obj rawObject
	err := r.withStorage(ctx, func(s *filesystem.Storage) error {
		eo, err := s.EncodedObject(plumbing.AnyObject, plumbing.Hash(id))
		if err != nil {
			if errors.Is(err, plumbing.ErrObjectNotFound) {
				return fmt.Errorf("object %s: %w", id, ErrNotFound)
			}
			return fmt.Errorf("read object %s: %w", id, errors.Join(ErrCorrupt, errors.New(err.Error())))
		}
		rd, err := eo.Reader()
		if err != nil {
			return fmt.Errorf("read object %s: %v: %w", id, err, ErrCorrupt)
		}
		defer rd.Close()
		data := make([]byte, eo.Size())
		if _, err := io.ReadFull(rd, data); err != nil {
			return fmt.Errorf("read object %s: %v: %w", id, err, ErrCorrupt)
		}
		obj = rawObject{kind: Kind(eo.Type()), data: data}
		return nil
	})
	return obj, err
}

// HasObject reports whether the repository holds object id. It never
// re-indexes packs, so it stays cheap for ids that do not exist.
func (r *Repo) HasObject(ctx context.Context, id OID) (bool, error) {
	if r.packs.has(id) {
		return true, nil
	}
	found, err := r.hasGoGit(ctx, id)
	if err != nil && ctx.Err() == nil && r.refreshIfPacksChanged(ctx) {
		found, err = r.hasGoGit(ctx, id)
	}
	return found, err
}

func (r *Repo) hasGoGit(ctx context.Context, id OID) (bool, error) {
	found := false
	err := r.withStorage(ctx, func(s *filesystem.Storage) error {
		err := s.HasEncodedObject(plumbing.Hash(id))
		switch {
		case err == nil:
			found = true
		case errors.Is(err, plumbing.ErrObjectNotFound):
		default:
			return fmt.Errorf("has object %s: %v", id, err)
		}
		return nil
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
	var size int64
	err := r.withStorage(ctx, func(s *filesystem.Storage) error {
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
