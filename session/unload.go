package session

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
)

// DefaultIdleUnload is how long a loaded session may go unused before it
// is unloaded (SPEC §12).
const DefaultIdleUnload = 10 * time.Minute

// memory owns which sessions are in memory: it loads a session from the
// store (rebuilding its overlay and tree, repairing its refs), hands out
// its entry with the session's lock held, and unloads it when it is
// finished or idle (the janitor), saving its read set first. Its methods'
// receiver is m, as the Manager's, whose part it is.
//
// Ending an operation (live.unlock) does no I/O: it drops a finished
// session from memory when it has nothing left to save, and otherwise
// hands it to the janitor's goroutine, which saves its read set and
// unloads it under its lock, so a lock release is only a release.
type memory struct {
	store   Store
	repos   *repos.Registry
	objects Filler // nil: not a cluster's
	ovOpts  overlay.Options
	now     func() time.Time

	mu sync.Mutex // guards live
	// live holds the sessions in memory: loaded ones, and entries being
	// loaded or closed under their lock.
	live map[uuid.UUID]*live

	janitor janitor
	loads   atomic.Int64 // sessions loaded from the store, for tests
	// finished holds the finished sessions the janitor is to unload
	// (their read set had reads to save when their last operation
	// ended); guarded by mu.
	finished map[*live]struct{}
}

// sessionLock is a session's lock. It is a one-slot channel, so that a
// caller waiting for it gives up when its context ends. Letting it go is
// only that: the bookkeeping at the end of an operation is live.unlock's.
type sessionLock struct {
	ch chan struct{}
}

func newSessionLock() sessionLock {
	return sessionLock{ch: make(chan struct{}, 1)}
}

// LockCtx takes the lock, or gives up with ctx's error when ctx ends
// first.
func (l *sessionLock) LockCtx(ctx context.Context) error {
	select {
	case l.ch <- struct{}{}:
		return nil
	default:
	}
	select {
	case l.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Lock takes the lock however long it takes (for a caller that already
// holds the session in another way, as a running command does).
func (l *sessionLock) Lock() { l.ch <- struct{}{} }

// TryLock takes the lock if it is free.
func (l *sessionLock) TryLock() bool {
	select {
	case l.ch <- struct{}{}:
		return true
	default:
		return false
	}
}

// Unlock lets the lock go.
func (l *sessionLock) Unlock() { <-l.ch }

func (m *memory) newLive(id uuid.UUID) *live {
	return &live{id: id, mem: m, mu: newSessionLock()}
}

// unlock ends an operation on ls: memory's bookkeeping (released), then
// the lock is let go. Neither does I/O. ls.mu must be held.
func (ls *live) unlock() {
	ls.mem.released(ls)
	ls.mu.Unlock()
}

// lockEntry returns session id's entry in m.live with its lock held,
// loaded or not. An entry unloaded while the caller waited for it is
// dead: the caller looks again and finds (or makes) a fresh one.
func (m *memory) lockEntry(ctx context.Context, id uuid.UUID) (*live, error) {
	for {
		m.mu.Lock()
		ls := m.live[id]
		if ls == nil {
			ls = m.newLive(id)
			m.live[id] = ls
		}
		m.mu.Unlock()
		if err := ls.mu.LockCtx(ctx); err != nil {
			return nil, fmt.Errorf("session %s: waiting for its lock: %w", id, err)
		}
		if !ls.dead {
			return ls, nil
		}
		ls.mu.Unlock()
	}
}

// released runs at the end of every operation on ls, with ls.mu held, and
// does no I/O: an entry that is not loaded (a failed load, an expiry done
// in the store) is dropped, and a finished session is dropped at once
// when its read set has nothing to save, else handed to the janitor,
// which saves it and unloads the session. A session running a command
// stays.
func (m *memory) released(ls *live) {
	if ls.dead {
		return
	}
	ls.used = m.now()
	switch {
	case !ls.loaded:
		m.drop(ls)
	case ls.busy:
	case ls.meta.State.Terminal():
		switch {
		case ls.reads.park():
			// Reads in flight: the last of them hands it over.
		case ls.reads.pending() != nil:
			m.handOver(ls)
		default:
			m.drop(ls)
		}
	}
}

// handOver gives finished session ls to the janitor to unload.
func (m *memory) handOver(ls *live) {
	m.mu.Lock()
	m.finished[ls] = struct{}{}
	m.mu.Unlock()
	m.janitor.wake()
}

// unload saves what the session has not saved (its read set) and drops
// it from memory; the next operation loads it again from the store. It
// keeps the session loaded if the save fails, or while reads are in
// flight on a snapshot of it (they record into its read set). ls.mu must
// be held; the janitor calls it, never the end of an operation.
func (m *memory) unload(ls *live) {
	if ls.reads.reading() {
		return
	}
	if err := m.flushReads(context.Background(), ls); err != nil {
		return
	}
	m.drop(ls)
}

// unloadFinished unloads the finished sessions handed over, waiting for
// each one's lock (the operation that handed it over may not have let it
// go yet) until ctx ends. One with reads in flight is parked again: the
// last of them hands it over.
func (m *memory) unloadFinished(ctx context.Context) {
	m.mu.Lock()
	all := make([]*live, 0, len(m.finished))
	for ls := range m.finished {
		all = append(all, ls)
	}
	clear(m.finished)
	m.mu.Unlock()
	for _, ls := range all {
		if ls.mu.LockCtx(ctx) != nil {
			continue
		}
		if !ls.dead && ls.loaded && !ls.busy && ls.meta.State.Terminal() && !ls.reads.park() {
			m.unload(ls)
		}
		ls.mu.Unlock()
	}
}

// drop removes ls from m.live and marks it dead. ls.mu must be held.
func (m *memory) drop(ls *live) {
	m.mu.Lock()
	if m.live[ls.id] == ls {
		delete(m.live, ls.id)
	}
	m.mu.Unlock()
	ls.dead, ls.loaded = true, false
	ls.ov, ls.policy, ls.reads = nil, nil, nil
}

// Loaded is the number of sessions held in memory.
func (m *Manager) Loaded() int {
	m.mem.mu.Lock()
	defer m.mem.mu.Unlock()
	return len(m.mem.live)
}

// UnloadIdle unloads every loaded session that no operation used for
// idle or longer, and returns how many it unloaded. Sessions in use (their
// lock held) and sessions running a command are left alone. The manager
// calls it periodically (Config.IdleUnload).
func (m *memory) UnloadIdle(idle time.Duration) int {
	cutoff := m.now().Add(-idle)
	m.mu.Lock()
	all := make([]*live, 0, len(m.live))
	for _, ls := range m.live {
		all = append(all, ls)
	}
	m.mu.Unlock()
	n := 0
	for _, ls := range all {
		if !ls.mu.TryLock() {
			continue
		}
		if !ls.dead && ls.loaded && !ls.busy && ls.serving == 0 && !ls.used.After(cutoff) {
			if m.unload(ls); ls.dead {
				n++
			}
		}
		ls.mu.Unlock() // looking is not using
	}
	return n
}

// janitor is memory's one goroutine: it unloads the finished sessions
// handed to it as they come (wake), and idle sessions periodically,
// until stop is closed.
type janitor struct {
	stop chan struct{}
	kick chan struct{} // one slot: a wake-up pending
	// cancel ends the janitor's waits for a session's lock.
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// wake asks the janitor to unload the finished sessions handed to it.
func (j *janitor) wake() {
	select {
	case j.kick <- struct{}{}:
	default:
	}
}

// startJanitor starts the janitor; with idle <= 0 it unloads finished
// sessions only.
func (m *memory) startJanitor(idle time.Duration) {
	m.janitor.stop = make(chan struct{})
	m.janitor.kick = make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	m.janitor.cancel = cancel
	m.janitor.wg.Go(func() {
		var tick <-chan time.Time
		if idle > 0 {
			t := time.NewTicker(min(max(idle/4, 10*time.Millisecond), time.Minute))
			defer t.Stop()
			tick = t.C
		}
		for {
			select {
			case <-m.janitor.stop:
				m.unloadFinished(ctx) // those free now: save what they read
				return
			case <-m.janitor.kick:
				m.unloadFinished(ctx)
			case <-tick:
				m.UnloadIdle(idle)
			}
		}
	})
}

func (m *memory) stopJanitor() {
	if m.janitor.stop != nil {
		m.janitor.cancel() // a wait for a lock held elsewhere ends here
		close(m.janitor.stop)
		m.janitor.wg.Wait()
		m.janitor.stop = nil
	}
}

// closeSession moves session id to the terminal state to, when ok (given
// the session's metadata as it is under its lock) allows it. A loaded
// session changes in memory and in the store; one that is not loaded
// changes in the store only, without loading its overlay. Either way the
// session is not in memory afterwards.
func (m *Manager) closeSession(ctx context.Context, id uuid.UUID, to State, ok func(Session) bool) error {
	ls, err := m.mem.lockEntry(ctx, id)
	if err != nil {
		return err
	}
	defer ls.unlock()
	if ls.loaded {
		switch {
		case ls.meta.State.Terminal():
			return fmt.Errorf("session %s is %s: %w", id, ls.meta.State, record.ErrSessionClosed)
		case !ok(ls.meta):
			return nil
		}
		return m.recorder.setState(ctx, ls, to)
	}
	// Nobody can load the session while its lock is held: the store's row
	// is the whole truth.
	s, err := m.store.GetSession(ctx, id)
	if err != nil {
		return err // the store's error names the session
	}
	switch {
	case s.State.Terminal():
		return fmt.Errorf("session %s is %s: %w", id, s.State, record.ErrSessionClosed)
	case !ok(s):
		return nil
	}
	r, err := m.repos.Open(ctx, s.Repo)
	if err != nil {
		return err
	}
	from, now := s.State, m.now()
	err = m.store.InTx(ctx, func(tx Tx) error {
		if err := tx.SetSessionState(ctx, id, from, to, now); err != nil {
			return err
		}
		next := s
		next.State = to
		_, err := tx.AppendEvent(ctx, stateEvent(next, from, now))
		return err
	})
	if err != nil {
		return fmt.Errorf("session %s: %s → %s: %w", id, from, to, err)
	}
	s.State, s.LastActiveAt = to, now
	m.events.Notify()
	m.recorder.observeClosed(ctx, s)
	if m.workdirs != nil {
		_ = m.workdirs.Remove(id.String())
	}
	if to != StateAccepted {
		// As setState: the live overlay is no longer kept from gc (best
		// effort; the base and checkpoints stay pinned).
		if pinned, err := r.ReadRef(ctx, liveRef(id)); err == nil {
			_ = r.UpdateRef(ctx, liveRef(id), gitstore.ZeroOID, pinned)
		}
	}
	return nil
}

// Forget drops session id from memory without saving anything (its next
// operation loads it again from the store), for a node that lost the
// session's ownership: what it holds may be behind what the new owner
// wrote, and it may write nothing more (the store's fence refuses it). A
// session running a command is left loaded (its command's end is refused
// by the fence); false then, or when ctx ended first.
func (m *Manager) Forget(ctx context.Context, id uuid.UUID) bool {
	m.mem.mu.Lock()
	ls := m.mem.live[id]
	m.mem.mu.Unlock()
	if ls == nil {
		return true
	}
	if ls.mu.LockCtx(ctx) != nil {
		return false
	}
	defer ls.mu.Unlock()
	if ls.busy {
		return false
	}
	if !ls.dead {
		m.mem.drop(ls)
	}
	return true
}
