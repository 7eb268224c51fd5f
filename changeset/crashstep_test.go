package changeset_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/internal/failpoint"
	"github.com/sessiond/sessiond/internal/pgtest"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
)

const acceptCrashEnv = "SESSIOND_ACCEPT_CRASH_STEP"

// acceptSteps are the steps of the write path an accept takes: its commit
// is one loose object (written, then its directory synced), then the
// branch moves, then the store records it.
var acceptSteps = []failpoint.Step{failpoint.ObjectsWritten, failpoint.DirSynced, failpoint.RefMoved, failpoint.StoreCommitted}

// TestAcceptCrashAtEachStep stops an accept at each of its steps: a child
// process accepts a changeset and kills itself (SIGKILL) at the step; the
// parent checks what the crash left (the branch moved if and only if the
// step is at or after the ref), restarts the engines and checks the exact
// state: recorded accepted with its layer and its session accepted if and
// only if the store committed; otherwise accepting again records it, only
// recording the commit already on the branch when the ref had moved. Either
// way exactly one commit on the branch carries the changeset, and git fsck
// --strict passes. On both stores.
func TestAcceptCrashAtEachStep(t *testing.T) {
	if os.Getenv(acceptCrashEnv) != "" {
		acceptCrashChild()
		return
	}
	stores := []struct {
		name string
		url  func(testing.TB) string
	}{
		{"sqlite", func(testing.TB) string { return "" }},
		{"postgres", pgtest.FreshSchema},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			for _, step := range acceptSteps {
				t.Run(string(step), func(t *testing.T) {
					t.Parallel()
					acceptCrashAtStep(t, st.url(t), step)
				})
			}
		})
	}
}

type crashEngines struct {
	st db.Store
	m  *session.Manager
	cs *changeset.Service
}

func openEngines(t testing.TB, url, dataDir string) crashEngines {
	t.Helper()
	st, err := db.Open(context.Background(), url, dataDir)
	require.NoError(t, err)
	m := session.NewManager(session.Config{Store: st, DataDir: dataDir})
	return crashEngines{st: st, m: m, cs: changeset.New(changeset.Config{Store: st.Changesets(), Sessions: m})}
}

func (e crashEngines) close(t testing.TB) {
	t.Helper()
	require.NoError(t, e.m.Close())
	require.NoError(t, e.st.Close())
}

func acceptCrashAtStep(t *testing.T, url string, step failpoint.Step) {
	ctx := t.Context()
	bare := testrepo.BuildBare(t, "small")
	dataDir := t.TempDir()
	e := openEngines(t, url, dataDir)
	_, err := e.m.RegisterRepo(ctx, "bare", bare)
	require.NoError(t, err)
	s, err := e.m.Create(ctx, session.CreateOptions{Repo: "bare", Base: "main", AgentID: "a"})
	require.NoError(t, err)
	_, _, err = e.m.Write(ctx, s.ID, "crash.txt", []byte("accepted\n"), session.WriteOptions{})
	require.NoError(t, err)
	c, err := e.cs.Submit(ctx, s.ID, changeset.SubmitOptions{Intent: "crash"})
	require.NoError(t, err)
	e.close(t)
	git := func(args ...string) string { return testrepo.Git(t, bare, args...) }
	before := git("rev-parse", "main")

	cmd := exec.Command(os.Args[0], "-test.run=^TestAcceptCrashAtEachStep$")
	cmd.Env = append(os.Environ(), acceptCrashEnv+"="+string(step), "SESSIOND_CRASH_DATA="+dataDir,
		"SESSIOND_CRASH_DB="+url, "SESSIOND_CRASH_CHANGESET="+c.ID.String())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "the child must die at %s: %s", step, out)
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "child: %v: %s", err, out)

	// What the crash left.
	crashed := git("rev-parse", "main")
	moved := step == failpoint.RefMoved || step == failpoint.StoreCommitted
	if moved {
		assert.Equal(t, before, git("rev-parse", "main^"), "the branch moved by one commit")
		assert.Equal(t, "accepted", git("show", "main:crash.txt"))
	} else {
		assert.Equal(t, before, crashed, "the branch did not move")
	}

	// Restart and check the exact state.
	e = openEngines(t, url, dataDir)
	defer e.close(t)
	got, err := e.cs.Get(ctx, c.ID)
	require.NoError(t, err)
	layers, err := e.cs.Layers(ctx, "bare", "main")
	require.NoError(t, err)
	sess, err := e.m.Get(ctx, s.ID)
	require.NoError(t, err)
	if step == failpoint.StoreCommitted {
		assert.Equal(t, changeset.StatusAccepted, got.Status)
		assert.Equal(t, crashed, got.AcceptedCommit.String())
		require.Len(t, layers, 1)
		assert.Equal(t, crashed, layers[0].Commit.String())
		assert.Equal(t, session.StateAccepted, sess.State)
		_, err = e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{})
		assert.ErrorIs(t, err, session.ErrConflict, "accepted once")
		assert.Equal(t, crashed, git("rev-parse", "main"))
	} else {
		assert.Equal(t, changeset.StatusOpen, got.Status, "the store did not record the accept")
		assert.Empty(t, layers)
		assert.Equal(t, session.StateSubmitted, sess.State)
		res, err := e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{Actor: "again"})
		require.NoError(t, err)
		assert.Equal(t, step == failpoint.RefMoved, res.Recovered, "only a moved branch is recovered")
		if step == failpoint.RefMoved {
			assert.Equal(t, crashed, res.Commit.String(), "the commit on the branch is recorded, not written again")
		}
		assert.Equal(t, res.Commit.String(), git("rev-parse", "main"))
		assert.Equal(t, before, git("rev-parse", "main^"))
		got, err = e.cs.Get(ctx, c.ID)
		require.NoError(t, err)
		assert.Equal(t, changeset.StatusAccepted, got.Status)
		sess, err = e.m.Get(ctx, s.ID)
		require.NoError(t, err)
		assert.Equal(t, session.StateAccepted, sess.State)
	}
	carrying := git("log", "--format=%H", "--fixed-strings", "--grep=Sessiond-Changeset: "+c.ID.String(), "main")
	assert.Len(t, strings.Fields(carrying), 1, "exactly one commit carries the changeset")
	git("fsck", "--strict")
}

func acceptCrashChild() {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	st, err := db.Open(ctx, os.Getenv("SESSIOND_CRASH_DB"), os.Getenv("SESSIOND_CRASH_DATA"))
	if err != nil {
		fail(err)
	}
	m := session.NewManager(session.Config{Store: st, DataDir: os.Getenv("SESSIOND_CRASH_DATA")})
	cs := changeset.New(changeset.Config{Store: st.Changesets(), Sessions: m})
	id := uuid.MustParse(os.Getenv("SESSIOND_CRASH_CHANGESET"))
	if _, err := cs.Get(ctx, id); err != nil {
		fail(err)
	}
	failpoint.Enable(failpoint.Step(os.Getenv(acceptCrashEnv)), func() {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	})
	if _, err := cs.Accept(ctx, id, changeset.AcceptOptions{Actor: "crash"}); err != nil {
		fail(err)
	}
	fail(errors.New("the accept finished: the step was never reached"))
}
