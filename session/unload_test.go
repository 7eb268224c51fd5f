package session_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
)

// clock is a test clock the engine reads.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// withManager replaces e's engine by one with cfg's clock and idle
// setting over the same store.
func withManager(t *testing.T, e *env, c *clock, idle time.Duration) {
	t.Helper()
	require.NoError(t, e.en.Close())
	cfg := session.Config{IdleUnload: idle}
	if c != nil {
		cfg.Now = c.now
	}
	e.start(cfg)
}

// A finished session leaves memory at once, whatever finished it, and
// reading it afterwards loads it only for that read.
func TestFinishedSessionsAreUnloaded(t *testing.T) {
	e := newEnv(t, "small")
	withManager(t, e, nil, -1)
	ctx := t.Context()
	var ids []session.Session
	for i := range 3 {
		s := e.create(session.CreateOptions{AgentID: fmt.Sprint("agent-", i)})
		e.write(s.ID, "f.txt", fmt.Sprint("content ", i, "\n"))
		ids = append(ids, s)
	}
	require.Equal(t, 3, e.m.Loaded())
	_, err := e.m.Abandon(ctx, ids[0].ID)
	require.NoError(t, err)
	assert.Equal(t, 2, e.m.Loaded())

	c, err := e.cs().Submit(ctx, ids[1].ID, changeset.SubmitOptions{Intent: "f"})
	require.NoError(t, err)
	_, err = e.en.Repos.SetPolicy(ctx, repos.Policy{Repo: "r"})
	require.NoError(t, err)
	_, err = e.cs().Accept(ctx, c.ID, changeset.AcceptOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, e.m.Loaded(), "accepted: unloaded")

	assert.Equal(t, "content 0\n", e.read(ids[0].ID, "f.txt"), "a finished session is still readable")
	assert.Equal(t, 1, e.m.Loaded(), "and is unloaded again after the read")
	_, _, err = e.m.Write(ctx, ids[0].ID, "g.txt", []byte("x"), session.WriteOptions{})
	require.ErrorIs(t, err, record.ErrSessionClosed)
	assert.Equal(t, 1, e.m.Loaded())
}

// A session nobody used for the idle time is unloaded, and comes back
// the same from the store, read set included.
func TestIdleSessionsAreUnloaded(t *testing.T) {
	e := newEnv(t, "small")
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	withManager(t, e, c, -1)
	ctx := t.Context()
	busy := e.create(session.CreateOptions{})
	idle := e.create(session.CreateOptions{AgentID: "idle"})
	e.write(idle.ID, "notes.txt", "idle\n")
	e.read(idle.ID, "README.md") // a base read: the read set
	view := e.view(idle.ID)
	c.advance(6 * time.Minute)
	e.write(busy.ID, "notes.txt", "busy\n")
	assert.Equal(t, 0, e.m.UnloadIdle(10*time.Minute))
	c.advance(5 * time.Minute)
	assert.Equal(t, 1, e.m.UnloadIdle(10*time.Minute), "only the session unused for 10 minutes")
	assert.Equal(t, 1, e.m.Loaded())

	loads := e.m.LoadsForTest()
	reads, err := e.m.ReadSet(ctx, idle.ID)
	require.NoError(t, err)
	assert.Contains(t, reads, "README.md")
	assert.Equal(t, view, e.view(idle.ID))
	assert.Equal(t, loads+1, e.m.LoadsForTest(), "loaded once again")
	e.write(idle.ID, "notes.txt", "idle again\n")
	assert.Equal(t, "idle again\n", e.read(idle.ID, "notes.txt"))
}

// Letting a session's lock go does no I/O: a finished session whose read
// set still has reads to save leaves memory through the janitor, which
// saves them first (even with idle unloading off), and one with nothing
// to save leaves at once.
func TestFinishedSessionUnloadsAfterItsReadsAreSaved(t *testing.T) {
	e := newEnv(t, "small")
	withManager(t, e, nil, -1)
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	other := e.create(session.CreateOptions{AgentID: "other"})
	e.read(s.ID, "README.md") // a base read, not saved yet
	e.write(other.ID, "notes.txt", "x\n")
	require.Equal(t, 2, e.m.Loaded())
	stored, err := e.store.ListReads(ctx, s.ID)
	require.NoError(t, err)
	require.NotContains(t, stored, "README.md", "reads wait for the session's next transaction")

	_, err = e.m.Abandon(ctx, s.ID)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return e.m.Loaded() == 1 }, 30*time.Second, time.Millisecond,
		"the janitor unloads the finished session")
	stored, err = e.store.ListReads(ctx, s.ID)
	require.NoError(t, err)
	assert.Contains(t, stored, "README.md", "its read set was saved before it left memory")

	_, err = e.m.Abandon(ctx, other.ID)
	require.NoError(t, err)
	assert.Equal(t, 0, e.m.Loaded(), "nothing to save: unloaded as its lock is let go")
}

// The manager unloads idle sessions by itself (Config.IdleUnload).
func TestIdleUnloadRunsByItself(t *testing.T) {
	e := newEnv(t, "small")
	withManager(t, e, nil, 20*time.Millisecond)
	s := e.create(session.CreateOptions{})
	e.write(s.ID, "notes.txt", "x\n")
	require.Eventually(t, func() bool { return e.m.Loaded() == 0 }, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, "x\n", e.read(s.ID, "notes.txt"))
}

// Expiry moves sessions to expired in the store without loading them,
// and unpins their live overlay as closing a loaded session does.
func TestExpireWithoutLoading(t *testing.T) {
	e := newEnv(t, "small")
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	withManager(t, e, c, -1)
	ctx := t.Context()
	var ss []session.Session
	for i := range 3 {
		s := e.create(session.CreateOptions{TTL: time.Hour, AgentID: fmt.Sprint("a", i)})
		e.write(s.ID, "notes.txt", fmt.Sprint(i, "\n"))
		ss = append(ss, s)
	}
	e.restart() // nothing in memory
	withManager(t, e, c, -1)
	live := e.git("for-each-ref", "--format=%(refname)", "refs/sessions/"+ss[0].ID.String()+"/live")
	require.NotEmpty(t, live)
	c.advance(2 * time.Hour)
	n, err := e.m.ExpireDue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Zero(t, e.m.LoadsForTest(), "no session was loaded to expire it")
	assert.Zero(t, e.m.Loaded())
	for _, s := range ss {
		got, err := e.m.Get(ctx, s.ID)
		require.NoError(t, err)
		assert.Equal(t, session.StateExpired, got.State)
		assert.Empty(t, e.git("for-each-ref", "refs/sessions/"+s.ID.String()+"/live"), "live overlay unpinned")
		assert.NotEmpty(t, e.git("for-each-ref", "refs/sessions/"+s.ID.String()+"/base"), "base still pinned")
	}
	evs, err := e.en.Events.List(ctx, events.Filter{Session: ss[0].ID})
	require.NoError(t, err)
	last := evs[len(evs)-1]
	assert.Equal(t, "session.state", last.Type)
	assert.Contains(t, string(last.Payload), `"expired"`)
}

// A request that gives up waiting for a session's lock stops waiting.
func TestSessionLockHonoursContext(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	release, err := e.m.HoldForTest(ctx, s.ID)
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, _, err := e.m.Write(wctx, s.ID, "notes.txt", []byte("late\n"), session.WriteOptions{})
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(time.Minute):
		t.Fatal("the write kept waiting for the lock after its context ended")
	}
	release()
	_, err = e.m.Stat(ctx, s.ID, "notes.txt")
	require.ErrorIs(t, err, record.ErrNotFound, "the abandoned write did nothing")
	e.write(s.ID, "notes.txt", "now\n")
	assert.Equal(t, "now\n", e.read(s.ID, "notes.txt"))
}

// Base reads record themselves in the read set after letting the
// session's lock go, so an unload can come between a read's snapshot and
// its record: none is lost (the sealed set sends it to the store), while
// the session is unloaded again and again (run with -race).
func TestReadsRacingUnloadsKeepTheReadSet(t *testing.T) {
	e := newEnv(t, "small")
	withManager(t, e, nil, -1)
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	infos, err := e.m.ListFiles(ctx, s.ID, session.ListOptions{Recursive: true})
	require.NoError(t, err)
	var paths []string
	for _, fi := range infos {
		if fi.Type == "file" {
			paths = append(paths, fi.Path)
		}
	}
	require.Greater(t, len(paths), 5)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			e.m.UnloadIdle(0)
		}
	})
	var readers sync.WaitGroup
	for _, p := range paths {
		readers.Go(func() {
			_, _, err := e.m.Read(ctx, s.ID, p, 0, -1)
			assert.NoError(t, err, p)
		})
	}
	readers.Wait()
	stop.Store(true)
	wg.Wait()
	reads, err := e.m.ReadSet(ctx, s.ID)
	require.NoError(t, err)
	for _, p := range paths {
		assert.Contains(t, reads, p)
	}
	assert.Len(t, reads, len(paths))
}

// Requests that arrive while their session is being unloaded, again and
// again, all work and see every write before them (run with -race).
func TestUnloadRacesRequests(t *testing.T) {
	e := newEnv(t, "small")
	withManager(t, e, nil, -1)
	ctx := t.Context()
	const sessions, writers, writes = 4, 3, 15
	var ss []session.Session
	for i := range sessions {
		ss = append(ss, e.create(session.CreateOptions{AgentID: fmt.Sprint("a", i)}))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			e.m.UnloadIdle(0)
		}
	})
	errs := make(chan error, sessions*writers)
	var users sync.WaitGroup
	for _, s := range ss {
		for w := range writers {
			users.Go(func() {
				p := fmt.Sprintf("w%d.txt", w)
				for i := range writes {
					want := fmt.Sprint(i, "\n")
					if _, _, err := e.m.Write(ctx, s.ID, p, []byte(want), session.WriteOptions{}); err != nil {
						errs <- err
						return
					}
					got, _, err := e.m.Read(ctx, s.ID, p, 0, -1)
					if err == nil && string(got) != want {
						err = fmt.Errorf("%s %s: read %q after writing %q", s.ID, p, got, want)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	users.Wait()
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Finishing sessions while others unload them.
	var closers sync.WaitGroup
	for _, s := range ss {
		closers.Go(func() {
			if _, err := e.m.Abandon(ctx, s.ID); err != nil && !errors.Is(err, record.ErrSessionClosed) {
				t.Error(err)
			}
		})
		closers.Go(func() { e.m.UnloadIdle(0) })
	}
	closers.Wait()
	assert.Zero(t, e.m.Loaded())
	for _, s := range ss {
		got, err := e.m.Get(ctx, s.ID)
		require.NoError(t, err)
		assert.Equal(t, session.StateAbandoned, got.State)
		assert.Equal(t, fmt.Sprint(writes-1, "\n"), e.read(s.ID, "w0.txt"))
	}
}
