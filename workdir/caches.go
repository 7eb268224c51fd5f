package workdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Shared tool caches. Each repository has one directory of tool caches
// under <dir>/caches/<repo>, mounted read-write at CachesInside in every
// command of that repository's sessions, with the environment pointing
// the tools at it (toolCacheTable). So the second session's build finds
// the standard library compiled and the modules downloaded, and, with the
// view at one path for every session, its packages' results too.
//
// Only caches whose tools make concurrent use by several processes safe
// (content-addressed entries written by rename, or the tool's own locks)
// are in the table. A session that must not share (its policy limits
// reads, so hidden content must not reach what another session reads, or
// it asked for private caches) gets the same layout in its own scratch
// directory, mounted at the same path.
//
// Sharing means the sessions of one repository trust each other's cache
// writes: a command can put a wrong entry in a shared cache. Sessions
// that must not trust each other ask for private caches.
//
// Unisolated (the kernel refuses namespaces), there is no mount: the
// environment names the host directory itself. The caches are still
// shared (such a command could reach them, and everything else of the
// daemon's, anyway), but each view lives at its own path there, so only
// what does not key on the view's path (the standard library, the
// downloaded modules) is found again.
//
// The shared caches of a repository are bounded by a byte budget, trimmed
// least recently used after a command ends and no other command of that
// repository runs; a command that starts while a trim runs waits for it,
// so a trim never runs during a command of its repository.

// CachesInside is where a command's tool caches appear inside its
// namespace.
const CachesInside = "/cache"

// toolCache is one row of toolCacheTable.
type toolCache struct {
	// Dir is the cache's directory below the repository's cache
	// directory; empty for a cache kept in the session's home.
	Dir string
	// Env is the variable that points the tool at the cache; Extra are
	// further variables set with it.
	Env   string
	Extra []string
	// Whole: the cache is trimmed only as a whole (its entries depend on
	// each other, as a module's extracted directory on its files);
	// otherwise each file is an entry of its own that the tool treats as
	// a miss when it is gone.
	Whole bool
	// Why says what makes concurrent use safe (README's table).
	Why string
}

// toolCacheTable lists the caches every command of a repository's
// sessions gets. Keep the README's table ("Environments: shared caches")
// in step.
var toolCacheTable = []toolCache{
	{Dir: "go-build", Env: "GOCACHE", Why: "content-addressed files, each written to a temporary name and renamed"},
	{Dir: "go-mod", Env: "GOMODCACHE", Extra: []string{"GOFLAGS=-modcacherw"}, Whole: true, Why: "the go command locks each module while it downloads and extracts it; -modcacherw keeps the cache removable"},
	{Dir: "npm", Env: "npm_config_cache", Why: "cacache: content-addressed entries written by rename"},
	{Dir: "pip", Env: "PIP_CACHE_DIR", Why: "HTTP and wheel entries written to a temporary file and renamed"},
	{Dir: "uv", Env: "UV_CACHE_DIR", Whole: true, Why: "uv's cache is documented as safe for concurrent readers and writers (its own locks)"},
	{Dir: "cargo", Env: "CARGO_HOME", Whole: true, Why: "cargo locks its registry and git caches with the lock file at CARGO_HOME's root, so the whole CARGO_HOME is shared (its config and installed binaries too)"},
	{Env: "XDG_CACHE_HOME", Why: "not shared: the tools that use it make no general promise, so it is the session's own ($HOME/.cache)"},
}

// Caches says which tool caches a command gets.
type Caches struct {
	// Repo names the repository whose shared caches the command uses;
	// empty: no tool caches (the command's environment is left alone).
	Repo string
	// Private gives the command its session's own caches instead.
	Private bool
}

// toolCaches owns the repositories' shared cache directories. mu guards
// repos; wg counts trims in flight.
type toolCaches struct {
	dir   string
	bytes int64

	mu    sync.Mutex
	cond  *sync.Cond
	repos map[string]*repoCaches
	wg    sync.WaitGroup
}

// repoCaches is one repository's state: the commands using its caches and
// whether a trim runs.
type repoCaches struct {
	running  int
	trimming bool
	// sweeping: a sweep of the caches runs; again: a command ended
	// meanwhile, so it sweeps once more when done.
	sweeping, again bool
}

func newToolCaches(dir string, bytes int64) *toolCaches {
	t := &toolCaches{dir: dir, bytes: bytes, repos: map[string]*repoCaches{}}
	t.cond = sync.NewCond(&t.mu)
	return t
}

// repoDir is the repository's shared cache directory.
func (t *toolCaches) repoDir(repo string) (string, error) {
	if repo == "." || repo == ".." || strings.ContainsAny(repo, "/\\\x00") {
		return "", fmt.Errorf("%w: repository name %q for a cache directory", ErrInvalid, repo)
	}
	return filepath.Join(t.dir, repo), nil
}

// use gives the command of scratch s the caches c says, adding the mount
// and the environment to spec, and returns what to call when the command
// has ended. A shared cache's repository counts the command as running
// until then; a trim in progress is waited for first.
func (t *toolCaches) use(s *Scratch, c Caches, isolated bool, spec *helperSpec) (done func(), err error) {
	if c.Repo == "" {
		return func() {}, nil
	}
	src := filepath.Join(s.dir, "cache")
	done = func() {}
	if !c.Private {
		if src, err = t.repoDir(c.Repo); err != nil {
			return nil, err
		}
		t.mu.Lock()
		r := t.repos[c.Repo]
		if r == nil {
			r = &repoCaches{}
			t.repos[c.Repo] = r
		}
		for r.trimming {
			t.cond.Wait()
		}
		r.running++
		t.mu.Unlock()
		done = func() { t.ended(c.Repo) }
	}
	for _, tc := range toolCacheTable {
		if tc.Dir == "" {
			continue
		}
		if err := os.MkdirAll(filepath.Join(src, tc.Dir), 0o700); err != nil {
			done()
			return nil, fmt.Errorf("workdir: tool cache: %w", err)
		}
	}
	at, home := src, envValue(spec.Env, "HOME")
	if isolated {
		at = CachesInside
		spec.Binds = append(spec.Binds, bindSpec{Src: src, Dst: CachesInside, Writable: true})
	}
	var env []string
	for _, tc := range toolCacheTable {
		if tc.Dir == "" {
			env = append(env, tc.Env+"="+filepath.Join(home, ".cache"))
			continue
		}
		env = append(env, tc.Env+"="+filepath.Join(at, tc.Dir))
		env = append(env, tc.Extra...)
	}
	spec.Env = withDefaults(spec.Env, env)
	return done, nil
}

// ended counts a command of repo as ended; the last one to end starts a
// trim when the repository's caches have a budget.
func (t *toolCaches) ended(repo string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.repos[repo]
	r.running--
	t.sweepLocked(repo, r)
	if r.running > 0 || t.bytes <= 0 || r.trimming {
		return
	}
	r.trimming = true
	dir, _ := t.repoDir(repo)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		_, _ = trimCaches(dir, t.bytes)
		t.mu.Lock()
		r.trimming = false
		t.cond.Broadcast()
		t.mu.Unlock()
	}()
}

// sweepLocked strips the setuid and setgid bits and file capabilities a
// command left in repo's shared caches, as the scratch's are after every
// command (the mounts are nosuid and the data directory private, so such
// a bit is inert meanwhile; it must not be waiting for a use outside). It
// runs beside the repository's commands (sweep resolves no path a
// command could plant), one at a time per repository, once more when a
// command ended during it. t.mu must be held.
func (t *toolCaches) sweepLocked(repo string, r *repoCaches) {
	if r.sweeping {
		r.again = true
		return
	}
	r.sweeping = true
	dir, _ := t.repoDir(repo)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		for {
			sweep(dir)
			t.mu.Lock()
			if !r.again {
				r.sweeping = false
				t.mu.Unlock()
				return
			}
			r.again = false
			t.mu.Unlock()
		}
	}()
}

// idle waits until no trim or sweep runs.
func (t *toolCaches) idle() { t.wg.Wait() }

// withDefaults appends to env each of defaults whose variable env does not
// set already: what the request sets wins.
func withDefaults(env, defaults []string) []string {
	for _, kv := range defaults {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") }) {
			env = append(env, kv)
		}
	}
	return env
}

func envValue(env []string, k string) string {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, k+"="); ok {
			return v
		}
	}
	return ""
}

// cacheEntry is a unit a trim removes: one file, or a whole cache.
type cacheEntry struct {
	path  string
	bytes int64
	used  time.Time
}

// trimCaches removes entries of the caches in dir, least recently used
// (the later of a file's access and modification times; for a cache
// trimmed whole, its most recent file's) first, until what is left fits
// in budget. It returns the bytes left.
func trimCaches(dir string, budget int64) (int64, error) {
	var entries []cacheEntry
	var total int64
	for _, tc := range toolCacheTable {
		if tc.Dir == "" {
			continue
		}
		root := filepath.Join(dir, tc.Dir)
		whole := cacheEntry{path: root}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil // gone meanwhile
			}
			used := info.ModTime()
			if a := accessTime(info); a.After(used) {
				used = a
			}
			total += info.Size()
			if tc.Whole {
				whole.bytes += info.Size()
				if used.After(whole.used) {
					whole.used = used
				}
				return nil
			}
			entries = append(entries, cacheEntry{path: p, bytes: info.Size(), used: used})
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("workdir: trim %s: %w", root, err)
		}
		if tc.Whole && whole.bytes > 0 {
			entries = append(entries, whole)
		}
	}
	if total <= budget {
		return total, nil
	}
	slices.SortFunc(entries, func(a, b cacheEntry) int { return a.used.Compare(b.used) })
	for _, e := range entries {
		if total <= budget {
			break
		}
		if err := removeAll(e.path); err != nil {
			return total, fmt.Errorf("workdir: trim %s: %w", e.path, err)
		}
		total -= e.bytes
	}
	return total, nil
}
