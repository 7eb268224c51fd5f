package housekeeping

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Report says what one housekeeping run did.
type Report struct {
	PacksBefore   int // packs with an index before the run
	PacksMerged   int // packs merged into the new pack
	PacksDeleted  int // superseded packs deleted (merged by this or an earlier run, of any process)
	LoosePacked   int // loose objects packed and deleted
	DebrisRemoved int
	NewPack       string // base name of the pack written, if any
}

// Repository is a repository's object directory as housekeeping drives
// it; package gitstore implements it. Its methods are called by one run at
// a time.
type Repository interface {
	// State lists what the object directory holds.
	State(ctx context.Context) (State, error)
	// Execute carries plan out (made from st), never losing an object.
	Execute(ctx context.Context, plan Plan, st State) (Report, error)
	// AtClose runs once, when the Manager closes and no run is in
	// progress: the repository deletes what its runs superseded.
	AtClose()
}

// Config configures a Manager. The zero value runs no background
// housekeeping.
type Config struct {
	Strategy HeuristicStrategy
	// Interval is how often a run starts in the background, besides one
	// at start and after every RunEvery packs written; zero or negative:
	// never in the background (Run only), and writers never wait.
	Interval time.Duration
	// Logger reports failed runs; slog.Default() when nil.
	Logger *slog.Logger
	// Name names the repository in the log (its git directory).
	Name string
	// RunHook, for tests, is called as each run starts, after it counted
	// the packs written before it.
	RunHook func()
}

// RunEvery is how many packs a repository writes between housekeeping
// runs.
const RunEvery = 8

var (
	runs = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sessiond_housekeeping_runs_total", Help: "Housekeeping runs of repositories' object directories.",
	})
	failures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sessiond_housekeeping_failures_total", Help: "Housekeeping runs that failed (logged; retried by the next run).",
	})
)

// Collectors are housekeeping's metrics, for the daemon's registry.
func Collectors() []prometheus.Collector { return []prometheus.Collector{runs, failures} }

// Manager runs the housekeeping of one repository: one run at a time, in
// the background at start, every Interval and after every RunEvery packs
// written, and holds writers back when runs fall behind.
type Manager struct {
	repo     Repository
	strategy HeuristicStrategy
	interval time.Duration
	log      *slog.Logger
	name     string
	runHook  func()

	// mu is held by the one run in progress.
	mu sync.Mutex
	// written counts packs written since a run last listed the directory.
	written atomic.Int32
	// round is closed when the run in progress, or the next one, ends
	// (then replaced); roundMu guards it.
	roundMu sync.Mutex
	round   chan struct{}
	// runsStarted and runsEnded count runs (one at a time, so they end in
	// the order they start).
	runsStarted, runsEnded atomic.Int64
	// kick wakes the background loop; stop ends it (and a run in
	// progress) and done is closed when it has.
	kick      chan struct{}
	stop      context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// Start returns the Manager of repo and, with a positive Interval, starts
// its background loop (a first run at once).
func Start(repo Repository, cfg Config) *Manager {
	m := &Manager{repo: repo, strategy: cfg.Strategy.WithDefaults(), interval: cfg.Interval,
		log: cfg.Logger, name: cfg.Name, runHook: cfg.RunHook,
		round: make(chan struct{}), kick: make(chan struct{}, 1), done: make(chan struct{})}
	if m.log == nil {
		m.log = slog.Default()
	}
	ctx, stop := context.WithCancel(context.Background())
	m.stop = stop
	if m.interval > 0 {
		m.kick <- struct{}{} // at start
		go m.loop(ctx)
	} else {
		close(m.done)
	}
	return m
}

// loop runs housekeeping when kicked and every interval until Close.
func (m *Manager) loop(ctx context.Context) {
	defer close(m.done)
	tick := time.NewTicker(m.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.kick:
		case <-tick.C:
		}
		// Run logs and counts a failure; the next run retries.
		_, _ = m.Run(ctx)
	}
}

// Run looks at the object directory, asks the strategy what to do and
// has the repository do it. A run that finds another in progress returns
// at once with an empty report (the background loop's way: the one in
// progress does the work). A failure is logged and counted before it is
// returned.
func (m *Manager) Run(ctx context.Context) (Report, error) {
	if !m.mu.TryLock() {
		return Report{}, nil
	}
	defer m.mu.Unlock()
	return m.run(ctx)
}

// RunAfter is Run that, finding a run in progress, waits for it and then
// runs, so its listing sees everything written before the call (the way
// of an explicit request, Repo.Housekeep).
func (m *Manager) RunAfter(ctx context.Context) (Report, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.run(ctx)
}

func (m *Manager) run(ctx context.Context) (Report, error) {
	m.runsStarted.Add(1)
	defer m.endRound()
	defer m.runsEnded.Add(1)
	m.written.Store(0) // the listing below sees what was written until now
	if m.runHook != nil {
		m.runHook()
	}
	runs.Inc()
	st, err := m.repo.State(ctx)
	if err != nil {
		return Report{}, m.failed(ctx, err)
	}
	rep, err := m.repo.Execute(ctx, m.strategy.Plan(st), st)
	if err != nil {
		return rep, m.failed(ctx, err)
	}
	return rep, nil
}

// failed reports a run's error: logged and counted, unless the run was
// only cut short by its context ending (Close).
func (m *Manager) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return err
	}
	failures.Inc()
	m.log.Warn("housekeeping failed; the next run retries", "repository", m.name, "error", err)
	return err
}

// PackWritten counts a pack the repository wrote and kicks the loop every
// RunEvery packs. When the packs written since a run last listed the
// directory reach a quarter of the pack limit (housekeeping falls behind:
// runs slower than writers, many writers at once), the writer waits for
// runs to catch up before its write is acknowledged, so writers cannot
// outrun housekeeping past the limit. Without background housekeeping
// nobody waits.
func (m *Manager) PackWritten(ctx context.Context) {
	n := m.written.Add(1)
	if n%RunEvery == 0 {
		m.kickLoop()
	}
	if m.interval <= 0 {
		return
	}
	backlog := int32(max(m.strategy.PackLimit/4, RunEvery))
	if m.written.Load() < backlog {
		return
	}
	// Wait for the end of a run that starts after this pack was written
	// (so its listing holds it), once: the count of packs written meanwhile
	// is other writers' business, so a steady load cannot hold one writer
	// for good.
	target := m.runsStarted.Load() + 1
	for {
		m.roundMu.Lock()
		round := m.round
		m.roundMu.Unlock()
		if m.runsEnded.Load() >= target {
			return
		}
		m.kickLoop()
		select {
		case <-round:
		case <-m.done:
			return
		case <-ctx.Done():
			return // written and durable; only the wait is cut short
		}
	}
}

func (m *Manager) kickLoop() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// endRound wakes the writers waiting for a run to end.
func (m *Manager) endRound() {
	m.roundMu.Lock()
	close(m.round)
	m.round = make(chan struct{})
	m.roundMu.Unlock()
}

// Close ends the background loop (cutting a run in progress short), then
// lets the repository delete what its runs superseded.
func (m *Manager) Close() {
	m.closeOnce.Do(func() {
		m.stop()
		<-m.done
		m.mu.Lock()
		m.repo.AtClose()
		m.mu.Unlock()
	})
}
