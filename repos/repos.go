package repos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/secret"
)

// Repo is a git repository registered by name, as the store keeps it.
// What a repository is configured with beside its path (its origin, its
// environment) joins it here.
type Repo struct {
	Name string
	// Path is where the repository is on this node: the registered path,
	// or for a repository with an Origin this node's own clone of it
	// (under the data directory; the store keeps "" for it).
	Path string
	// Origin is the git URL a repository registered from a remote comes
	// from and its accepts and undos go to; "" for a local repository.
	Origin    string
	CreatedAt time.Time
}

// Policy is a repository's accept policy. A repository without one has
// the Registry's Config.Defaults.
type Policy struct {
	Repo string
	// RequiredApprovals is how many distinct approvals (on the current
	// revision, none outstanding against) an accept needs; 0: none (an
	// open changeset may be accepted, one with changes requested or
	// rejected may not).
	RequiredApprovals int
	// RefuseCheckedOut refuses accepts and undos onto the branch a
	// non-bare repository has checked out, as git push does with
	// receive.denyCurrentBranch=refuse. By default they go through and
	// update its index and work tree, as git's updateInstead does, when
	// those are clean (package worktree), and are refused naming what is
	// not clean otherwise. (The API's allow_checked_out is its negation.)
	RefuseCheckedOut bool
	// RefuseStaleReads makes an accept fail when a file the session read
	// changed on the branch since its base, instead of only reporting it.
	RefuseStaleReads bool
	// Exec says what commands run on the repository's sessions may use.
	Exec ExecPolicy
	// RequiredChecks are commands (argv) whose newest run by the session
	// must have passed on exactly the files of the revision accepted
	// (package changeset's checks); nil: none.
	RequiredChecks [][]string
}

// checkRequired refuses required checks no run could match: an empty
// argv, an empty or NUL-carrying argument, or the same argv twice.
func checkRequired(checks [][]string) error {
	seen := map[string]bool{}
	for i, argv := range checks {
		if len(argv) == 0 {
			return fmt.Errorf("%w: required_checks[%d]: an empty argv", record.ErrInvalid, i)
		}
		for _, a := range argv {
			if a == "" || strings.ContainsRune(a, 0) {
				return fmt.Errorf("%w: required_checks[%d]: argument %q: want a non-empty argument without NUL", record.ErrInvalid, i, a)
			}
		}
		k := strings.Join(argv, "\x00")
		if seen[k] {
			return fmt.Errorf("%w: required_checks[%d]: %q is named twice", record.ErrInvalid, i, strings.Join(argv, " "))
		}
		seen[k] = true
	}
	if len(checks) > 100 {
		return fmt.Errorf("%w: required_checks: %d, at most 100", record.ErrInvalid, len(checks))
	}
	return nil
}

// ExecPolicy is what commands run on a repository's sessions may use:
// the host's network or only their own loopback, and limits that narrow
// the daemon's (zero: the daemon's; never wider).
type ExecPolicy struct {
	// Network lets a command that asks for it share the host's network
	// (where the daemon allows that at all).
	Network bool `json:"network,omitempty"`
	// NetworkAllow, non-nil, lets a command that asks for the network
	// reach the destinations it lists (host names, wildcards, CIDRs)
	// through the daemon's egress proxy, and nothing else (network.go).
	NetworkAllow []string `json:"-"`
	MemoryBytes  int64    `json:"memory_bytes,omitempty"`
	Pids         int64    `json:"pids,omitempty"`
	CPUWeight    int64    `json:"cpu_weight,omitempty"`
	ScratchBytes int64    `json:"scratch_bytes,omitempty"`
	TmpBytes     int64    `json:"tmp_bytes,omitempty"`
	// ServiceIdleSeconds stops a session's services after this long
	// with no request through their ports and no command (0: 30 min).
	ServiceIdleSeconds int64 `json:"service_idle_seconds,omitempty"`
}

// check refuses a policy no command could run under.
func (e ExecPolicy) check() error {
	for name, v := range map[string]int64{"memory_bytes": e.MemoryBytes, "pids": e.Pids, "scratch_bytes": e.ScratchBytes, "tmp_bytes": e.TmpBytes, "service_idle_seconds": e.ServiceIdleSeconds} {
		if v < 0 {
			return fmt.Errorf("%w: exec.%s %d: want a positive number, or 0 for the daemon's", record.ErrInvalid, name, v)
		}
	}
	if e.CPUWeight < 0 || e.CPUWeight > 10000 {
		return fmt.Errorf("%w: exec.cpu_weight %d: want 1 to 10000, or 0 for the daemon's", record.ErrInvalid, e.CPUWeight)
	}
	return e.checkNetwork()
}

// Store keeps the registry's records (package db implements it). Errors
// are record's kinds: ErrDuplicate for a name taken, ErrNotFound for none.
type Store interface {
	// CreateRepo registers a repository; ErrDuplicate when the name is
	// taken.
	CreateRepo(ctx context.Context, r Repo) error
	GetRepo(ctx context.Context, name string) (Repo, error)
	// ListRepos returns all repositories ordered by name.
	ListRepos(ctx context.Context) ([]Repo, error)
	// SetRepoPolicy creates or replaces a repository's accept policy;
	// ErrNotFound when the repository does not exist.
	SetRepoPolicy(ctx context.Context, p Policy) error
	// GetRepoPolicy returns a repository's accept policy; ErrNotFound
	// when none was set.
	GetRepoPolicy(ctx context.Context, repo string) (Policy, error)
	// SetRepoEnvironment creates or replaces a repository's environment
	// (secrets sealed); ErrNotFound when the repository does not exist.
	SetRepoEnvironment(ctx context.Context, e Environment) error
	// GetRepoEnvironment returns a repository's environment; ErrNotFound
	// when none was set.
	GetRepoEnvironment(ctx context.Context, repo string) (Environment, error)
}

// Config configures a Registry.
type Config struct {
	Store Store
	// DataDir holds the repositories Init creates (under repos/).
	DataDir string
	// Defaults is the accept policy of repositories that have no Policy of
	// their own (see SetPolicy); its Repo is ignored.
	Defaults Policy
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Secrets seals and opens the repositories' secrets; nil: no secrets
	// can be set.
	Secrets *secret.Box
	// FetchTimeout bounds the clone of an origin at registration (default
	// 2 minutes).
	FetchTimeout time.Duration
}

// Registry is the registry of repositories.
type Registry struct {
	store    Store
	dataDir  string
	defaults Policy
	now      func() time.Time

	mu   sync.Mutex // guards open
	open map[string]*gitstore.Repo
	// cloneMu serializes the making of clones of origins (RegisterOrigin,
	// and Open on a node that has none yet), so two never write one
	// directory.
	cloneMu sync.Mutex
	// fetchTimeout bounds the fetch of an origin at registration.
	fetchTimeout time.Duration

	// settings are the policies and environment records read from the
	// store, kept for commands (settings.go).
	settings settings

	box   *secret.Box
	envMu sync.Mutex // serializes SetEnvironment
	// vars are the repositories' variables with their secrets opened,
	// dropped when an environment changes.
	varsMu sync.Mutex // guards vars
	vars   map[string]Variables
}

// New returns the registry over cfg.Store.
func New(cfg Config) *Registry {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = 2 * time.Minute
	}
	return &Registry{store: cfg.Store, dataDir: cfg.DataDir, defaults: cfg.Defaults, fetchTimeout: cfg.FetchTimeout,
		now:  func() time.Time { return now().UTC().Truncate(time.Microsecond) },
		open: make(map[string]*gitstore.Repo), box: cfg.Secrets, vars: make(map[string]Variables)}
}

// Close releases the open repositories. The store is the caller's.
func (g *Registry) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var errs []error
	for _, r := range g.open {
		errs = append(errs, r.Close())
	}
	clear(g.open)
	return errors.Join(errs...)
}

// Register registers the existing repository at path under name; a path
// that is a git URL (https://, ssh://, git://, file://) registers that
// origin (RegisterOrigin).
func (g *Registry) Register(ctx context.Context, name, path string) (Repo, error) {
	if gitstore.IsOriginURL(path) {
		return g.RegisterOrigin(ctx, name, path)
	}
	if err := validateName(name); err != nil {
		return Repo{}, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Repo{}, fmt.Errorf("%w: repository path %q: %v", record.ErrInvalid, path, err)
	}
	r, err := gitstore.Open(abs, repoOptions(name))
	if err != nil {
		return Repo{}, fmt.Errorf("%w: %v", record.ErrInvalid, err)
	}
	return g.add(ctx, name, abs, r)
}

// Init creates a bare repository named name under the data directory and
// registers it.
func (g *Registry) Init(ctx context.Context, name string) (Repo, error) {
	if err := validateName(name); err != nil {
		return Repo{}, err
	}
	if g.dataDir == "" {
		return Repo{}, fmt.Errorf("%w: no data directory to create repositories in", record.ErrInvalid)
	}
	if _, err := g.store.GetRepo(ctx, name); err == nil {
		return Repo{}, fmt.Errorf("repository %q: %w", name, record.ErrDuplicate)
	}
	path := filepath.Join(g.dataDir, "repos", name+".git")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return Repo{}, err
	}
	r, err := gitstore.Init(path, true, repoOptions(name))
	if err != nil {
		return Repo{}, fmt.Errorf("init repository %q: %w", name, err)
	}
	return g.add(ctx, name, path, r)
}

func (g *Registry) add(ctx context.Context, name, path string, r *gitstore.Repo) (Repo, error) {
	rec := Repo{Name: name, Path: path, Origin: r.Origin(), CreatedAt: g.now()}
	stored := rec
	if rec.Origin != "" {
		stored.Path = "" // each node's clone is its own
	}
	if err := g.store.CreateRepo(ctx, stored); err != nil {
		r.Close()
		return Repo{}, err // the store's error names the repository
	}
	g.settings.drop(name)
	g.mu.Lock()
	if old := g.open[name]; old != nil {
		old.Close()
	}
	g.open[name] = r
	g.mu.Unlock()
	return rec, nil
}

// RegisterOrigin registers the repository at the git URL origin under
// name: this node clones it under its data directory (clones/NAME.git)
// and fetches it again when it needs (Fetch, FetchAll); accepts and
// undos are pushed to it (gitstore.Repo.Publish). An origin that cannot
// be cloned is record.ErrInvalid naming the URL (without credentials),
// and nothing is registered nor left on disk.
func (g *Registry) RegisterOrigin(ctx context.Context, name, origin string) (Repo, error) {
	if err := validateName(name); err != nil {
		return Repo{}, err
	}
	if err := gitstore.CheckOriginURL(origin); err != nil {
		return Repo{}, fmt.Errorf("%w: %v", record.ErrInvalid, err)
	}
	if g.dataDir == "" {
		return Repo{}, fmt.Errorf("%w: no data directory to clone repositories in", record.ErrInvalid)
	}
	g.cloneMu.Lock()
	defer g.cloneMu.Unlock()
	if _, err := g.store.GetRepo(ctx, name); err == nil {
		return Repo{}, fmt.Errorf("repository %q: %w", name, record.ErrDuplicate)
	}
	path := g.clonePath(name)
	// A directory left by a registration that never reached the store is
	// no one's: start afresh.
	if err := os.RemoveAll(path); err != nil {
		return Repo{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, g.fetchTimeout)
	defer cancel()
	r, err := gitstore.Clone(cctx, origin, path, g.options(name, origin))
	if err != nil {
		return Repo{}, fmt.Errorf("%w: repository %q: %v", record.ErrInvalid, name, err)
	}
	rec, err := g.add(ctx, name, path, r)
	if err != nil {
		os.RemoveAll(path)
		return Repo{}, err
	}
	return rec, nil
}

// clonePath is where this node keeps its clone of the origin of the
// repository registered as name.
func (g *Registry) clonePath(name string) string {
	return filepath.Join(g.dataDir, "clones", name+".git")
}

// local is a stored record as this node sees it: a repository with an
// origin is at this node's clone.
func (g *Registry) local(r Repo) Repo {
	if r.Origin != "" {
		r.Path = g.clonePath(r.Name)
	}
	return r
}

// Fetch brings the origin of the repository registered as name into this
// node's clone (nothing for a local repository).
func (g *Registry) Fetch(ctx context.Context, name string) error {
	r, err := g.Open(ctx, name)
	if err != nil {
		return err
	}
	return r.Fetch(ctx)
}

// FetchAll fetches the origin of every repository that has one, for the
// daemon's periodic refresh; the errors of single repositories are
// joined, the others fetched regardless.
func (g *Registry) FetchAll(ctx context.Context) error {
	rs, err := g.store.ListRepos(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, rec := range rs {
		if rec.Origin == "" {
			continue
		}
		if err := g.Fetch(ctx, rec.Name); err != nil {
			errs = append(errs, fmt.Errorf("repository %q: %w", rec.Name, err))
		}
	}
	return errors.Join(errs...)
}

// options are the options the repository registered as name (with
// origin, "" for none) is opened with.
func (g *Registry) options(name, origin string) gitstore.Options {
	o := repoOptions(name)
	o.Origin = origin
	return o
}

// repoOptions are the options the repository registered as name is
// opened with: a write that finds its objects or refs full is a
// *record.NoSpaceError naming it.
func repoOptions(name string) gitstore.Options {
	return gitstore.Options{NoSpace: func(part string, err error) error {
		return &record.NoSpaceError{What: part, Repo: name, Err: err}
	}}
}

func validateName(name string) error {
	if name == "" || len(name) > 100 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != "" ||
		strings.HasPrefix(name, ".") {
		return fmt.Errorf("%w: repository name %q: use letters, digits, '-', '_' and '.'", record.ErrInvalid, name)
	}
	return nil
}

// Get returns a registered repository's record.
func (g *Registry) Get(ctx context.Context, name string) (Repo, error) {
	r, err := g.store.GetRepo(ctx, name)
	return g.local(r), err
}

// List returns the registered repositories.
func (g *Registry) List(ctx context.Context) ([]Repo, error) {
	rs, err := g.store.ListRepos(ctx)
	for i := range rs {
		rs[i] = g.local(rs[i])
	}
	return rs, err
}

// Probe is one repository's state for a readiness probe: Err is why it
// does not open, nil when it does.
type Probe struct {
	Name string
	Err  error
}

// Probe lists the registered repositories and opens each, for a readiness
// probe: err is the store's when the list cannot be read, and each
// Probe says whether its repository opens.
func (g *Registry) Probe(ctx context.Context) ([]Probe, error) {
	rs, err := g.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Probe, len(rs))
	for i, r := range rs {
		_, err := g.Open(ctx, r.Name)
		out[i] = Probe{Name: r.Name, Err: err}
	}
	return out, nil
}

// Branches returns the branches of a repository and their commits.
func (g *Registry) Branches(ctx context.Context, name string) ([]gitstore.Ref, error) {
	r, err := g.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return r.ListRefs(ctx, "refs/heads/")
}

// Open returns the open repository registered as name, opening it on
// first use; record.ErrNotFound when there is none.
func (g *Registry) Open(ctx context.Context, name string) (*gitstore.Repo, error) {
	g.mu.Lock()
	r := g.open[name]
	g.mu.Unlock()
	if r != nil {
		return r, nil
	}
	rec, err := g.store.GetRepo(ctx, name)
	if err != nil {
		return nil, err // the store's error names the repository
	}
	var opened *gitstore.Repo
	if rec.Origin != "" {
		opened, err = g.openClone(ctx, rec)
	} else {
		opened, err = gitstore.Open(rec.Path, repoOptions(name))
	}
	if err != nil {
		return nil, fmt.Errorf("repository %q: %w", name, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if r := g.open[name]; r != nil {
		opened.Close()
		return r, nil
	}
	g.open[name] = opened
	return opened, nil
}

// openClone opens this node's clone of a repository with an origin,
// cloning it first when this node has none (a node that joined after the
// registration, or whose data directory is new), and fetching it when it
// had one: it may have been down while the origin moved.
func (g *Registry) openClone(ctx context.Context, rec Repo) (*gitstore.Repo, error) {
	g.cloneMu.Lock()
	defer g.cloneMu.Unlock()
	path := g.clonePath(rec.Name)
	if _, err := os.Stat(filepath.Join(path, "HEAD")); err == nil {
		r, err := gitstore.Open(path, g.options(rec.Name, rec.Origin))
		if err != nil {
			return nil, err
		}
		// Best effort: a clone a little behind its origin still serves
		// (the periodic fetch and every accept catch up), an origin down
		// must not make the repository unusable here.
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = r.Fetch(fctx)
		return r, nil
	}
	cctx, cancel := context.WithTimeout(ctx, g.fetchTimeout)
	defer cancel()
	return gitstore.Clone(cctx, rec.Origin, path, g.options(rec.Name, rec.Origin))
}

// Hidden lists what a command run on a session's view must not see: the
// data directory and every registered repository (its path and git
// directory).
func (g *Registry) Hidden(ctx context.Context) []string {
	var out []string
	if g.dataDir != "" {
		out = append(out, g.dataDir)
	}
	repos, err := g.store.ListRepos(ctx)
	if err != nil {
		return out
	}
	for _, r := range repos {
		r = g.local(r)
		out = append(out, path.Clean(r.Path))
		g.mu.Lock()
		if o := g.open[r.Name]; o != nil {
			out = append(out, o.GitDir())
		}
		g.mu.Unlock()
	}
	return out
}

// Policy returns the policy of a repository (accept and exec): its own,
// or the defaults.
func (g *Registry) Policy(ctx context.Context, repo string) (Policy, error) {
	if _, err := g.Open(ctx, repo); err != nil {
		return Policy{}, err
	}
	p, gen, ok := g.settings.policies.get(repo)
	if ok {
		return p, nil
	}
	at := time.Now()
	p, err := g.store.GetRepoPolicy(ctx, repo)
	if errors.Is(err, record.ErrNotFound) {
		p, err = g.defaults, nil
		p.Repo = repo
	}
	if err != nil {
		return Policy{}, err
	}
	g.settings.policies.put(repo, gen, p, at)
	return p, nil
}

// SetPolicy sets a repository's own policy.
func (g *Registry) SetPolicy(ctx context.Context, p Policy) (Policy, error) {
	if p.RequiredApprovals < 0 || p.RequiredApprovals > 100 {
		return Policy{}, fmt.Errorf("%w: required approvals %d: use 0 to 100", record.ErrInvalid, p.RequiredApprovals)
	}
	if err := p.Exec.check(); err != nil {
		return Policy{}, err
	}
	if err := checkRequired(p.RequiredChecks); err != nil {
		return Policy{}, err
	}
	err := g.store.SetRepoPolicy(ctx, p)
	g.settings.drop(p.Repo)
	if err != nil {
		return Policy{}, err
	}
	return p, nil
}
