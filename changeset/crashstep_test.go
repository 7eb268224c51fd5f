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
	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/failpoint"
	"github.com/sessiond/sessiond/internal/pgtest"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/session"
)

const acceptCrashEnv = "SESSIOND_ACCEPT_CRASH_STEP"

// crashStores are the two stores every step crash test runs on.
var crashStores = []struct {
	name string
	url  func(testing.TB) string
}{
	{"sqlite", func(testing.TB) string { return "" }},
	{"postgres", pgtest.FreshSchema},
}

// How the engines learn of the crash after the restart: at start, as the
// daemon does (Reconcile), or at the next touch without it, of the
// changeset itself or of its branch (another changeset accepted there).
const (
	byStart  = "start"
	byTouch  = "touch"
	byBranch = "branch"
)

var settleModes = []string{byStart, byTouch, byBranch}

// eachBranchCrash runs crash on both stores at every step of an accept or
// an undo, settled in each of modes; a store's cases run in parallel.
func eachBranchCrash(t *testing.T, modes []string, crash func(t *testing.T, url string, step failpoint.Step, mode string)) {
	for _, st := range crashStores {
		t.Run(st.name, func(t *testing.T) {
			for _, step := range failpoint.BranchSteps {
				for _, mode := range modes {
					t.Run(string(step)+"/"+mode, func(t *testing.T) {
						t.Parallel()
						crash(t, st.url(t), step, mode)
					})
				}
			}
		})
	}
}

// moves reports whether a crash at step leaves the branch moved: the ref
// moves after the objects, their directory and the flight are durable.
func moves(step failpoint.Step) bool {
	return step == failpoint.RefMoved || step == failpoint.StoreCommitted
}

// TestAcceptCrashAtEachStep stops an accept at each of its steps
// (failpoint.BranchSteps): a child process accepts a changeset and kills
// itself (SIGKILL) at the step. The parent checks what the crash left (the
// branch moved if and only if the step is at or after the ref; the accept
// in flight recorded from the flight until the store committed), restarts
// the engines and settles the crash at start, at the next touch of the
// changeset or at the next touch of its branch, and checks the exact
// state: when the branch moved, the changeset accepted with that commit,
// its one layer, its session accepted and one accepted event; when it did
// not, the changeset open as before, no layer, its session submitted, and
// an accept then lands it. Either way exactly one commit on the branch
// carries the changeset, nothing is in flight, and git fsck --strict
// passes. On both stores.
func TestAcceptCrashAtEachStep(t *testing.T) {
	if os.Getenv(acceptCrashEnv) != "" {
		acceptCrashChild()
		return
	}
	eachBranchCrash(t, settleModes, acceptCrashAtStep)
}

const revisionCrashEnv = "SESSIOND_REVISION_CRASH_STEP"

// TestReviseAfterCrashedAccept is the case of a second revision after an
// accept of the first crashed: the session writes again and submits, and
// the new revision is accepted. When the crash had moved the branch, the
// first revision is accepted (at start or by the submit itself) and the
// submit is refused: the session is closed, and the branch keeps exactly
// the first revision's commit. When it had not, the second revision is
// submitted and accepted as itself: not "recovered", its own content and
// Sessiond-Revision trailer on the branch, never the first one's commit.
// On both stores, settled at start and at the submit.
func TestReviseAfterCrashedAccept(t *testing.T) {
	if os.Getenv(revisionCrashEnv) != "" {
		acceptCrashChild()
		return
	}
	eachBranchCrash(t, []string{byStart, byTouch}, reviseAfterCrash)
}

const undoCrashEnv = "SESSIOND_UNDO_CRASH_STEP"

// TestUndoCrashAtEachStep does the same for the undo of an accepted
// changeset: the branch carries the revert commit if and only if the step
// is at or after the ref; after the restart and the settling (at start, at
// the next undo, or at the next accept on the branch) the layer and the
// changeset are undone with that revert commit if and only if the branch
// moved, and otherwise are as before, and undoing then writes one revert.
func TestUndoCrashAtEachStep(t *testing.T) {
	if os.Getenv(undoCrashEnv) != "" {
		undoCrashChild()
		return
	}
	eachBranchCrash(t, settleModes, undoCrashAtStep)
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

// accepted is how many changeset.accepted events the store holds for
// changeset id.
func (e crashEngines) accepted(t testing.TB, id uuid.UUID) int {
	t.Helper()
	evs, err := e.st.Changesets().ListEvents(t.Context(), events.Filter{Repo: "bare", Types: []string{changeset.EventAccepted}, Limit: 1000})
	require.NoError(t, err)
	n := 0
	for _, ev := range evs {
		if strings.Contains(string(ev.Payload), id.String()) {
			n++
		}
	}
	return n
}

// inFlight is what the store holds in flight for the setup's changeset:
// its accept's commit and its layer's revert commit (zero for none).
func (e crashEngines) inFlight(t testing.TB, c crashSetup) (accepting, reverting gitstore.OID) {
	t.Helper()
	got, err := e.cs.Get(t.Context(), c.changeset)
	require.NoError(t, err)
	if got.Accepting != nil {
		accepting = got.Accepting.Commit
	}
	layers, err := e.cs.Layers(t.Context(), "bare", "main")
	require.NoError(t, err)
	for _, l := range layers {
		if l.Changeset == c.changeset {
			reverting = l.Reverting
		}
	}
	return accepting, reverting
}

// crashSetup is an engine's data directory with a submitted changeset
// that writes crash.txt on the bare repository's main, and another
// submitted changeset on main (other.txt), whose accept touches the
// branch.
type crashSetup struct {
	url, dataDir, bare string
	session            uuid.UUID
	changeset          uuid.UUID
	other              uuid.UUID
}

func newCrashSetup(t *testing.T, url string, accept bool) crashSetup {
	t.Helper()
	ctx := t.Context()
	c := crashSetup{url: url, dataDir: t.TempDir(), bare: testrepo.BuildBare(t, "small")}
	e := openEngines(t, url, c.dataDir)
	_, err := e.en.Repos.Register(ctx, "bare", c.bare)
	require.NoError(t, err)
	submit := func(path, content string) (uuid.UUID, uuid.UUID) {
		s, err := e.m.Create(ctx, session.CreateOptions{Repo: "bare", Base: "main", AgentID: "a"})
		require.NoError(t, err)
		_, _, err = e.m.Write(ctx, s.ID, path, []byte(content), session.WriteOptions{})
		require.NoError(t, err)
		cs, err := e.cs.Submit(ctx, s.ID, changeset.SubmitOptions{Intent: path})
		require.NoError(t, err)
		return s.ID, cs.ID
	}
	c.session, c.changeset = submit("crash.txt", "accepted\n")
	_, c.other = submit("other.txt", "other\n")
	if accept {
		_, err = e.cs.Accept(ctx, c.changeset, changeset.AcceptOptions{})
		require.NoError(t, err)
	}
	e.close(t)
	return c
}

// crashChild runs this test binary's test in a child that must kill
// itself (SIGKILL) at step.
func (c crashSetup) crashChild(t *testing.T, test, env string, step failpoint.Step) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env+"="+string(step), "SESSIOND_CRASH_DATA="+c.dataDir,
		"SESSIOND_CRASH_DB="+c.url, "SESSIOND_CRASH_CHANGESET="+c.changeset.String(), "SESSIOND_CRASH_STEP="+string(step))
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

// checkLeft checks what a crash at step left before anything settles it:
// the branch moved by one commit if and only if the ref moved, and the
// store holds the move in flight from the flight until its record.
func (c crashSetup) checkLeft(t *testing.T, step failpoint.Step, before, crashed string, flight gitstore.OID) {
	t.Helper()
	if moves(step) {
		assert.Equal(t, before, testrepo.Git(t, c.bare, "rev-parse", crashed+"^"), "the branch moved by one commit")
	} else {
		assert.Equal(t, before, crashed, "the branch did not move")
	}
	switch step {
	case failpoint.IntentRecorded:
		assert.False(t, flight.IsZero(), "in flight")
		assert.NotEqual(t, crashed, flight.String(), "the commit in flight is not on the branch")
	case failpoint.RefMoved:
		assert.Equal(t, crashed, flight.String(), "the commit in flight is the branch's head")
	default:
		assert.True(t, flight.IsZero(), "nothing in flight before the flight or after the record")
	}
}

func acceptCrashAtStep(t *testing.T, url string, step failpoint.Step, mode string) {
	ctx := t.Context()
	c := newCrashSetup(t, url, false)
	git := func(args ...string) string { return testrepo.Git(t, c.bare, args...) }
	before := git("rev-parse", "main")
	c.crashChild(t, "TestAcceptCrashAtEachStep", acceptCrashEnv, step)
	crashed := git("rev-parse", "main")

	e := openEngines(t, url, c.dataDir)
	defer e.close(t)
	flight, _ := e.inFlight(t, c)
	c.checkLeft(t, step, before, crashed, flight)
	moved, committed := moves(step), step == failpoint.StoreCommitted

	// Settle, and what settling answers.
	switch mode {
	case byStart:
		settled, err := e.cs.Reconcile(ctx)
		require.NoError(t, err)
		switch {
		case step == failpoint.RefMoved:
			require.Len(t, settled, 1)
			require.Len(t, settled[0].Accepts, 1)
			a := settled[0].Accepts[0]
			assert.True(t, a.Recovered)
			assert.Equal(t, crashed, a.Commit.String())
			assert.Equal(t, c.changeset, a.Changeset.ID)
		case step == failpoint.IntentRecorded:
			require.Len(t, settled, 1)
			assert.Empty(t, settled[0].Accepts)
			assert.Equal(t, []uuid.UUID{c.changeset}, settled[0].Dropped)
		default:
			assert.Empty(t, settled, "nothing was in flight")
		}
	case byTouch:
		res, err := e.cs.Accept(ctx, c.changeset, changeset.AcceptOptions{Actor: "again"})
		if committed {
			assert.ErrorIs(t, err, record.ErrConflict, "accepted once")
			break
		}
		require.NoError(t, err)
		assert.Equal(t, step == failpoint.RefMoved, res.Recovered, "only a moved branch is recovered")
		if moved {
			assert.Equal(t, crashed, res.Commit.String(), "the commit on the branch is recorded, not written again")
		} else {
			assert.Equal(t, before, git("rev-parse", res.Commit.String()+"^"), "landed on the branch as it was")
		}
		assert.Equal(t, res.Commit.String(), git("rev-parse", "main"))
	case byBranch:
		res, err := e.cs.Accept(ctx, c.other, changeset.AcceptOptions{})
		require.NoError(t, err)
		assert.Equal(t, git("rev-parse", "main^"), crashed, "the other lands on the branch as the crash left it")
		assert.Equal(t, res.Commit.String(), git("rev-parse", "main"))
	}

	// The exact state.
	got, err := e.cs.Get(ctx, c.changeset)
	require.NoError(t, err)
	layers, err := e.cs.Layers(ctx, "bare", "main")
	require.NoError(t, err)
	sess, err := e.m.Get(ctx, c.session)
	require.NoError(t, err)
	assert.Nil(t, got.Accepting, "nothing in flight once settled")
	landed := moved || mode == byTouch
	var mine []changeset.Layer
	for _, l := range layers {
		if l.Changeset == c.changeset {
			mine = append(mine, l)
		}
	}
	if landed {
		assert.Equal(t, changeset.StatusAccepted, got.Status)
		require.Len(t, mine, 1)
		assert.Equal(t, got.AcceptedCommit, mine[0].Commit)
		if moved {
			assert.Equal(t, crashed, got.AcceptedCommit.String())
		}
		assert.Equal(t, session.StateAccepted, sess.State)
		assert.Equal(t, 1, e.accepted(t, c.changeset), "one accepted event")
		_, err = e.cs.Accept(ctx, c.changeset, changeset.AcceptOptions{})
		assert.ErrorIs(t, err, record.ErrConflict, "accepted once")
	} else {
		assert.Equal(t, changeset.StatusOpen, got.Status, "as before the accept")
		assert.Equal(t, 1, got.Revision)
		assert.True(t, got.AcceptedCommit.IsZero())
		assert.Empty(t, mine)
		assert.Equal(t, session.StateSubmitted, sess.State)
		assert.Zero(t, e.accepted(t, c.changeset))
		head := git("rev-parse", "main")
		res, err := e.cs.Accept(ctx, c.changeset, changeset.AcceptOptions{Actor: "again"})
		require.NoError(t, err)
		assert.False(t, res.Recovered)
		assert.Equal(t, res.Commit.String(), git("rev-parse", "main"))
		assert.Equal(t, head, git("rev-parse", "main^"))
	}
	assert.Equal(t, "accepted", git("show", "main:crash.txt"))
	assert.Equal(t, 1, c.carrying(t, "Sessiond-Changeset"), "exactly one commit carries the changeset")
	git("fsck", "--strict")
}

func reviseAfterCrash(t *testing.T, url string, step failpoint.Step, mode string) {
	ctx := t.Context()
	c := newCrashSetup(t, url, false)
	git := func(args ...string) string { return testrepo.Git(t, c.bare, args...) }
	before := git("rev-parse", "main")
	c.crashChild(t, "TestReviseAfterCrashedAccept", revisionCrashEnv, step)
	crashed := git("rev-parse", "main")

	e := openEngines(t, url, c.dataDir)
	defer e.close(t)
	if mode == byStart {
		_, err := e.cs.Reconcile(ctx)
		require.NoError(t, err)
	}
	_, _, err := e.m.Write(ctx, c.session, "crash.txt", []byte("revision 2\n"), session.WriteOptions{})
	if step == failpoint.StoreCommitted || moves(step) && mode == byStart {
		require.ErrorIs(t, err, record.ErrSessionClosed, "the session was accepted, before the crash or at start")
	} else {
		require.NoError(t, err, "a submitted session takes writes")
	}
	_, err = e.cs.Submit(ctx, c.session, changeset.SubmitOptions{})
	got, gerr := e.cs.Get(ctx, c.changeset)
	require.NoError(t, gerr)
	if moves(step) {
		require.ErrorIs(t, err, record.ErrSessionClosed, "revision 1 is on the branch: the session is accepted")
		assert.Equal(t, changeset.StatusAccepted, got.Status)
		assert.Equal(t, 1, got.Revision)
		assert.Equal(t, crashed, got.AcceptedCommit.String())
		_, err = e.cs.Accept(ctx, c.changeset, changeset.AcceptOptions{Revision: 2})
		assert.ErrorIs(t, err, record.ErrConflict)
		assert.Equal(t, crashed, git("rev-parse", "main"), "nothing more on the branch")
		assert.Equal(t, "accepted", git("show", "main:crash.txt"))
		assert.Contains(t, git("log", "-1", "--format=%B", "main"), "Sessiond-Revision: 1")
	} else {
		require.NoError(t, err)
		assert.Equal(t, 2, got.Revision)
		assert.Equal(t, changeset.StatusOpen, got.Status)
		res, err := e.cs.Accept(ctx, c.changeset, changeset.AcceptOptions{Revision: 2})
		require.NoError(t, err)
		assert.False(t, res.Recovered, "revision 2 is not revision 1's accept")
		assert.Equal(t, res.Commit.String(), git("rev-parse", "main"))
		assert.Equal(t, before, git("rev-parse", "main^"))
		assert.Equal(t, "revision 2", git("show", "main:crash.txt"))
		assert.Contains(t, git("log", "-1", "--format=%B", "main"), "Sessiond-Revision: 2")
		got, err = e.cs.Get(ctx, c.changeset)
		require.NoError(t, err)
		assert.Equal(t, res.Commit, got.AcceptedCommit)
	}
	assert.Equal(t, 1, e.accepted(t, c.changeset), "one accepted event")
	assert.Equal(t, 1, c.carrying(t, "Sessiond-Changeset"), "exactly one commit carries the changeset")
	git("fsck", "--strict")
}

func undoCrashAtStep(t *testing.T, url string, step failpoint.Step, mode string) {
	ctx := t.Context()
	c := newCrashSetup(t, url, true)
	git := func(args ...string) string { return testrepo.Git(t, c.bare, args...) }
	accepted := git("rev-parse", "main")
	c.crashChild(t, "TestUndoCrashAtEachStep", undoCrashEnv, step)
	crashed := git("rev-parse", "main")
	if moves(step) {
		assert.Equal(t, "", git("ls-tree", "--name-only", "main", "crash.txt"), "the revert took the file out")
	}

	e := openEngines(t, url, c.dataDir)
	defer e.close(t)
	_, flight := e.inFlight(t, c)
	c.checkLeft(t, step, accepted, crashed, flight)
	moved, committed := moves(step), step == failpoint.StoreCommitted
	undo := changeset.UndoOptions{Changesets: []uuid.UUID{c.changeset}, Actor: "again"}

	switch mode {
	case byStart:
		settled, err := e.cs.Reconcile(ctx)
		require.NoError(t, err)
		switch step {
		case failpoint.RefMoved:
			require.Len(t, settled, 1)
			require.NotNil(t, settled[0].Undo)
			assert.Equal(t, crashed, settled[0].Undo.Commit.String())
			assert.Equal(t, accepted, settled[0].Undo.Head.String())
			require.Len(t, settled[0].Undo.Reverts, 1)
			assert.Equal(t, crashed, settled[0].Undo.Reverts[0].RevertCommit.String())
		case failpoint.IntentRecorded:
			require.Len(t, settled, 1)
			assert.Nil(t, settled[0].Undo)
			assert.Equal(t, []uuid.UUID{c.changeset}, settled[0].Dropped)
		default:
			assert.Empty(t, settled, "nothing was in flight")
		}
	case byTouch:
		res, err := e.cs.Undo(ctx, undo)
		if committed {
			assert.ErrorIs(t, err, record.ErrConflict, "undone once")
			break
		}
		require.NoError(t, err)
		require.Len(t, res.Reverts, 1)
		if moved {
			assert.Equal(t, crashed, res.Reverts[0].RevertCommit.String(), "the revert on the branch is recorded, not written again")
		}
		assert.Equal(t, res.Commit.String(), git("rev-parse", "main"))
		assert.Equal(t, accepted, git("rev-parse", "main^"))
	case byBranch:
		_, err := e.cs.Accept(ctx, c.other, changeset.AcceptOptions{})
		require.NoError(t, err)
		assert.Equal(t, crashed, git("rev-parse", "main^"), "the other lands on the branch as the crash left it")
	}

	got, err := e.cs.Get(ctx, c.changeset)
	require.NoError(t, err)
	layers, err := e.cs.Layers(ctx, "bare", "main")
	require.NoError(t, err)
	var mine *changeset.Layer
	for i := range layers {
		if layers[i].Changeset == c.changeset {
			mine = &layers[i]
		}
	}
	require.NotNil(t, mine)
	assert.True(t, mine.Reverting.IsZero(), "nothing in flight once settled")
	if moved || mode == byTouch {
		assert.Equal(t, changeset.StatusUndone, got.Status)
		assert.Equal(t, changeset.LayerUndone, mine.State)
		if moved {
			assert.Equal(t, crashed, mine.RevertCommit.String())
		}
		_, err = e.cs.Undo(ctx, undo)
		assert.ErrorIs(t, err, record.ErrConflict, "undone once")
	} else {
		assert.Equal(t, changeset.StatusAccepted, got.Status, "as before the undo")
		assert.Equal(t, changeset.LayerAccepted, mine.State)
		assert.True(t, mine.RevertCommit.IsZero())
		head := git("rev-parse", "main")
		res, err := e.cs.Undo(ctx, undo)
		require.NoError(t, err)
		assert.Equal(t, res.Commit.String(), git("rev-parse", "main"))
		assert.Equal(t, head, git("rev-parse", "main^"))
	}
	assert.Equal(t, "", git("ls-tree", "--name-only", "main", "crash.txt"))
	assert.Equal(t, 1, c.carrying(t, "Sessiond-Undo"), "exactly one commit undoes the changeset")
	git("fsck", "--strict")
}

func undoCrashChild() {
	ctx := context.Background()
	cs, id := crashChildEngines()
	failpoint.Enable(failpoint.Step(os.Getenv("SESSIOND_CRASH_STEP")), killSelf)
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

func acceptCrashChild() {
	ctx := context.Background()
	cs, id := crashChildEngines()
	failpoint.Enable(failpoint.Step(os.Getenv("SESSIOND_CRASH_STEP")), killSelf)
	if _, err := cs.Accept(ctx, id, changeset.AcceptOptions{Actor: "crash"}); err != nil {
		childFail(err)
	}
	childFail(errors.New("the accept finished: the step was never reached"))
}
