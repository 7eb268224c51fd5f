package graph

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
)

// EventOverlapDetected is the event type of an overlap between two live
// sessions.
const EventOverlapDetected = "overlap.detected"

// EventLog records the graph's events and wakes the streams that follow
// them (events.Log is one).
type EventLog interface {
	Append(ctx context.Context, e events.Event) error
}

// Config configures a Graph. Zero fields take defaults.
type Config struct {
	// Events receives overlap.detected events; without it overlaps are
	// tracked but not reported.
	Events EventLog
	// Logger reports what an observer cannot return: a blob that could
	// not be read, an event that could not be stored.
	Logger *slog.Logger
	// CachedFiles bounds the blobs whose symbols are kept (default 8,192).
	CachedFiles int
	// CachedBases bounds the base indexes kept (default 64).
	CachedBases int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Graph is the session graph of every repository of one engine: a base
// index per base tree, a delta per live session, and per repository the
// inverted index from path to the live sessions that changed it. It is a
// observer of the engine's committed mutations (Mutated, Closed).
type Graph struct {
	cfg   Config
	files *files
	bases *lru.Cache[baseKey, *Index]

	mu    sync.Mutex // guards repos, where and closed (not what a repoState holds)
	repos map[string]*repoState
	where map[uuid.UUID]*repoState // live session → its repository's state
	// closed: Close was called; nothing more is queued.
	closed bool

	// The workers (one per repository with queued work) run under ctx,
	// which Close cancels, and are joined by wg.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// beforeJob, when set (tests), runs in the worker before each job.
	beforeJob func()
}

type baseKey struct {
	repo *gitstore.Repo
	tree gitstore.OID
}

// New returns an empty graph.
func New(cfg Config) *Graph {
	cfg.CachedFiles = cmp.Or(cfg.CachedFiles, 8192)
	cfg.CachedBases = cmp.Or(cfg.CachedBases, 64)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	bases, err := lru.New[baseKey, *Index](cfg.CachedBases)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Graph{cfg: cfg, files: newFiles(cfg.CachedFiles), bases: bases,
		repos: map[string]*repoState{}, where: map[uuid.UUID]*repoState{}, ctx: ctx, cancel: cancel}
}

// Base returns the shared index of tree in repo, creating an empty one on
// first use; it fills in lazily.
func (g *Graph) Base(repo *gitstore.Repo, tree gitstore.OID) *Index {
	k := baseKey{repo, tree}
	if x, ok := g.bases.Get(k); ok {
		return x
	}
	x := &Index{repo: repo, tree: tree, files: g.files, dirs: map[string]*dirIndex{}}
	// Two callers racing here each build an index; the cache keeps one.
	if prev, ok, _ := g.bases.PeekOrAdd(k, x); ok {
		return prev
	}
	return x
}

func (g *Graph) repo(name string) *repoState {
	g.mu.Lock()
	defer g.mu.Unlock()
	rs := g.repos[name]
	if rs == nil {
		rs = &repoState{sessions: map[uuid.UUID]*sessionState{}, byPath: map[string]map[uuid.UUID]struct{}{}, reported: map[overlapKey]string{}}
		g.repos[name] = rs
	}
	return rs
}

func (g *Graph) lookupRepo(name string) *repoState {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.repos[name]
}

// Mutated queues the mutation for the session's repository's worker,
// which updates the session's delta with what it changed and reports
// overlaps with other live sessions of the repository. It returns at
// once: the engine calls it with the session's lock held, and parsing and
// trial merges must not hold that lock (see queue).
func (g *Graph) Mutated(_ context.Context, ev Mutation) {
	if ev.Ended {
		return
	}
	g.enqueue(g.repo(ev.Repo), ev.Session, job{ev: ev})
}

// Closed queues forgetting a session that reached a terminal state, after
// its queued mutation if any.
func (g *Graph) Closed(_ context.Context, repo string, id uuid.UUID) {
	rs := g.lookupRepo(repo)
	if rs == nil {
		return
	}
	g.enqueue(rs, id, job{closed: true})
}

// forget drops session id's delta.
func (g *Graph) forget(rs *repoState, id uuid.UUID) {
	g.mu.Lock()
	delete(g.where, id)
	g.mu.Unlock()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	st := rs.sessions[id]
	if st == nil {
		return
	}
	for p := range st.files {
		rs.unlink(p, st.id)
	}
	delete(rs.sessions, id)
}
