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
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/record"
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

const undoCrashEnv = "SESSIOND_UNDO_CRASH_STEP"

// TestUndoCrashAtEachStep does the same for the undo of an accepted
// changeset: the branch carries the revert commit if and only if the
// step is at or after the ref; the layer and the changeset are undone if
// and only if the store committed; otherwise undoing again records it,
// recovering the revert commit already on the branch (by its
// Sessiond-Undo trailer) instead of writing a second one.
func TestUndoCrashAtEachStep(t *testing.T) {
	if os.Getenv(undoCrashEnv) != "" {
		undoCrashChild()
		return
	}
	for _, st := range []struct {
		name string
		url  func(testing.TB) string
	}{
		{"sqlite", func(testing.TB) string { return "" }},
		{"postgres", pgtest.FreshSchema},
	} {
		t.Run(st.name, func(t *testing.T) {
			for _, step := range acceptSteps {
				t.Run(string(step), func(t *testing.T) {
					t.Parallel()
					undoCrashAtStep(t, st.url(t), step)
				})
			}
		})
	}
}

type crashEngines struct {
	st db.Store
	en *testengine.Engine
	m  *session.Manager
	cs *changeset.Service
}

func openEngines(t testing.TB, url, dataDir string) crashEngines {
	t.Helper()
	st, err := db.Open(context.Background(), url, dataDir)
	require.NoError(t, err)
	en := testengine.New(st, dataDir, session.Config{})
	return crashEngines{st: st, en: en, m: en.Sessions, cs: en.Changesets}
}

func (e crashEngines) close(t testing.TB) {
	t.Helper()
	require.NoError(t, e.en.Close())
	require.NoError(t, e.st.Close())
}

// crashSetup is an engine's data directory with a submitted changeset
// that writes crash.txt on the bare repository's main.
type crashSetup struct {
	url, dataDir, bare string
	session            uuid.UUID
	changeset          uuid.UUID
}

func newCrashSetup(t *testing.T, url string, accept bool) crashSetup {
	t.Helper()
	ctx := t.Context()
	c := crashSetup{url: url, dataDir: t.TempDir(), bare: testrepo.BuildBare(t, "small")}
	e := openEngines(t, url, c.dataDir)
	_, err := e.en.Repos.Register(ctx, "bare", c.bare)
	require.NoError(t, err)
	s, err := e.m.Create(ctx, session.CreateOptions{Repo: "bare", Base: "main", AgentID: "a"})
	require.NoError(t, err)
	_, _, err = e.m.Write(ctx, s.ID, "crash.txt", []byte("accepted\n"), session.WriteOptions{})
	require.NoError(t, err)
	cs, err := e.cs.Submit(ctx, s.ID, changeset.SubmitOptions{Intent: "crash"})
	require.NoError(t, err)
	if accept {
		_, err = e.cs.Accept(ctx, cs.ID, changeset.AcceptOptions{})
		require.NoError(t, err)
	}
	e.close(t)
	c.session, c.changeset = s.ID, cs.ID
	return c
}

// crashChild runs this test binary's test in a child that must kill
// itself (SIGKILL) at step.
func (c crashSetup) crashChild(t *testing.T, test, env string, step failpoint.Step) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env+"="+string(step), "SESSIOND_CRASH_DATA="+c.dataDir,
		"SESSIOND_CRASH_DB="+c.url, "SESSIOND_CRASH_CHANGESET="+c.changeset.String())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "the child must die at %s: %s", step, out)
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "child: %v: %s", err, out)
}

// carrying is how many commits of main carry trailer key: the changeset.
func (c crashSetup) carrying(t *testing.T, key string) int {
	t.Helper()
	out := testrepo.Git(t, c.bare, "log", "--format=%H", "--fixed-strings", "--grep="+key+": "+c.changeset.String(), "main")
	return len(strings.Fields(out))
}

func undoCrashAtStep(t *testing.T, url string, step failpoint.Step) {
	ctx := t.Context()
	c := newCrashSetup(t, url, true)
	git := func(args ...string) string { return testrepo.Git(t, c.bare, args...) }
	accepted := git("rev-parse", "main")
	c.crashChild(t, "TestUndoCrashAtEachStep", undoCrashEnv, step)

	crashed := git("rev-parse", "main")
	if step == failpoint.RefMoved || step == failpoint.StoreCommitted {
		assert.Equal(t, accepted, git("rev-parse", "main^"), "the branch moved by one commit")
		assert.Equal(t, "", git("ls-tree", "--name-only", "main", "crash.txt"), "the revert took the file out")
	} else {
		assert.Equal(t, accepted, crashed, "the branch did not move")
	}

	e := openEngines(t, url, c.dataDir)
	defer e.close(t)
	got, err := e.cs.Get(ctx, c.changeset)
	require.NoError(t, err)
	layers, err := e.cs.Layers(ctx, "bare", "main")
	require.NoError(t, err)
	require.Len(t, layers, 1)
	if step == failpoint.StoreCommitted {
		assert.Equal(t, changeset.StatusUndone, got.Status)
		assert.Equal(t, changeset.LayerUndone, layers[0].State)
		assert.Equal(t, crashed, layers[0].RevertCommit.String())
		_, err = e.cs.Undo(ctx, changeset.UndoOptions{Changesets: []uuid.UUID{c.changeset}})
		assert.ErrorIs(t, err, record.ErrConflict, "undone once")
		assert.Equal(t, crashed, git("rev-parse", "main"))
	} else {
		assert.Equal(t, changeset.StatusAccepted, got.Status, "the store did not record the undo")
		assert.Equal(t, changeset.LayerAccepted, layers[0].State)
		res, err := e.cs.Undo(ctx, changeset.UndoOptions{Changesets: []uuid.UUID{c.changeset}, Actor: "again"})
		require.NoError(t, err)
		require.Len(t, res.Reverts, 1)
		if step == failpoint.RefMoved {
			assert.Equal(t, crashed, res.Reverts[0].RevertCommit.String(), "the revert on the branch is recorded, not written again")
		}
		assert.Equal(t, res.Commit.String(), git("rev-parse", "main"))
		assert.Equal(t, accepted, git("rev-parse", "main^"))
		got, err = e.cs.Get(ctx, c.changeset)
		require.NoError(t, err)
		assert.Equal(t, changeset.StatusUndone, got.Status)
	}
	assert.Equal(t, 1, c.carrying(t, "Sessiond-Undo"), "exactly one commit undoes the changeset")
	git("fsck", "--strict")
}

func undoCrashChild() {
	ctx := context.Background()
	cs, id := crashChildEngines()
	failpoint.Enable(failpoint.Step(os.Getenv(undoCrashEnv)), killSelf)
	if _, err := cs.Undo(ctx, changeset.UndoOptions{Changesets: []uuid.UUID{id}, Actor: "crash"}); err != nil {
		childFail(err)
	}
	childFail(errors.New("the undo finished: the step was never reached"))
}

func childFail(err error) {
	fmt.Fprintln(os.Stderr, "child:", err)
	os.Exit(2)
}

func killSelf() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// crashChildEngines opens the engines a crash child acts with, and the
// changeset it acts on.
func crashChildEngines() (*changeset.Service, uuid.UUID) {
	ctx := context.Background()
	st, err := db.Open(ctx, os.Getenv("SESSIOND_CRASH_DB"), os.Getenv("SESSIOND_CRASH_DATA"))
	if err != nil {
		childFail(err)
	}
	cs := testengine.New(st, os.Getenv("SESSIOND_CRASH_DATA"), session.Config{}).Changesets
	id := uuid.MustParse(os.Getenv("SESSIOND_CRASH_CHANGESET"))
	if _, err := cs.Get(ctx, id); err != nil {
		childFail(err)
	}
	return cs, id
}

func acceptCrashAtStep(t *testing.T, url string, step failpoint.Step) {
	ctx := t.Context()
	c := newCrashSetup(t, url, false)
	git := func(args ...string) string { return testrepo.Git(t, c.bare, args...) }
	before := git("rev-parse", "main")
	c.crashChild(t, "TestAcceptCrashAtEachStep", acceptCrashEnv, step)

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
	e := openEngines(t, url, c.dataDir)
	defer e.close(t)
	got, err := e.cs.Get(ctx, c.changeset)
	require.NoError(t, err)
	layers, err := e.cs.Layers(ctx, "bare", "main")
	require.NoError(t, err)
	sess, err := e.m.Get(ctx, c.session)
	require.NoError(t, err)
	if step == failpoint.StoreCommitted {
		assert.Equal(t, changeset.StatusAccepted, got.Status)
		assert.Equal(t, crashed, got.AcceptedCommit.String())
		require.Len(t, layers, 1)
		assert.Equal(t, crashed, layers[0].Commit.String())
		assert.Equal(t, session.StateAccepted, sess.State)
		_, err = e.cs.Accept(ctx, c.changeset, changeset.AcceptOptions{})
		assert.ErrorIs(t, err, record.ErrConflict, "accepted once")
		assert.Equal(t, crashed, git("rev-parse", "main"))
	} else {
		assert.Equal(t, changeset.StatusOpen, got.Status, "the store did not record the accept")
		assert.Empty(t, layers)
		assert.Equal(t, session.StateSubmitted, sess.State)
		res, err := e.cs.Accept(ctx, c.changeset, changeset.AcceptOptions{Actor: "again"})
		require.NoError(t, err)
		assert.Equal(t, step == failpoint.RefMoved, res.Recovered, "only a moved branch is recovered")
		if step == failpoint.RefMoved {
			assert.Equal(t, crashed, res.Commit.String(), "the commit on the branch is recorded, not written again")
		}
		assert.Equal(t, res.Commit.String(), git("rev-parse", "main"))
		assert.Equal(t, before, git("rev-parse", "main^"))
		got, err = e.cs.Get(ctx, c.changeset)
		require.NoError(t, err)
		assert.Equal(t, changeset.StatusAccepted, got.Status)
		sess, err = e.m.Get(ctx, c.session)
		require.NoError(t, err)
		assert.Equal(t, session.StateAccepted, sess.State)
	}
	assert.Equal(t, 1, c.carrying(t, "Sessiond-Changeset"), "exactly one commit carries the changeset")
	git("fsck", "--strict")
}

func acceptCrashChild() {
	ctx := context.Background()
	cs, id := crashChildEngines()
	failpoint.Enable(failpoint.Step(os.Getenv(acceptCrashEnv)), killSelf)
	if _, err := cs.Accept(ctx, id, changeset.AcceptOptions{Actor: "crash"}); err != nil {
		childFail(err)
	}
	childFail(errors.New("the accept finished: the step was never reached"))
}
