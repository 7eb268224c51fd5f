package session_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/failpoint"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/session"
)

// holdFirstBatch stops the first group commit of m's repository "r" at
// its ref step (failpoint.RefMoved) until the caller's release runs, so
// that writes made meanwhile queue and commit together in the next
// batch. queued waits until n writes wait.
func holdFirstBatch(t *testing.T, m *session.Manager) (entered <-chan struct{}, queued func(n int), release func()) {
	t.Helper()
	in, out := make(chan struct{}), make(chan struct{})
	var once sync.Once
	failpoint.Enable(failpoint.RefMoved, func() {
		once.Do(func() {
			close(in)
			<-out
		})
	})
	t.Cleanup(func() { failpoint.Enable(failpoint.RefMoved, nil) })
	queued = func(n int) {
		t.Helper()
		for {
			_, _, q, err := m.GroupCommitsForTest(t.Context(), "r")
			require.NoError(t, err)
			if q >= n {
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	var rel sync.Once
	return in, queued, func() { rel.Do(func() { close(out) }) }
}

// Concurrent writes of different sessions of one repository commit in one
// batch (one pack, one store transaction), each acknowledged with its own
// result: a write whose record the store refuses (its session was closed
// by another process) fails alone, a stale If-Match fails before it
// joins, and the others are durable across a restart.
func TestGroupCommit(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	const n = 6
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = e.create(session.CreateOptions{}).ID
	}
	other := e.create(session.CreateOptions{}).ID
	e.write(other, "first.txt", "first\n")
	closed := ids[n-1]
	e.write(closed, "f.txt", "one\n")
	// Another process finishes this session in the store; this engine
	// still has it loaded as active.
	require.NoError(t, e.store.SetSessionState(ctx, closed, session.StateActive, session.StateAbandoned, time.Now()))

	entered, queued, release := holdFirstBatch(t, e.m)
	defer release()
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _, err := e.m.Write(ctx, ids[0], "lead.txt", []byte("lead\n"), session.WriteOptions{})
		assert.NoError(t, err)
	})
	<-entered
	errs := make([]error, n)
	for i := 1; i < n; i++ {
		wg.Go(func() {
			_, _, errs[i] = e.m.Write(ctx, ids[i], "batched.txt", fmt.Appendf(nil, "batched %d\n", i), session.WriteOptions{})
		})
	}
	queued(n - 1)
	// A stale precondition fails at once, without joining a batch.
	stale := gitstore.HashObject(gitstore.KindBlob, []byte("not this version\n"))
	_, _, err := e.m.Write(ctx, other, "first.txt", []byte("x\n"), session.WriteOptions{IfMatch: &stale})
	var ce *session.PreconditionError
	require.ErrorAs(t, err, &ce)
	release()
	wg.Wait()

	for i := 1; i < n-1; i++ {
		require.NoError(t, errs[i], "session %d", i)
	}
	require.ErrorIs(t, errs[n-1], record.ErrSessionClosed, "the closed session's write fails alone")
	batches, items, _, err := e.m.GroupCommitsForTest(ctx, "r")
	require.NoError(t, err)
	// The setup's writes, the held one, then one batch of the five.
	setupWrites := int64(2)
	assert.Equal(t, setupWrites+1+int64(n-1), items)
	assert.Equal(t, setupWrites+2, batches, "the five queued writes committed as one batch")

	e.restart()
	for i := 1; i < n-1; i++ {
		assert.Equal(t, fmt.Sprintf("batched %d\n", i), e.read(ids[i], "batched.txt"))
		muts, err := e.m.Mutations(ctx, ids[i], 0, 0)
		require.NoError(t, err)
		assert.Len(t, muts, 1, "session %d", i)
	}
	assert.Equal(t, "lead\n", e.read(ids[0], "lead.txt"))
	assert.Equal(t, "first\n", e.read(other, "first.txt"), "the stale If-Match changed nothing")
	muts, err := e.m.Mutations(ctx, closed, 0, 0)
	require.NoError(t, err)
	assert.Len(t, muts, 1, "the refused write left no record")
	testrepo.Git(t, e.repoDir, "fsck", "--strict")
}

const batchCrashEnv = "SESSIOND_BATCH_CRASH_STEP"

// TestCrashInBatch kills the process (SIGKILL) at each step of a group
// commit of several sessions' writes: a child process holds a first
// write's batch until writes of the other sessions queue, lets it commit
// (it is acknowledged), and dies at the step inside the second batch. On
// restart every acknowledged write reads back, and each write of the
// batch in flight is whole or absent: in the log and the view together or
// in neither, its live ref back in line with the store, and the batch's
// store transaction all or nothing. git fsck --strict passes and every
// session keeps working. On both stores.
func TestCrashInBatch(t *testing.T) {
	if os.Getenv(batchCrashEnv) != "" {
		batchCrashChild()
		return
	}
	eachCrashStep(t, failpoint.BatchSteps, crashInBatch)
}

const batchSessions = 4

func crashInBatch(t *testing.T, url string, step failpoint.Step) {
	ctx := t.Context()
	repoDir := testrepo.Build(t, "small")
	dataDir := t.TempDir()
	st := openStore(t, url, dataDir)
	en := testengine.New(st, dataDir, session.Config{})
	m := en.Sessions
	_, err := en.Repos.Register(ctx, "r", repoDir)
	require.NoError(t, err)
	ids := make([]string, batchSessions)
	for i := range ids {
		s, err := m.Create(ctx, session.CreateOptions{Repo: "r", Base: "main", AgentID: "a"})
		require.NoError(t, err)
		_, _, err = m.Write(ctx, s.ID, "before.txt", []byte("acknowledged\n"), session.WriteOptions{})
		require.NoError(t, err)
		ids[i] = s.ID.String()
	}
	require.NoError(t, m.Close())
	require.NoError(t, st.Close())

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashInBatch$")
	cmd.Env = append(os.Environ(), batchCrashEnv+"="+string(step), "SESSIOND_CRASH_DATA="+dataDir,
		"SESSIOND_CRASH_DB="+url, "SESSIOND_CRASH_SESSIONS="+strings.Join(ids, ","))
	out, err := cmd.Output()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "the child must die at %s: %s", step, out)
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "child: %v: %s %s", err, out, ee.Stderr)
	acked := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "acked "); ok {
			acked[id] = true
		}
	}
	require.Len(t, acked, 1, "the first batch's write was acknowledged: %s", out)

	st = openStore(t, url, dataDir)
	defer st.Close()
	en = testengine.New(st, dataDir, session.Config{})
	m = en.Sessions
	defer en.Close()
	committed := 0
	for _, s := range ids {
		id := uuid.MustParse(s)
		data, _, err := m.Read(ctx, id, "before.txt", 0, -1)
		require.NoError(t, err)
		assert.Equal(t, "acknowledged\n", string(data))
		muts, err := m.Mutations(ctx, id, 0, 0)
		require.NoError(t, err)
		data, _, err = m.Read(ctx, id, "batched.txt", 0, -1)
		switch {
		case acked[s]:
			require.NoError(t, err, "an acknowledged write reads back")
			assert.Equal(t, "batched "+s+"\n", string(data))
			assert.Len(t, muts, 2)
		case len(muts) == 2:
			committed++
			require.NoError(t, err, "a write in the log is in the view")
			assert.Equal(t, "batched "+s+"\n", string(data))
		default:
			assert.Len(t, muts, 1, "a write not in the log is not in the view")
			assert.ErrorIs(t, err, record.ErrNotFound)
		}
		kept, full, err := m.TreesForTest(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, full, kept)
		live := testrepo.Git(t, repoDir, "rev-parse", "refs/sessions/"+s+"/live")
		assert.Equal(t, kept.String(), live, "the live ref is the store's view again")
	}
	if step == failpoint.StoreCommitted {
		assert.Equal(t, batchSessions-1, committed, "the batch's transaction committed whole")
	} else {
		assert.Equal(t, 0, committed, "nothing of the batch is in the store")
	}
	testrepo.Git(t, repoDir, "fsck", "--strict")
	for _, s := range ids {
		_, _, err := m.Write(ctx, uuid.MustParse(s), "after.txt", []byte("after\n"), session.WriteOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, m.Close())
	testrepo.Git(t, repoDir, "fsck", "--strict")
}

func batchCrashChild() {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	st, err := db.Open(ctx, os.Getenv("SESSIOND_CRASH_DB"), os.Getenv("SESSIOND_CRASH_DATA"))
	if err != nil {
		fail(err)
	}
	m := testengine.New(st, os.Getenv("SESSIOND_CRASH_DATA"), session.Config{}).Sessions
	var ids []uuid.UUID
	for _, s := range strings.Split(os.Getenv("SESSIOND_CRASH_SESSIONS"), ",") {
		id := uuid.MustParse(s)
		if _, err := m.Get(ctx, id); err != nil {
			fail(err)
		}
		ids = append(ids, id)
	}
	step := failpoint.Step(os.Getenv(batchCrashEnv))
	// The first batch (ids[0]'s write alone) waits at its ref step for
	// the others to queue; the second dies at step, once the first write
	// was acknowledged: at the step's second hit, or its first for a step
	// only a batch of several takes. (Batches overlap: the second may
	// pass a step before the first passed a later one.)
	held, ackedFirst := make(chan struct{}), make(chan struct{})
	var hits, refHits atomic.Int64
	die := func() {
		select {
		case <-ackedFirst:
		case <-time.After(30 * time.Second):
			fail(errors.New("the first write was never acknowledged"))
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	dieAt := int64(2)
	if step == failpoint.RefsPartlyMoved {
		dieAt = 1
	}
	atStep := func() {
		if hits.Add(1) == dieAt {
			die()
		}
	}
	failpoint.Enable(failpoint.RefMoved, func() {
		if refHits.Add(1) == 1 {
			close(held)
			for {
				_, _, q, err := m.GroupCommitsForTest(ctx, "r")
				if err != nil {
					fail(err)
				}
				if q == len(ids)-1 {
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
		if step == failpoint.RefMoved {
			atStep()
		}
	})
	if step != failpoint.RefMoved {
		failpoint.Enable(step, atStep)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, _, err := m.Write(ctx, ids[0], "batched.txt", []byte("batched "+ids[0].String()+"\n"), session.WriteOptions{}); err != nil {
			fail(err)
		}
		fmt.Printf("acked %s\n", ids[0])
		os.Stdout.Sync()
		close(ackedFirst)
	})
	<-held
	for _, id := range ids[1:] {
		wg.Go(func() {
			if _, _, err := m.Write(ctx, id, "batched.txt", []byte("batched "+id.String()+"\n"), session.WriteOptions{}); err != nil {
				fail(err)
			}
			fmt.Printf("acked %s\n", id)
		})
	}
	wg.Wait()
	fail(errors.New("the writes finished: the step was never reached"))
}
