package session

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/workdir"
)

// Limits bound what one session may hold. Zero fields take the defaults of
// the specification.
type Limits struct {
	MaxFileBytes    int64 // one file: 64 MiB
	MaxEntries      int   // overlay entries per session: 100,000
	MaxOverlayBytes int64 // overlay content per session: 2 GiB
	// MaxLifetime caps a session's life however active it is (the absolute
	// TTL); zero means none.
	MaxLifetime time.Duration
}

func (l *Limits) fill() {
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = 64 << 20
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = 100_000
	}
	if l.MaxOverlayBytes <= 0 {
		l.MaxOverlayBytes = 2 << 30
	}
}

// Config configures a Manager.
type Config struct {
	Store Store
	// Repos opens the sessions' repositories.
	Repos *repos.Registry
	// Events wakes the event streams after the engine committed events.
	Events *events.Log
	Limits Limits
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// AllowCaseCollisions turns off the caseCollision path rule.
	AllowCaseCollisions bool
	// Observers learn of every committed mutation and closed session.
	Observers []Observer
	// Workdirs holds the sessions' view directories: an Executor runs
	// commands in them, and a finished session's scratch is removed from
	// them. Nil: no commands (NewExecutor's Exec is refused).
	Workdirs *workdir.Manager
	// IdleUnload is how long a loaded session may go unused before it is
	// unloaded from memory (it is loaded again from the store when next
	// used): DefaultIdleUnload when zero, never when negative. Finished
	// sessions are unloaded at once.
	IdleUnload time.Duration
	// Objects brings into this node's repository the objects a session
	// names (its base, its checkpoints, its overlay's blobs) when another
	// node wrote them: a cluster's. Nil: they are in this node's
	// repository.
	Objects Filler
}

// Filler makes objects ids, and everything they reach, present in r, the
// repository named repo (from wherever the cluster keeps them).
type Filler interface {
	Fill(ctx context.Context, repo string, r *gitstore.Repo, ids []gitstore.OID) error
}

// Manager is the session engine: it owns sessions, their lifecycle and
// the operations on them. It is composed of parts that own one job each:
// memory (which sessions are loaded, their locks, unloading), recorder
// (how a change becomes durable and who hears of it), and the repository
// registry and event log it is handed. It is safe for concurrent use:
// many sessions run in parallel, and the operations on one session are
// serialized by that session's lock.
type Manager struct {
	store    Store
	repos    *repos.Registry
	events   *events.Log
	limits   Limits
	now      func() time.Time
	ovOpts   overlay.Options
	workdirs *workdir.Manager

	mem      *memory
	recorder *recorder
	// services, when set, records what the session's services changed
	// (a capture point: checkpoint, submit; the Executor sets it).
	services func(ctx context.Context, id uuid.UUID) error
}

// captureServices records what the session's services changed, before
// a checkpoint or a submit takes the session's state. A command running
// meanwhile records it with its own changes.
func (m *Manager) captureServices(ctx context.Context, id uuid.UUID) error {
	if m.services == nil {
		return nil
	}
	if err := m.services(ctx, id); err != nil && !errors.Is(err, ErrBusy) {
		return err
	}
	return nil
}

// NewManager returns an engine over cfg.Store.
func NewManager(cfg Config) *Manager {
	cfg.Limits.fill()
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	clock := func() time.Time { return now().UTC().Truncate(time.Microsecond) }
	ovOpts := overlay.Options{AllowCaseCollisions: cfg.AllowCaseCollisions}
	m := &Manager{
		store:    cfg.Store,
		repos:    cfg.Repos,
		events:   cfg.Events,
		limits:   cfg.Limits,
		now:      clock,
		ovOpts:   ovOpts,
		workdirs: cfg.Workdirs,
		mem: &memory{store: cfg.Store, repos: cfg.Repos, objects: cfg.Objects, ovOpts: ovOpts, now: clock,
			live: make(map[uuid.UUID]*live), finished: make(map[*live]struct{})},
		recorder: &recorder{store: cfg.Store, events: cfg.Events, observers: cfg.Observers,
			limits: cfg.Limits, now: clock, ovOpts: ovOpts, workdirs: cfg.Workdirs, repos: cfg.Repos},
	}
	if cfg.IdleUnload == 0 {
		cfg.IdleUnload = DefaultIdleUnload
	}
	m.mem.startJanitor(cfg.IdleUnload)
	return m
}

// Close stops the idle unloader and lets the loaded sessions go. The
// store, the repositories and the event log are the caller's.
func (m *Manager) Close() error {
	m.mem.stopJanitor()
	m.mem.mu.Lock()
	defer m.mem.mu.Unlock()
	clear(m.mem.live)
	return nil
}

// Refs a session keeps in its repository, so that `git gc` never prunes
// what it references: all under refs/sessions/<id>/, its base, live view,
// head and checkpoints/<n>. These functions are the one place that spells
// the layout.
func sessionRefs(id uuid.UUID) gitstore.RefName {
	return gitstore.RefName("refs/sessions/" + id.String())
}
func baseRef(id uuid.UUID) gitstore.RefName { return sessionRefs(id) + "/base" }
func liveRef(id uuid.UUID) gitstore.RefName { return sessionRefs(id) + "/live" }
func headRef(id uuid.UUID) gitstore.RefName { return sessionRefs(id) + "/head" }

// CheckpointRef is the ref of checkpoint n of session id.
func CheckpointRef(id uuid.UUID, n int) gitstore.RefName {
	return sessionRefs(id) + gitstore.RefName("/checkpoints/"+strconv.Itoa(n))
}

// setRef moves ref to id whatever it holds now (the engine owns its
// session refs; the lock still excludes concurrent git writers).
func setRef(ctx context.Context, r *gitstore.Repo, ref gitstore.RefName, id gitstore.OID) error {
	for range 3 {
		cur, err := r.ReadRef(ctx, ref)
		if err != nil && !errors.Is(err, gitstore.ErrNotFound) {
			return err
		}
		if cur == id {
			return nil
		}
		err = r.UpdateRef(ctx, ref, id, cur)
		if !errors.Is(err, gitstore.ErrRefConflict) {
			return err
		}
	}
	return fmt.Errorf("set %s: %w", ref, gitstore.ErrRefConflict)
}

// CreateOptions describe a new session.
type CreateOptions struct {
	Repo string
	// Base is a branch, tag or commit id; the repository's HEAD when empty.
	Base string
	// AgentID and AgentName are the agent's one identity: given only
	// one, the session records it as both (record.AgentIdentity).
	AgentID   string
	AgentName string
	Intent    string
	Mode      Mode
	// TTL is the idle time after which the session expires; zero: never.
	TTL    time.Duration
	Policy Policy
	// Caches is CachesShared (or empty) or CachesPrivate: the tool caches
	// of every command of the session (ExecOptions.Caches).
	Caches string
	// Env are the session's own plain variables (Session.Env).
	Env map[string]string

	// Set by Fork: the source's branch, the commit the fork starts on
	// (Base is then its id and is not resolved again), and the tree of
	// the fork's view.
	forkBaseRef string
	forkBase    gitstore.OID
	forkTree    gitstore.OID
}

// Create starts a session at opts.Base. Nothing is copied: the session
// row, and a ref that keeps the base commit from being pruned.
func (m *Manager) Create(ctx context.Context, opts CreateOptions) (Session, error) {
	return m.create(ctx, opts, uuid.Nil, nil)
}

func (m *Manager) create(ctx context.Context, opts CreateOptions, parent uuid.UUID, entries []OverlayEntry) (Session, error) {
	if opts.Mode == "" {
		opts.Mode = ModeReadWrite
	}
	if opts.Mode != ModeReadWrite && opts.Mode != ModeReadOnly {
		return Session{}, fmt.Errorf("%w: mode %q: use read_write or read_only", record.ErrInvalid, opts.Mode)
	}
	if opts.TTL < 0 {
		return Session{}, fmt.Errorf("%w: negative ttl", record.ErrInvalid)
	}
	if _, err := compilePolicy(opts.Policy); err != nil {
		return Session{}, err
	}
	switch opts.Caches {
	case CachesShared:
		opts.Caches = ""
	case "", CachesPrivate:
	default:
		return Session{}, fmt.Errorf("%w: caches %q: use shared or private", record.ErrInvalid, opts.Caches)
	}
	for n, v := range opts.Env {
		if err := repos.CheckVariable("env", n, v); err != nil {
			return Session{}, err
		}
	}
	opts.AgentID, opts.AgentName = record.AgentIdentity(opts.AgentID, opts.AgentName)
	r, err := m.repos.Open(ctx, opts.Repo)
	if err != nil {
		return Session{}, err
	}
	base := opts.Base
	if base == "" {
		base = "HEAD"
	}
	commit := opts.forkBase
	if commit.IsZero() {
		commit, err = m.ResolveRevision(ctx, r, "base", base)
		if errors.Is(err, record.ErrNotFound) && r.Origin() != "" {
			// A commit or branch this node's clone lacks yet: fetch the
			// origin once and look again.
			if ferr := r.Fetch(ctx); ferr != nil {
				return Session{}, fmt.Errorf("%w: base %q: not in this node's clone, and fetching the origin failed: %w", record.ErrUnavailable, base, ferr)
			}
			commit, err = m.ResolveRevision(ctx, r, "base", base)
		}
		if err != nil {
			return Session{}, err
		}
	}
	baseBranch := ""
	if id, err := r.ReadRef(ctx, gitstore.BranchRef(base)); err == nil && id == commit && !strings.HasPrefix(base, "refs/") {
		baseBranch = base
	} else if b, _ := strings.CutPrefix(base, "refs/heads/"); b != base {
		baseBranch = b
	} else if base == "HEAD" {
		baseBranch, _ = r.HeadBranch()
	}
	if opts.forkBaseRef != "" {
		baseBranch = opts.forkBaseRef
	}
	now := m.now()
	s := Session{
		ID: uuid.New(), Repo: opts.Repo, Parent: parent,
		AgentID: opts.AgentID, AgentName: opts.AgentName, Intent: opts.Intent,
		BaseCommit: commit, BaseRef: baseBranch, Mode: opts.Mode, State: StateActive,
		Policy: opts.Policy, Head: commit, CreatedAt: now, LastActiveAt: now, Caches: opts.Caches, Env: maps.Clone(opts.Env),
	}
	if opts.TTL > 0 {
		s.ExpiresAt = now.Add(opts.TTL)
	}
	if m.limits.MaxLifetime > 0 && (s.ExpiresAt.IsZero() || s.ExpiresAt.After(now.Add(m.limits.MaxLifetime))) {
		s.ExpiresAt = now.Add(m.limits.MaxLifetime)
	}
	if err := r.UpdateRef(ctx, baseRef(s.ID), commit, gitstore.ZeroOID); err != nil {
		return Session{}, fmt.Errorf("pin base: %w", err)
	}
	if len(entries) > 0 {
		if err := r.UpdateRef(ctx, liveRef(s.ID), opts.forkTree, gitstore.ZeroOID); err != nil {
			return Session{}, fmt.Errorf("pin overlay: %w", err)
		}
	}
	err = m.store.InTx(ctx, func(tx Tx) error {
		if err := tx.CreateSession(ctx, s); err != nil {
			return err
		}
		if len(entries) > 0 {
			mu, err := tx.ReplaceOverlay(ctx, MutationRecord{Session: s.ID, Op: OpFork, Paths: []string{}, Actor: opts.AgentID, At: now}, entries)
			if err != nil {
				return err
			}
			s.Seq = mu.Seq
		}
		_, err := tx.AppendEvent(ctx, stateEvent(s, "", now))
		return err
	})
	if err != nil {
		_ = r.UpdateRef(context.WithoutCancel(ctx), baseRef(s.ID), gitstore.ZeroOID, commit)
		return Session{}, fmt.Errorf("create session: %w", err)
	}
	m.events.Notify()
	return s, nil
}

// Get returns a session's metadata. A session past its expiry is moved to
// expired first.
func (m *Manager) Get(ctx context.Context, id uuid.UUID) (Session, error) {
	s, err := m.store.GetSession(ctx, id)
	if err != nil {
		return Session{}, err // the store's error names the session
	}
	if expiredAt(m.now(), s) {
		if err := m.expire(ctx, s); err != nil {
			return Session{}, err
		}
		return m.store.GetSession(ctx, id)
	}
	return s, nil
}

// ListSessions returns sessions matching f; a repository in f that is not
// registered is record.ErrInvalid.
func (m *Manager) ListSessions(ctx context.Context, f SessionFilter) ([]Session, error) {
	if f.Repo != "" {
		if _, err := m.repos.Get(ctx, f.Repo); errors.Is(err, record.ErrNotFound) {
			return nil, record.UnknownRepoFilter(f.Repo)
		} else if err != nil {
			return nil, err
		}
	}
	if _, err := m.ExpireDue(ctx); err != nil {
		return nil, err
	}
	return m.store.ListSessions(ctx, f)
}

// expiredAt says whether s, not yet ended, is past its expiry at now.
func expiredAt(now time.Time, s Session) bool {
	return !s.State.Terminal() && !s.ExpiresAt.IsZero() && !now.Before(s.ExpiresAt)
}

// ExpireDue moves every session past its expiry to expired and returns
// how many it moved. The daemon calls it periodically.
func (m *Manager) ExpireDue(ctx context.Context) (int, error) {
	due, err := m.store.ListSessions(ctx, SessionFilter{ExpiredBy: m.now()})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range due {
		err := m.expire(ctx, s)
		if errors.Is(err, record.ErrUnavailable) {
			// Served by another node of a cluster (its owner expires it),
			// or unreachable now: a later round.
			continue
		}
		if err != nil && !errors.Is(err, record.ErrConflict) {
			return n, err
		}
		n++
	}
	return n, nil
}

// expire moves s to expired if it is still past its expiry under its lock
// (a write may have extended it), without loading it.
func (m *Manager) expire(ctx context.Context, s Session) error {
	return m.closeSession(ctx, s.ID, StateExpired, func(s Session) bool { return expiredAt(m.now(), s) })
}

// Abandon ends a session: it refuses every further write, and its live
// overlay is no longer kept from gc (its checkpoints are).
func (m *Manager) Abandon(ctx context.Context, id uuid.UUID) (Session, error) {
	if err := m.close(ctx, id, StateAbandoned); err != nil {
		return Session{}, err
	}
	return m.store.GetSession(ctx, id)
}

// close moves a non-terminal session to a terminal state.
func (m *Manager) close(ctx context.Context, id uuid.UUID, to State) error {
	return m.closeSession(ctx, id, to, func(Session) bool { return true })
}

// setState moves ls to state to; ls.mu must be held.
func (m *recorder) setState(ctx context.Context, ls *live, to State) error {
	from := ls.meta.State
	now := m.now()
	err := m.store.InTx(ctx, func(tx Tx) error {
		if err := tx.SetSessionState(ctx, ls.meta.ID, from, to, now); err != nil {
			return err
		}
		next := ls.meta
		next.State = to
		_, err := tx.AppendEvent(ctx, stateEvent(next, from, now))
		return err
	})
	if err != nil {
		return fmt.Errorf("session %s: %s → %s: %w", ls.meta.ID, from, to, err)
	}
	ls.meta.State = to
	ls.meta.LastActiveAt = now
	m.events.Notify()
	if to.Terminal() {
		m.observeClosed(ctx, ls.meta)
		if m.ended != nil {
			m.ended(ls.meta.ID)
		}
		m.removeScratch(ls)
	}
	if to.Terminal() && to != StateAccepted {
		// Nothing reads this overlay any more: let gc have what only it
		// kept. Best effort; the base and checkpoints stay pinned.
		_ = ls.repo.UpdateRef(ctx, liveRef(ls.meta.ID), gitstore.ZeroOID, ls.pinned)
		ls.pinned = gitstore.ZeroOID
	}
	return nil
}
