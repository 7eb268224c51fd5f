package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/environment"
	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
)

// TestConformance runs the one suite every session.Store implementation
// must pass, against each backend, each case on a fresh database.
func TestConformance(t *testing.T) {
	cases := []struct {
		name string
		fn   func(t *testing.T, b backend, s Store)
	}{
		{"Repos", testRepos},
		{"Sessions", testSessions},
		{"ListSessions", testListSessions},
		{"SessionStateCAS", testSessionStateCAS},
		{"SessionHeadCAS", testSessionHeadCAS},
		{"Touch", testTouch},
		{"AppendMutation", testAppendMutation},
		{"MutationExpectedSeq", testMutationExpectedSeq},
		{"ClosedSession", testClosedSession},
		{"ReplaceOverlay", testReplaceOverlay},
		{"OverlayBatches", testOverlayBatches},
		{"Reads", testReads},
		{"Conflicts", testConflicts},
		{"ListMutations", testListMutations},
		{"Checkpoints", testCheckpoints},
		{"Changesets", testChangesets},
		{"Reviews", testReviews},
		{"Layers", testLayers},
		{"ChangesetSelection", testChangesetSelection},
		{"ReviseChangeset", testReviseChangeset},
		{"InFlight", testInFlight},
		{"CheckSpace", testCheckSpace},
		{"RepoPolicy", testRepoPolicy},
		{"RepoEnvironment", testRepoEnvironment},
		{"Runs", testRuns},
		{"Events", testEvents},
		{"InTx", testInTx},
		{"CASRace", testCASRace},
		{"SeqGoroutines", testSeqGoroutines},
		{"SeqProcesses", testSeqProcesses},
		{"ContextCanceled", testContextCanceled},
		{"Reopen", testReopen},
		{"Migrations", testMigrations},
		{"Objects", testObjects},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					c.fn(t, b, b.openStore(t, b.fresh(t)))
				})
			}
		})
	}
}

func assertConflict(t *testing.T, err error, field, current string) {
	t.Helper()
	require.ErrorIs(t, err, record.ErrConflict)
	var ce *record.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, field, ce.Field)
	assert.Equal(t, current, ce.Current)
}

func testRepos(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	b := mkRepo(t, s, "beta")
	a := mkRepo(t, s, "alpha")

	got, err := s.GetRepo(ctx, "beta")
	require.NoError(t, err)
	assert.Equal(t, b, got)
	assert.ErrorIs(t, s.CreateRepo(ctx, repos.Repo{Name: "beta", Path: "x", CreatedAt: t0}), record.ErrDuplicate)
	_, err = s.GetRepo(ctx, "gamma")
	assert.ErrorIs(t, err, record.ErrNotFound)

	all, err := s.ListRepos(ctx)
	require.NoError(t, err)
	assert.Equal(t, []repos.Repo{a, b}, all)
}

func testSessions(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	parent := mkSession(t, s, "r", nil)
	want := session.Session{
		ID:           uuid.New(),
		Repo:         "r",
		Parent:       parent.ID,
		AgentID:      "a2",
		AgentName:    "Agent Two",
		Intent:       "refactor ünïcode",
		BaseCommit:   oid(7),
		BaseRef:      "feature/x",
		Mode:         session.ModeReadOnly,
		State:        session.StateActive,
		Policy:       session.Policy{Read: []string{"**"}, Write: []string{"src/**"}, Deny: []string{"secrets/**"}},
		CreatedAt:    t0,
		LastActiveAt: t0.Add(time.Second),
		ExpiresAt:    t0.Add(time.Hour),
	}
	require.NoError(t, s.CreateSession(ctx, want))
	got, err := s.GetSession(ctx, want.ID)
	require.NoError(t, err)
	want.Head = want.BaseCommit // a new session's head is its base
	assert.Equal(t, want, got)

	assert.Equal(t, uuid.Nil, parent.Parent)
	assert.True(t, parent.ExpiresAt.IsZero())
	assert.Equal(t, parent.CreatedAt, parent.LastActiveAt)

	assert.ErrorIs(t, s.CreateSession(ctx, want), record.ErrDuplicate)
	orphan := want
	orphan.ID, orphan.Repo = uuid.New(), "nope"
	assert.ErrorIs(t, s.CreateSession(ctx, orphan), record.ErrNotFound)
	orphan.Repo, orphan.Parent = "r", uuid.New()
	assert.ErrorIs(t, s.CreateSession(ctx, orphan), record.ErrNotFound)
	_, err = s.GetSession(ctx, uuid.New())
	assert.ErrorIs(t, err, record.ErrNotFound)

	// A session on an empty repository has no base commit.
	empty := mkSession(t, s, "r", func(ss *session.Session) { ss.BaseCommit = gitstore.OID{} })
	assert.True(t, empty.Head.IsZero())
}

func testListSessions(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r1")
	mkRepo(t, s, "r2")
	s1 := mkSession(t, s, "r1", nil)
	s2 := mkSession(t, s, "r1", func(ss *session.Session) {
		ss.AgentID, ss.CreatedAt, ss.ExpiresAt = "bob", t0.Add(time.Second), t0.Add(time.Minute)
	})
	s3 := mkSession(t, s, "r2", func(ss *session.Session) {
		ss.CreatedAt, ss.State, ss.ExpiresAt = t0.Add(2*time.Second), session.StateAbandoned, t0.Add(time.Minute)
	})

	ids := func(ss []session.Session) []uuid.UUID {
		var out []uuid.UUID
		for _, x := range ss {
			out = append(out, x.ID)
		}
		return out
	}
	for _, c := range []struct {
		name string
		f    session.SessionFilter
		want []uuid.UUID
	}{
		{"all", session.SessionFilter{}, []uuid.UUID{s1.ID, s2.ID, s3.ID}},
		{"repo", session.SessionFilter{Repo: "r1"}, []uuid.UUID{s1.ID, s2.ID}},
		{"state", session.SessionFilter{State: session.StateAbandoned}, []uuid.UUID{s3.ID}},
		{"agent", session.SessionFilter{AgentID: "bob"}, []uuid.UUID{s2.ID}},
		{"repo and state", session.SessionFilter{Repo: "r1", State: session.StateActive}, []uuid.UUID{s1.ID, s2.ID}},
		{"none", session.SessionFilter{Repo: "r2", AgentID: "bob"}, nil},
		{"expired", session.SessionFilter{ExpiredBy: t0.Add(time.Hour)}, []uuid.UUID{s2.ID}},
		{"not yet expired", session.SessionFilter{ExpiredBy: t0.Add(time.Second)}, nil},
		{"limit", session.SessionFilter{Limit: 2}, []uuid.UUID{s1.ID, s2.ID}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.ListSessions(ctx, c.f)
			require.NoError(t, err)
			assert.Equal(t, c.want, ids(got))
		})
	}
}

func testSessionStateCAS(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", nil)
	later := t0.Add(time.Minute)

	require.NoError(t, s.SetSessionState(ctx, ss.ID, session.StateActive, session.StateSubmitted, later))
	got, err := s.GetSession(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, session.StateSubmitted, got.State)
	assert.Equal(t, later, got.LastActiveAt)

	err = s.SetSessionState(ctx, ss.ID, session.StateActive, session.StateAbandoned, later)
	assertConflict(t, err, "state", "submitted")
	assert.ErrorIs(t, s.SetSessionState(ctx, uuid.New(), session.StateActive, session.StateAbandoned, later), record.ErrNotFound)

	// last_active_at never moves backwards.
	require.NoError(t, s.SetSessionState(ctx, ss.ID, session.StateSubmitted, session.StateAccepted, t0))
	got, err = s.GetSession(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, later, got.LastActiveAt)
}

func testSessionHeadCAS(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", nil)

	require.NoError(t, s.SetSessionHead(ctx, ss.ID, oid(1), oid(2)))
	assertConflict(t, s.SetSessionHead(ctx, ss.ID, oid(1), oid(3)), "head", oid(2).String())
	require.NoError(t, s.SetSessionHead(ctx, ss.ID, oid(2), gitstore.OID{}))
	require.NoError(t, s.SetSessionHead(ctx, ss.ID, gitstore.OID{}, oid(4)))
	got, err := s.GetSession(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, oid(4), got.Head)
	assert.ErrorIs(t, s.SetSessionHead(ctx, uuid.New(), oid(1), oid(2)), record.ErrNotFound)

	// The base moves the same way (rebase).
	base := got.BaseCommit
	require.NoError(t, s.SetSessionBase(ctx, ss.ID, base, oid(5)))
	assertConflict(t, s.SetSessionBase(ctx, ss.ID, base, oid(6)), "base", oid(5).String())
	got, err = s.GetSession(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, oid(5), got.BaseCommit)
	assert.ErrorIs(t, s.SetSessionBase(ctx, uuid.New(), oid(1), oid(2)), record.ErrNotFound)
}

func testTouch(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", func(ss *session.Session) { ss.ExpiresAt = t0.Add(time.Hour) })

	require.NoError(t, s.TouchSession(ctx, ss.ID, t0.Add(time.Minute), time.Time{}))
	got, err := s.GetSession(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Minute), got.LastActiveAt)
	assert.Equal(t, t0.Add(time.Hour), got.ExpiresAt, "zero expiresAt keeps the old one")

	require.NoError(t, s.TouchSession(ctx, ss.ID, t0, t0.Add(2*time.Hour)))
	got, err = s.GetSession(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Minute), got.LastActiveAt, "never backwards")
	assert.Equal(t, t0.Add(2*time.Hour), got.ExpiresAt)

	assert.ErrorIs(t, s.TouchSession(ctx, uuid.New(), t0, time.Time{}), record.ErrNotFound)
}

func testAppendMutation(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", nil)
	at := t0.Add(time.Minute)

	m1, err := s.AppendMutation(ctx, session.MutationRecord{
		Session: ss.ID, Op: session.OpWrite, Paths: []string{"b.txt", "a/x.go"},
		Old: []gitstore.OID{{}, oid(10)}, New: []gitstore.OID{oid(11), oid(12)}, Actor: "agent-1", At: at,
	}, []session.OverlayChange{
		{Entry: session.OverlayEntry{Path: "b.txt", Status: session.StatusAdded, Blob: oid(11), Mode: gitstore.ModeFile}},
		{Entry: session.OverlayEntry{Path: "a/x.go", Status: session.StatusModified, Blob: oid(12), Mode: gitstore.ModeExec}},
		{Entry: session.OverlayEntry{Path: "gone", Status: session.StatusDeleted}},
	})
	require.NoError(t, err)
	assert.Equal(t, int64(1), m1.Seq)

	m2, err := s.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpDelete, Paths: []string{"b.txt"}, At: at},
		[]session.OverlayChange{
			{Entry: session.OverlayEntry{Path: "b.txt"}, Remove: true},
			{Entry: session.OverlayEntry{Path: "a/x.go", Status: session.StatusModified, Blob: oid(13), Mode: gitstore.ModeSymlink}},
			{Entry: session.OverlayEntry{Path: "never-there"}, Remove: true},
		})
	require.NoError(t, err)
	assert.Equal(t, int64(2), m2.Seq)

	entries, err := s.ListOverlay(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, []session.OverlayEntry{
		{Path: "a/x.go", Status: session.StatusModified, Blob: oid(13), Mode: gitstore.ModeSymlink},
		{Path: "gone", Status: session.StatusDeleted},
	}, entries)

	got, err := s.GetSession(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, int64(2), got.Seq)
	assert.Equal(t, at, got.LastActiveAt)

	ms, err := s.ListMutations(ctx, ss.ID, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, []session.MutationRecord{m1, m2}, ms)

	_, err = s.AppendMutation(ctx, session.MutationRecord{Session: uuid.New(), Op: session.OpWrite, At: at}, nil)
	assert.ErrorIs(t, err, record.ErrNotFound)

	// Overlay entries sort by bytes, not by locale.
	_, err = s.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpWrite, At: at},
		[]session.OverlayChange{write("B", 1), write("a-b", 1), write("a.b", 1), write("é", 1), write("z", 1)})
	require.NoError(t, err)
	entries, err = s.ListOverlay(ctx, ss.ID)
	require.NoError(t, err)
	var paths []string
	for _, e := range entries {
		paths = append(paths, e.Path)
	}
	assert.Equal(t, []string{"B", "a-b", "a.b", "a/x.go", "gone", "z", "é"}, paths)
}

func testMutationExpectedSeq(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", nil)

	m, err := s.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Seq: 1, Op: session.OpWrite, At: t0}, []session.OverlayChange{write("a", 1)})
	require.NoError(t, err)
	assert.Equal(t, int64(1), m.Seq)

	_, err = s.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Seq: 1, Op: session.OpWrite, At: t0}, []session.OverlayChange{write("a", 2)})
	assertConflict(t, err, "seq", "1")
	_, err = s.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Seq: 3, Op: session.OpWrite, At: t0}, nil)
	assertConflict(t, err, "seq", "1")

	entries, err := s.ListOverlay(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, oid(1), entries[0].Blob, "a failed append changes nothing")
}

func testClosedSession(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", nil)
	require.NoError(t, s.SetSessionState(ctx, ss.ID, session.StateActive, session.StateSubmitted, t0))
	_, err := s.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpWrite, At: t0}, nil)
	require.NoError(t, err, "a submitted session still takes writes")

	for _, st := range []session.State{session.StateAbandoned} {
		require.NoError(t, s.SetSessionState(ctx, ss.ID, session.StateSubmitted, st, t0))
		_, err := s.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpWrite, At: t0}, []session.OverlayChange{write("a", 1)})
		assert.ErrorIs(t, err, record.ErrSessionClosed)
		_, err = s.ReplaceOverlay(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpRollback, At: t0}, nil)
		assert.ErrorIs(t, err, record.ErrSessionClosed)
	}
	got, err := s.GetSession(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, int64(1), got.Seq)
}

func testReplaceOverlay(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", nil)
	_, err := s.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpWrite, At: t0},
		[]session.OverlayChange{write("a", 1), write("b", 2)})
	require.NoError(t, err)

	want := []session.OverlayEntry{
		{Path: "b", Status: session.StatusModified, Blob: oid(3), Mode: gitstore.ModeFile},
		{Path: "c", Status: session.StatusDeleted},
	}
	m, err := s.ReplaceOverlay(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpRollback, Paths: []string{"a", "b", "c"}, Actor: "u", At: t0}, want)
	require.NoError(t, err)
	assert.Equal(t, int64(2), m.Seq)
	got, err := s.ListOverlay(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	_, err = s.ReplaceOverlay(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpRollback, At: t0}, nil)
	require.NoError(t, err)
	got, err = s.ListOverlay(ctx, ss.ID)
	require.NoError(t, err)
	assert.Empty(t, got)
}

// testOverlayBatches: changes apply in order even when one batch names a
// path twice, and large overlays cross the statement batch size.
func testOverlayBatches(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", nil)
	rm := func(path string) session.OverlayChange {
		return session.OverlayChange{Entry: session.OverlayEntry{Path: path}, Remove: true}
	}
	_, err := s.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpEdits, At: t0},
		[]session.OverlayChange{write("a", 1), write("a", 2), rm("b"), write("b", 3), write("c", 4), rm("c")})
	require.NoError(t, err)
	got, err := s.ListOverlay(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, []session.OverlayEntry{
		{Path: "a", Status: session.StatusModified, Blob: oid(2), Mode: gitstore.ModeFile},
		{Path: "b", Status: session.StatusModified, Blob: oid(3), Mode: gitstore.ModeFile},
	}, got)

	const n = 1234
	entries := make([]session.OverlayEntry, n)
	for i := range entries {
		entries[i] = session.OverlayEntry{Path: fmt.Sprintf("d/%05d", i), Status: session.StatusAdded, Blob: oid(i), Mode: gitstore.ModeFile}
	}
	_, err = s.ReplaceOverlay(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpRollback, At: t0}, entries)
	require.NoError(t, err)
	got, err = s.ListOverlay(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, entries, got)

	var changes []session.OverlayChange
	for i := range n - 1 {
		changes = append(changes, rm(entries[i].Path))
	}
	_, err = s.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpDelete, At: t0}, changes)
	require.NoError(t, err)
	got, err = s.ListOverlay(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, entries[n-1:], got)
}

func testListMutations(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	a := mkSession(t, s, "r", nil)
	b := mkSession(t, s, "r", nil)
	for i := range 10 {
		for _, id := range []uuid.UUID{a.ID, b.ID} {
			_, err := s.AppendMutation(ctx, session.MutationRecord{Session: id, Op: session.OpWrite, Paths: []string{strconv.Itoa(i)}, At: t0}, nil)
			require.NoError(t, err)
		}
	}
	seqs := func(after int64, limit int) []int64 {
		ms, err := s.ListMutations(ctx, a.ID, after, limit)
		require.NoError(t, err)
		var out []int64
		for _, m := range ms {
			assert.Equal(t, a.ID, m.Session)
			assert.Equal(t, []string{strconv.Itoa(int(m.Seq) - 1)}, m.Paths)
			out = append(out, m.Seq)
		}
		return out
	}
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, seqs(0, 0))
	assert.Equal(t, []int64{8, 9, 10}, seqs(7, 0))
	assert.Equal(t, []int64{4, 5}, seqs(3, 2))
	assert.Nil(t, seqs(10, 5))
}

func testCheckpoints(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", nil)

	c1, err := s.CreateCheckpoint(ctx, session.Checkpoint{
		Session: ss.ID, Commit: oid(20), Tree: oid(21), Parent: ss.BaseCommit, Seq: 3,
		Label: "first", Message: "msg", CreatedAt: t0,
	})
	require.NoError(t, err)
	assert.Equal(t, 1, c1.N)
	assert.NotEqual(t, uuid.Nil, c1.ID)

	_, err = s.CreateCheckpoint(ctx, session.Checkpoint{Session: ss.ID, Commit: oid(22), Tree: oid(23), Parent: ss.BaseCommit, CreatedAt: t0})
	assertConflict(t, err, "head", oid(20).String())

	c2, err := s.CreateCheckpoint(ctx, session.Checkpoint{ID: uuid.New(), Session: ss.ID, Commit: oid(22), Tree: oid(23), Parent: oid(20), Seq: 5, CreatedAt: t0.Add(time.Second)})
	require.NoError(t, err)
	assert.Equal(t, 2, c2.N)

	got, err := s.GetCheckpoint(ctx, c1.ID)
	require.NoError(t, err)
	assert.Equal(t, c1, got)
	_, err = s.GetCheckpoint(ctx, uuid.New())
	assert.ErrorIs(t, err, record.ErrNotFound)

	list, err := s.ListCheckpoints(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, []session.Checkpoint{c1, c2}, list)

	sess, err := s.GetSession(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, oid(22), sess.Head)
	assert.Equal(t, 2, sess.Checkpoints)

	_, err = s.CreateCheckpoint(ctx, session.Checkpoint{Session: uuid.New(), Commit: oid(1), Tree: oid(2), CreatedAt: t0})
	assert.ErrorIs(t, err, record.ErrNotFound)
	_, err = s.CreateCheckpoint(ctx, session.Checkpoint{Session: ss.ID, Parent: oid(22), CreatedAt: t0})
	assert.Error(t, err, "commit and tree are required")
}

func mkChangeset(t *testing.T, s changeset.Tx, ss session.Session, mod func(*changeset.Changeset)) changeset.Changeset {
	t.Helper()
	c := changeset.Changeset{
		ID: uuid.New(), Session: ss.ID, Repo: ss.Repo, TargetBranch: "main", Intent: "ship it",
		Status: changeset.StatusOpen, BaseCommit: ss.BaseCommit, HeadCommit: oid(30), AgentID: ss.AgentID,
		CreatedAt: t0, UpdatedAt: t0,
	}
	if mod != nil {
		mod(&c)
	}
	require.NoError(t, s.CreateChangeset(t.Context(), c))
	return c
}

func testChangesets(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	cst := s.Changesets()
	mkRepo(t, s, "r1")
	mkRepo(t, s, "r2")
	s1 := mkSession(t, s, "r1", nil)
	s2 := mkSession(t, s, "r2", nil)
	c1 := mkChangeset(t, cst, s1, nil)
	c2 := mkChangeset(t, cst, s1, func(c *changeset.Changeset) { c.CreatedAt = t0.Add(time.Second) })
	c3 := mkChangeset(t, cst, s2, func(c *changeset.Changeset) { c.Status = changeset.StatusRejected })

	got, err := cst.GetChangeset(ctx, c1.ID)
	require.NoError(t, err)
	assert.Equal(t, c1, got)
	_, err = cst.GetChangeset(ctx, uuid.New())
	assert.ErrorIs(t, err, record.ErrNotFound)
	assert.ErrorIs(t, cst.CreateChangeset(ctx, c1), record.ErrDuplicate)
	bad := c1
	bad.ID, bad.Session = uuid.New(), uuid.New()
	assert.ErrorIs(t, cst.CreateChangeset(ctx, bad), record.ErrNotFound)

	list, err := cst.ListChangesets(ctx, changeset.Filter{Repo: "r1"})
	require.NoError(t, err)
	assert.Equal(t, []changeset.Changeset{c1, c2}, list)
	list, err = cst.ListChangesets(ctx, changeset.Filter{Status: changeset.StatusRejected})
	require.NoError(t, err)
	assert.Equal(t, []changeset.Changeset{c3}, list)
	list, err = cst.ListChangesets(ctx, changeset.Filter{Session: s1.ID, Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, []changeset.Changeset{c1}, list)

	at := t0.Add(time.Hour)
	require.NoError(t, cst.SetChangesetStatus(ctx, c1.ID, changeset.StatusOpen, changeset.StatusApproved, gitstore.OID{}, at))
	err = cst.SetChangesetStatus(ctx, c1.ID, changeset.StatusOpen, changeset.StatusRejected, gitstore.OID{}, at)
	assertConflict(t, err, "status", "approved")
	require.NoError(t, cst.SetChangesetStatus(ctx, c1.ID, changeset.StatusApproved, changeset.StatusAccepted, oid(31), at))
	got, err = cst.GetChangeset(ctx, c1.ID)
	require.NoError(t, err)
	assert.Equal(t, changeset.StatusAccepted, got.Status)
	assert.Equal(t, oid(31), got.AcceptedCommit)
	assert.Equal(t, at, got.UpdatedAt)
	require.NoError(t, cst.SetChangesetStatus(ctx, c1.ID, changeset.StatusAccepted, changeset.StatusUndone, gitstore.OID{}, at))
	got, err = cst.GetChangeset(ctx, c1.ID)
	require.NoError(t, err)
	assert.Equal(t, oid(31), got.AcceptedCommit, "a zero accepted commit keeps the old one")
	assert.ErrorIs(t, cst.SetChangesetStatus(ctx, uuid.New(), changeset.StatusOpen, changeset.StatusApproved, gitstore.OID{}, at), record.ErrNotFound)
}

func testReviews(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	cst := s.Changesets()
	mkRepo(t, s, "r")
	c := mkChangeset(t, cst, mkSession(t, s, "r", nil), nil)
	other := mkChangeset(t, cst, mkSession(t, s, "r", nil), nil)

	r1, err := cst.AddReview(ctx, changeset.Review{Changeset: c.ID, Verdict: changeset.VerdictRequestChanges, Body: "please", Author: "alice",
		AuthorKind: changeset.ReviewerToken, Comments: []changeset.LineComment{{Path: "b.go", Line: 10, Body: "typo"}, {Path: "a.go", Line: 3, Body: "why?"}}, CreatedAt: t0})
	require.NoError(t, err)
	assert.NotEqual(t, uuid.Nil, r1.ID)
	r2, err := cst.AddReview(ctx, changeset.Review{Changeset: c.ID, Verdict: changeset.VerdictApprove, Author: "bob",
		AuthorKind: changeset.ReviewerLocal, CreatedAt: t0.Add(time.Second)})
	require.NoError(t, err)
	r3, err := cst.AddReview(ctx, changeset.Review{Changeset: c.ID, Verdict: changeset.VerdictComment, Author: "carol",
		AuthorKind: changeset.ReviewerAsserted, CreatedAt: t0.Add(2 * time.Second)})
	require.NoError(t, err)
	r4, err := cst.AddReview(ctx, changeset.Review{Changeset: c.ID, Verdict: changeset.VerdictComment, Author: "agent",
		CreatedAt: t0.Add(3 * time.Second)}) // as stored before kinds were kept
	require.NoError(t, err)
	_, err = cst.AddReview(ctx, changeset.Review{Changeset: other.ID, Verdict: changeset.VerdictComment, Author: "x", CreatedAt: t0})
	require.NoError(t, err)

	list, err := cst.ListReviews(ctx, c.ID)
	require.NoError(t, err)
	assert.Equal(t, []changeset.Review{r1, r2, r3, r4}, list, "the author's kind round-trips")

	_, err = cst.AddReview(ctx, changeset.Review{Changeset: uuid.New(), Verdict: changeset.VerdictApprove, CreatedAt: t0})
	assert.ErrorIs(t, err, record.ErrNotFound)
	list, err = cst.ListReviews(ctx, uuid.New())
	require.NoError(t, err)
	assert.Empty(t, list)
}

func testReviseChangeset(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	cst := s.Changesets()
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", nil)
	c := mkChangeset(t, cst, ss, func(c *changeset.Changeset) {
		c.Revision = 1
		c.ReadSet = map[string]gitstore.OID{"a.txt": oid(1), "dir/b": oid(2)}
		c.Stats = &merge.Stats{Files: 2, Insertions: 3, Deletions: 1}
	})
	got, err := cst.GetChangeset(ctx, c.ID)
	require.NoError(t, err)
	assert.Equal(t, c, got, "the read set and the stats round-trip")
	_, err = cst.AddReview(ctx, changeset.Review{Changeset: c.ID, Verdict: changeset.VerdictApprove, Author: "a", Revision: 1, CreatedAt: t0})
	require.NoError(t, err)

	next := c
	next.HeadCommit, next.BaseCommit, next.Intent, next.TargetBranch = oid(32), oid(33), "again", "dev"
	next.Revision, next.ReadSet, next.Status, next.UpdatedAt = 2, nil, changeset.StatusOpen, t0.Add(time.Minute)
	next.Stats = &merge.Stats{Files: 1, Insertions: 5}
	require.NoError(t, cst.ReviseChangeset(ctx, next, c.HeadCommit))
	got, err = cst.GetChangeset(ctx, c.ID)
	require.NoError(t, err)
	assert.Equal(t, next, got)
	reviews, err := cst.ListReviews(ctx, c.ID)
	require.NoError(t, err)
	require.Len(t, reviews, 1, "reviews stay")
	assert.Equal(t, 1, reviews[0].Revision)

	assertConflict(t, cst.ReviseChangeset(ctx, next, c.HeadCommit), "head", oid(32).String())
	require.NoError(t, cst.SetChangesetStatus(ctx, c.ID, changeset.StatusOpen, changeset.StatusAccepted, oid(34), t0))
	assertConflict(t, cst.ReviseChangeset(ctx, next, next.HeadCommit), "status", "accepted")
	next.ID = uuid.New()
	assert.ErrorIs(t, cst.ReviseChangeset(ctx, next, oid(32)), record.ErrNotFound)
}

// testInFlight: an accept in flight is recorded by compare-and-swap on the
// revision, fences revisions and other accepts until cleared, and
// round-trips with what the accept records; an undo in flight likewise on
// its layer; InFlight names the branches with either.
func testInFlight(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	cst := s.Changesets()
	mkRepo(t, s, "r")
	c := mkChangeset(t, cst, mkSession(t, s, "r", nil), func(c *changeset.Changeset) { c.Revision = 2 })
	other := mkChangeset(t, cst, mkSession(t, s, "r", nil), func(c *changeset.Changeset) { c.Revision = 1; c.TargetBranch = "dev" })
	none, err := cst.InFlight(ctx)
	require.NoError(t, err)
	assert.Empty(t, none)

	a := changeset.Accepting{Commit: oid(80), Revision: 2, Rebased: true,
		Selection:  &changeset.AcceptedSelection{Taken: merge.Selection{Files: []string{"a"}}, LeftOut: merge.Selection{Files: []string{"b"}}},
		StaleReads: []changeset.StaleRead{{Path: "r.txt", Read: oid(81), Current: oid(82)}}}
	assertConflict(t, cst.BeginAccept(ctx, c.ID, changeset.Accepting{Commit: oid(80), Revision: 1}), "revision", "2")
	require.NoError(t, cst.BeginAccept(ctx, c.ID, a))
	assertConflict(t, cst.BeginAccept(ctx, c.ID, changeset.Accepting{Commit: oid(83), Revision: 2}), "accepting", oid(80).String())
	got, err := cst.GetChangeset(ctx, c.ID)
	require.NoError(t, err)
	require.NotNil(t, got.Accepting)
	assert.Equal(t, a, *got.Accepting)
	list, err := cst.ListChangesets(ctx, changeset.Filter{Accepting: true})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, c.ID, list[0].ID)
	next := got
	next.HeadCommit, next.Revision = oid(84), 3
	assertConflict(t, cst.ReviseChangeset(ctx, next, c.HeadCommit), "accepting", oid(80).String())
	assert.ErrorIs(t, cst.BeginAccept(ctx, uuid.New(), a), record.ErrNotFound)

	_, err = cst.AddLayer(ctx, changeset.Layer{Repo: "r", Branch: "dev", Changeset: other.ID, Commit: oid(85), AcceptedAt: t0})
	require.NoError(t, err)
	require.NoError(t, cst.BeginUndo(ctx, other.ID, oid(86)))
	assertConflict(t, cst.BeginUndo(ctx, other.ID, oid(87)), "reverting", oid(86).String())
	assert.ErrorIs(t, cst.BeginUndo(ctx, uuid.New(), oid(87)), record.ErrNotFound)
	layers, err := cst.ListLayers(ctx, "r", "dev")
	require.NoError(t, err)
	require.Len(t, layers, 1)
	assert.Equal(t, oid(86), layers[0].Reverting)
	branches, err := cst.InFlight(ctx)
	require.NoError(t, err)
	assert.Equal(t, []changeset.BranchName{{Repo: "r", Branch: "dev"}, {Repo: "r", Branch: "main"}}, branches)

	require.NoError(t, cst.ClearAccepting(ctx, c.ID))
	require.NoError(t, cst.ClearAccepting(ctx, c.ID), "clearing nothing is no error")
	got, err = cst.GetChangeset(ctx, c.ID)
	require.NoError(t, err)
	assert.Nil(t, got.Accepting)
	require.NoError(t, cst.ReviseChangeset(ctx, next, c.HeadCommit), "cleared, it may be revised")
	require.NoError(t, cst.SetChangesetStatus(ctx, c.ID, changeset.StatusOpen, changeset.StatusAccepted, oid(88), t0))
	assertConflict(t, cst.BeginAccept(ctx, c.ID, changeset.Accepting{Commit: oid(89), Revision: 3}), "status", "accepted")

	require.NoError(t, cst.UndoLayer(ctx, other.ID, oid(86), t0), "an undo clears its flight")
	layers, err = cst.ListLayers(ctx, "r", "dev")
	require.NoError(t, err)
	assert.True(t, layers[0].Reverting.IsZero())
	assertConflict(t, cst.BeginUndo(ctx, other.ID, oid(87)), "state", "undone")
	branches, err = cst.InFlight(ctx)
	require.NoError(t, err)
	assert.Empty(t, branches)

	// ClearReverting forgets an undo in flight that never moved the branch.
	third := mkChangeset(t, cst, mkSession(t, s, "r", nil), nil)
	_, err = cst.AddLayer(ctx, changeset.Layer{Repo: "r", Branch: "dev", Changeset: third.ID, Commit: oid(90), AcceptedAt: t0})
	require.NoError(t, err)
	require.NoError(t, cst.BeginUndo(ctx, third.ID, oid(91)))
	require.NoError(t, cst.ClearReverting(ctx, third.ID))
	layers, err = cst.ListLayers(ctx, "r", "dev")
	require.NoError(t, err)
	assert.True(t, layers[0].Reverting.IsZero())
	assert.Equal(t, changeset.LayerAccepted, layers[0].State)
}

// testCheckSpace: with room, the probe of space passes and changes
// nothing (the event counter it rewrites keeps its value).
func testCheckSpace(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	_, err := s.AppendEvent(ctx, events.Event{Repo: "r", Type: "t", Payload: events.Payload(map[string]any{}), At: t0})
	require.NoError(t, err)
	require.NoError(t, s.CheckSpace(ctx))
	e, err := s.AppendEvent(ctx, events.Event{Repo: "r", Type: "t", Payload: events.Payload(map[string]any{}), At: t0})
	require.NoError(t, err)
	assert.EqualValues(t, 2, e.ID, "the counter kept its value")
}

func testRepoPolicy(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	var cst repos.Store = s
	mkRepo(t, s, "r")
	_, err := cst.GetRepoPolicy(ctx, "r")
	assert.ErrorIs(t, err, record.ErrNotFound)
	p := repos.Policy{Repo: "r", RequiredApprovals: 2, RefuseCheckedOut: true,
		RequiredChecks: [][]string{{"go", "test", "./..."}, {"make", "lint"}},
		Exec:           repos.ExecPolicy{Network: true, MemoryBytes: 1 << 30, Pids: 64, CPUWeight: 50, ScratchBytes: 1 << 20, TmpBytes: 1 << 10}}
	require.NoError(t, cst.SetRepoPolicy(ctx, p))
	got, err := cst.GetRepoPolicy(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, p, got)
	p = repos.Policy{Repo: "r", RefuseStaleReads: true}
	require.NoError(t, cst.SetRepoPolicy(ctx, p))
	got, err = cst.GetRepoPolicy(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, p, got, "a second set replaces")
	p = repos.Policy{Repo: "r", Exec: repos.ExecPolicy{NetworkAllow: []string{"proxy.golang.org", "*.npmjs.org", "10.0.0.0/8"}}}
	require.NoError(t, cst.SetRepoPolicy(ctx, p))
	got, err = cst.GetRepoPolicy(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, p, got, "an allowlist round-trips")
	assert.ErrorIs(t, cst.SetRepoPolicy(ctx, repos.Policy{Repo: "nope"}), record.ErrNotFound)
}

func testRepoEnvironment(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	var cst repos.Store = s
	mkRepo(t, s, "r")
	_, err := cst.GetRepoEnvironment(ctx, "r")
	assert.ErrorIs(t, err, record.ErrNotFound)
	e := repos.Environment{Repo: "r", Env: map[string]string{"A": "1", "B_2": "é ünïcode"},
		Secrets: map[string][]byte{"TOKEN": {0, 1, 2, 255}, "KEY": []byte("sealed")}}
	require.NoError(t, cst.SetRepoEnvironment(ctx, e))
	got, err := cst.GetRepoEnvironment(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, e, got)
	e = repos.Environment{Repo: "r", Env: map[string]string{"C": ""}}
	require.NoError(t, cst.SetRepoEnvironment(ctx, e))
	got, err = cst.GetRepoEnvironment(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, e, got, "a second set replaces")
	// The environment configuration set through the API.
	off := false
	content := "X=1\n"
	e.Config = &environment.Config{
		Setup: []environment.Step{{Command: "npm ci"}, {Argv: []string{"go", "mod", "download"}, Network: &off, TimeoutSeconds: 60, Env: map[string]string{"A": "b"}}},
		Key:   []string{"**/go.sum"}, Include: []environment.Include{{Path: ".env", Content: &content}, {Path: "t", Secret: "TOKEN"}}, Auto: &off,
	}
	require.NoError(t, cst.SetRepoEnvironment(ctx, e))
	got, err = cst.GetRepoEnvironment(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, e, got, "the configuration round-trips")
	assert.ErrorIs(t, cst.SetRepoEnvironment(ctx, repos.Environment{Repo: "nope"}), record.ErrNotFound)

	// A session's own variables.
	ss := mkSession(t, s, "r", nil)
	plain, err := s.GetSession(ctx, ss.ID)
	require.NoError(t, err)
	assert.Nil(t, plain.Env)
	withEnv := mkSession(t, s, "r", func(ss *session.Session) { ss.Env = map[string]string{"X": "y"} })
	got2, err := s.GetSession(ctx, withEnv.ID)
	require.NoError(t, err)
	assert.Equal(t, withEnv.Env, got2.Env)
}

func testRuns(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	cst := s.Changesets()
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", nil)
	other := mkSession(t, s, "r", nil)

	list, err := cst.ListRuns(ctx, ss.ID)
	require.NoError(t, err)
	assert.Empty(t, list)

	in := []changeset.Run{
		{Session: ss.ID, Argv: []string{"go", "test", "./..."}, ExitCode: 0, Duration: 1500 * time.Millisecond, At: t0, Seq: 3, OutputTail: "ok  \tpkg\t0.1s\n"},
		{Session: ss.ID, Argv: []string{"go", "test", "./..."}, ExitCode: 1, Duration: 20 * time.Millisecond, At: t0.Add(time.Second), Seq: 4, Changed: true, OutputTail: "FAIL é ünïcode\n"},
		{Session: other.ID, Argv: []string{"true"}, At: t0, Seq: 1},
	}
	var added []changeset.Run
	for _, r := range in {
		got, err := cst.AddRun(ctx, r)
		require.NoError(t, err)
		assert.NotZero(t, got.ID)
		added = append(added, got)
	}
	assert.Less(t, added[0].ID, added[1].ID)
	list, err = cst.ListRuns(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, added[:2], list, "oldest first, only the session's")

	_, err = cst.AddRun(ctx, changeset.Run{Session: uuid.New(), Argv: []string{"x"}, At: t0})
	assert.ErrorIs(t, err, record.ErrNotFound, "a run of no session")

	_, err = cst.CheckpointSeq(ctx, ss.ID, oid(20))
	assert.ErrorIs(t, err, record.ErrNotFound)
	_, err = s.CreateCheckpoint(ctx, session.Checkpoint{Session: ss.ID, Commit: oid(20), Tree: oid(21), Parent: ss.BaseCommit, Seq: 7, CreatedAt: t0})
	require.NoError(t, err)
	seq, err := cst.CheckpointSeq(ctx, ss.ID, oid(20))
	require.NoError(t, err)
	assert.EqualValues(t, 7, seq)
	_, err = cst.CheckpointSeq(ctx, other.ID, oid(20))
	assert.ErrorIs(t, err, record.ErrNotFound, "another session's checkpoint")
}

func testLayers(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	cst := s.Changesets()
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", nil)
	var added []changeset.Layer
	for i := range 3 {
		c := mkChangeset(t, cst, ss, nil)
		l, err := cst.AddLayer(ctx, changeset.Layer{Repo: "r", Branch: "main", Changeset: c.ID, Commit: oid(40 + i), AcceptedAt: t0.Add(time.Duration(i) * time.Second)})
		require.NoError(t, err)
		assert.Equal(t, changeset.LayerAccepted, l.State)
		added = append(added, l)
		_, err = cst.AddLayer(ctx, changeset.Layer{Repo: "r", Branch: "main", Changeset: c.ID, Commit: oid(50), AcceptedAt: t0})
		assert.ErrorIs(t, err, record.ErrDuplicate)
	}
	other := mkChangeset(t, cst, ss, nil)
	_, err := cst.AddLayer(ctx, changeset.Layer{Repo: "r", Branch: "dev", Changeset: other.ID, Commit: oid(60), AcceptedAt: t0})
	require.NoError(t, err)

	list, err := cst.ListLayers(ctx, "r", "main")
	require.NoError(t, err)
	assert.Equal(t, []changeset.Layer{added[2], added[1], added[0]}, list, "newest first")
	assert.Less(t, added[0].ID, added[1].ID)

	at := t0.Add(time.Hour)
	require.NoError(t, cst.UndoLayer(ctx, added[1].Changeset, oid(70), at))
	assertConflict(t, cst.UndoLayer(ctx, added[1].Changeset, oid(71), at), "state", "undone")
	assert.ErrorIs(t, cst.UndoLayer(ctx, uuid.New(), oid(71), at), record.ErrNotFound)

	list, err = cst.ListLayers(ctx, "r", "main")
	require.NoError(t, err)
	want := added[1]
	want.State, want.RevertCommit, want.UndoneAt = changeset.LayerUndone, oid(70), at
	assert.Equal(t, want, list[1])
	assert.Equal(t, changeset.LayerAccepted, list[0].State)

	list, err = cst.ListLayers(ctx, "r", "nope")
	require.NoError(t, err)
	assert.Empty(t, list)
}

func testEvents(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r1")
	mkRepo(t, s, "r2")
	a := mkSession(t, s, "r1", nil)
	b := mkSession(t, s, "r2", nil)
	last, err := s.LastEventID(ctx)
	require.NoError(t, err)
	assert.Zero(t, last, "no event yet")

	var got []events.Event
	for i, e := range []events.Event{
		{Repo: "r1", Session: a.ID, Type: "file.written", Payload: json.RawMessage(`{"path": "x", "n": 1}`)},
		{Repo: "r2", Session: b.ID, Type: "file.deleted"},
		{Repo: "r1", Type: "changeset.accepted", Payload: json.RawMessage(`{"id":"c"}`)},
		{Repo: "r1", Session: a.ID, Type: "checkpoint.created", Payload: json.RawMessage(`[1,2]`)},
	} {
		e.At = t0.Add(time.Duration(i) * time.Second)
		ev, err := s.AppendEvent(ctx, e)
		require.NoError(t, err)
		assert.Equal(t, int64(i+1), ev.ID)
		got = append(got, ev)
	}
	_, err = s.AppendEvent(ctx, events.Event{Repo: "r1", Type: "bad", Payload: json.RawMessage(`{`)})
	assert.Error(t, err)
	last, err = s.LastEventID(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 4, last, "the newest event of any repository; a failed append takes no id")

	check := func(f events.Filter, want ...events.Event) {
		t.Helper()
		list, err := s.ListEvents(ctx, f)
		require.NoError(t, err)
		require.Len(t, list, len(want))
		for i := range want {
			assert.JSONEq(t, string(want[i].Payload), string(list[i].Payload))
			list[i].Payload = want[i].Payload
		}
		assert.Equal(t, want, list)
	}
	check(events.Filter{Session: a.ID}, got[0], got[3])
	check(events.Filter{Session: a.ID, After: 1}, got[3])
	check(events.Filter{Repo: "r1"}, got[0], got[2], got[3])
	check(events.Filter{Repo: "r1", After: 1, Limit: 1}, got[2])
	check(events.Filter{Repo: "r2"}, got[1])
	check(events.Filter{Repo: "r2", After: 2})
	check(events.Filter{Session: a.ID, Types: []string{"checkpoint.created"}}, got[3])
	check(events.Filter{Repo: "r1", Types: []string{"changeset.accepted", "file.written"}}, got[0], got[2])
	check(events.Filter{Repo: "r1", Types: []string{"changeset.accepted"}, After: 3})
	check(events.Filter{Repo: "r1", Types: []string{"no.such.type"}})
}

func testInTx(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", nil)

	boom := errors.New("boom")
	err := s.InTx(ctx, func(tx session.Tx) error {
		_, err := tx.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpWrite, At: t0}, []session.OverlayChange{write("a", 1)})
		require.NoError(t, err)
		require.NoError(t, tx.SetSessionState(ctx, ss.ID, session.StateActive, session.StateSubmitted, t0))
		_, err = tx.AppendEvent(ctx, events.Event{Repo: "r", Session: ss.ID, Type: "x", At: t0})
		require.NoError(t, err)
		// The transaction sees its own writes.
		got, err := tx.GetSession(ctx, ss.ID)
		require.NoError(t, err)
		assert.Equal(t, int64(1), got.Seq)
		return boom
	})
	require.ErrorIs(t, err, boom)
	got, err := s.GetSession(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, ss, got, "a failed transaction leaves nothing")
	entries, err := s.ListOverlay(ctx, ss.ID)
	require.NoError(t, err)
	assert.Empty(t, entries)

	// A changeset's transaction: the changeset, its layer, its session's
	// state and the event at once, or none of them.
	var cs changeset.Changeset
	err = s.Changesets().InTx(ctx, func(tx changeset.Tx) error {
		cs = mkChangeset(t, tx, ss, nil)
		if err := tx.SetSessionState(ctx, ss.ID, session.StateActive, session.StateAccepted, t0); err != nil {
			return err
		}
		if err := tx.SetChangesetStatus(ctx, cs.ID, changeset.StatusOpen, changeset.StatusAccepted, oid(9), t0); err != nil {
			return err
		}
		if _, err := tx.AddLayer(ctx, changeset.Layer{Repo: "r", Branch: "main", Changeset: cs.ID, Commit: oid(9), AcceptedAt: t0}); err != nil {
			return err
		}
		_, err := tx.AppendEvent(ctx, events.Event{Repo: "r", Type: "changeset.accepted", At: t0})
		return err
	})
	require.NoError(t, err)
	layers, err := s.Changesets().ListLayers(ctx, "r", "main")
	require.NoError(t, err)
	require.Len(t, layers, 1)
	assert.Equal(t, cs.ID, layers[0].Changeset)
	got, err = s.GetSession(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, session.StateAccepted, got.State)
	err = s.Changesets().InTx(ctx, func(tx changeset.Tx) error {
		mkChangeset(t, tx, ss, nil)
		require.NoError(t, tx.SetSessionState(ctx, ss.ID, session.StateAccepted, session.StateActive, t0))
		return boom
	})
	require.ErrorIs(t, err, boom)
	list, err := s.Changesets().ListChangesets(ctx, changeset.Filter{Session: ss.ID})
	require.NoError(t, err)
	assert.Len(t, list, 1, "the failed changeset transaction left no changeset")
	got, err = s.GetSession(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, session.StateAccepted, got.State, "nor moved the session")
	evs, err := s.ListEvents(ctx, events.Filter{Repo: "r"})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, int64(1), evs[0].ID, "the rolled back event gave its id back")

	// A conflict inside a transaction reaches the caller unchanged.
	err = s.InTx(ctx, func(tx session.Tx) error {
		return tx.SetSessionState(ctx, ss.ID, session.StateSubmitted, session.StateAccepted, t0)
	})
	assertConflict(t, err, "state", "accepted")
}

// testCASRace: of many concurrent compare-and-swaps from one value, exactly
// one wins and the others see the winner's value.
func testCASRace(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	const n = 8
	for _, kind := range []string{"state", "head", "checkpoint", "status"} {
		t.Run(kind, func(t *testing.T) {
			ss := mkSession(t, s, "r", nil)
			cs := mkChangeset(t, s.Changesets(), ss, nil)
			var (
				wins      atomic.Int32
				wg        sync.WaitGroup
				start     = make(chan struct{})
				conflicts = make([]error, n)
			)
			for i := range n {
				wg.Go(func() {
					<-start
					var err error
					switch kind {
					case "state":
						err = s.SetSessionState(ctx, ss.ID, session.StateActive, session.State("s"+strconv.Itoa(i)), t0)
					case "head":
						err = s.SetSessionHead(ctx, ss.ID, ss.Head, oid(100+i))
					case "checkpoint":
						_, err = s.CreateCheckpoint(ctx, session.Checkpoint{Session: ss.ID, Commit: oid(100 + i), Tree: oid(1), Parent: ss.Head, CreatedAt: t0})
					case "status":
						err = s.Changesets().SetChangesetStatus(ctx, cs.ID, changeset.StatusOpen, changeset.Status("s"+strconv.Itoa(i)), gitstore.OID{}, t0)
					}
					if err == nil {
						wins.Add(1)
					}
					conflicts[i] = err
				})
			}
			close(start)
			wg.Wait()
			assert.Equal(t, int32(1), wins.Load(), "exactly one winner")
			for _, err := range conflicts {
				if err != nil {
					var ce *record.ConflictError
					assert.ErrorAs(t, err, &ce)
				}
			}
		})
	}
}

// testSeqGoroutines: 8 goroutines append at once; the numbers are 1..N
// with no repeat and no gap, and every mutation got the number it reported.
func testSeqGoroutines(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", nil)
	const workers, each = 8, 25
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[int64]string{}
	)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				path := strconv.Itoa(w) + "/" + strconv.Itoa(i)
				m, err := s.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpWrite, Paths: []string{path}, At: t0},
					[]session.OverlayChange{write(path, i)})
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				assert.NotContains(t, seen, m.Seq)
				seen[m.Seq] = path
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	ms, err := s.ListMutations(ctx, ss.ID, 0, 0)
	require.NoError(t, err)
	require.Len(t, ms, workers*each)
	for i, m := range ms {
		assert.Equal(t, int64(i+1), m.Seq)
		assert.Equal(t, []string{seen[m.Seq]}, m.Paths)
	}
	entries, err := s.ListOverlay(ctx, ss.ID)
	require.NoError(t, err)
	assert.Len(t, entries, workers*each)
}

// testSeqProcesses: two processes append to one session at once.
func testSeqProcesses(t *testing.T, b backend, _ Store) {
	plainRunOnly(t, "two child processes, each appending alone")
	ctx := t.Context()
	dsn := b.fresh(t)
	s := b.openStore(t, dsn)
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", nil)
	const procs, each = 2, 100

	var wg sync.WaitGroup
	for range procs {
		cmd := childCommand(t, b, dsn, ss.ID, "append")
		cmd.Env = append(cmd.Env, envCount+"="+strconv.Itoa(each))
		wg.Go(func() {
			out, err := cmd.CombinedOutput()
			assert.NoError(t, err, "%s", out)
		})
	}
	wg.Wait()
	ms, err := s.ListMutations(ctx, ss.ID, 0, 0)
	require.NoError(t, err)
	require.Len(t, ms, procs*each)
	for i, m := range ms {
		assert.Equal(t, int64(i+1), m.Seq)
	}
	got, err := s.GetSession(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, int64(procs*each), got.Seq)
}

// childCommand re-executes the test binary in child mode.
func childCommand(t testing.TB, b backend, dsn string, id uuid.UUID, mode string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+mode, envBackend+"="+b.name, envDSN+"="+dsn, envSession+"="+id.String())
	return cmd
}

func testContextCanceled(t *testing.T, _ backend, s Store) {
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	_, err := s.GetSession(ctx, ss.ID)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = s.ListSessions(ctx, session.SessionFilter{})
	assert.ErrorIs(t, err, context.Canceled)
	_, err = s.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpWrite, At: t0}, []session.OverlayChange{write("a", 1)})
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, s.SetSessionState(ctx, ss.ID, session.StateActive, session.StateAbandoned, t0), context.Canceled)
	err = s.InTx(ctx, func(session.Tx) error { return nil })
	assert.ErrorIs(t, err, context.Canceled)

	// Canceled in the middle of a transaction: nothing is committed.
	ctx, cancel = context.WithCancel(t.Context())
	err = s.InTx(ctx, func(tx session.Tx) error {
		if _, err := tx.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpWrite, At: t0}, []session.OverlayChange{write("a", 1)}); err != nil {
			return err
		}
		cancel()
		_, err := tx.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpWrite, At: t0}, nil)
		return err
	})
	assert.ErrorIs(t, err, context.Canceled)

	got, err := s.GetSession(t.Context(), ss.ID)
	require.NoError(t, err)
	assert.Equal(t, session.StateActive, got.State)
	assert.Equal(t, int64(0), got.Seq)
}

func testReopen(t *testing.T, b backend, _ Store) {
	ctx := t.Context()
	dsn := b.fresh(t)
	s, err := b.open(ctx, dsn)
	require.NoError(t, err)
	mkRepo(t, s, "r")
	ss := mkSession(t, s, "r", nil)
	m, err := s.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpWrite, Paths: []string{"a"}, At: t0}, []session.OverlayChange{write("a", 1)})
	require.NoError(t, err)
	ev, err := s.AppendEvent(ctx, events.Event{Repo: "r", Type: "x", At: t0})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	_, err = s.GetSession(ctx, ss.ID)
	assert.ErrorIs(t, err, record.ErrUnavailable, "a closed store")
	_, err = s.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpWrite, At: t0}, nil)
	assert.ErrorIs(t, err, record.ErrUnavailable, "a closed store")

	s = b.openStore(t, dsn)
	got, err := s.GetSession(ctx, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, int64(1), got.Seq)
	ms, err := s.ListMutations(ctx, ss.ID, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, []session.MutationRecord{m}, ms)
	m2, err := s.AppendMutation(ctx, session.MutationRecord{Session: ss.ID, Op: session.OpWrite, At: t0}, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(2), m2.Seq)
	ev2, err := s.AppendEvent(ctx, events.Event{Repo: "r", Type: "y", At: t0})
	require.NoError(t, err)
	assert.Equal(t, ev.ID+1, ev2.ID)
}

// testMigrations: stores opened at once on one empty database all succeed
// and apply each migration once.
func testMigrations(t *testing.T, b backend, _ Store) {
	dsn := b.fresh(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			s, err := b.open(t.Context(), dsn)
			if assert.NoError(t, err) {
				assert.NoError(t, s.Close())
			}
		})
	}
	wg.Wait()
	s := b.openStore(t, dsn)
	ms, err := loadMigrations(b.name)
	require.NoError(t, err)
	var versions []int
	runner := s.(interface{ migrationRunner() runner }).migrationRunner()
	rs, err := runner.query(t.Context(), `SELECT version FROM schema_migrations ORDER BY version`)
	require.NoError(t, err)
	versions, err = collect(rs, func(sc scanner) (int, error) {
		var v int
		return v, sc.Scan(&v)
	})
	require.NoError(t, err)
	require.Len(t, versions, len(ms))
	for i, m := range ms {
		assert.Equal(t, m.version, versions[i])
	}
}

func testReads(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	a := mkSession(t, s, "r", nil)
	b := mkSession(t, s, "r", nil)
	got, err := s.ListReads(ctx, a.ID)
	require.NoError(t, err)
	assert.Empty(t, got)

	require.NoError(t, s.RecordReads(ctx, a.ID, map[string]gitstore.OID{"x": oid(1), "d/y": oid(2)}))
	// A path already recorded keeps its first blob; new ones are added.
	require.NoError(t, s.RecordReads(ctx, a.ID, map[string]gitstore.OID{"x": oid(3), "z": oid(4)}))
	require.NoError(t, s.RecordReads(ctx, b.ID, map[string]gitstore.OID{"x": oid(5)}))
	got, err = s.ListReads(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, map[string]gitstore.OID{"x": oid(1), "d/y": oid(2), "z": oid(4)}, got)
	got, err = s.ListReads(ctx, b.ID)
	require.NoError(t, err)
	assert.Equal(t, map[string]gitstore.OID{"x": oid(5)}, got)

	// More than one statement's worth, in a transaction.
	many := map[string]gitstore.OID{}
	for i := range 1200 {
		many[fmt.Sprintf("many/%04d", i)] = oid(i)
	}
	require.NoError(t, s.InTx(ctx, func(tx session.Tx) error { return tx.RecordReads(ctx, b.ID, many) }))
	got, err = s.ListReads(ctx, b.ID)
	require.NoError(t, err)
	assert.Len(t, got, 1201)
	assert.ErrorIs(t, s.RecordReads(ctx, uuid.New(), map[string]gitstore.OID{"x": oid(1)}), record.ErrNotFound)
}

func testChangesetSelection(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	cst := s.Changesets()
	mkRepo(t, s, "r1")
	c := mkChangeset(t, cst, mkSession(t, s, "r1", nil), nil)
	got, err := cst.GetChangeset(ctx, c.ID)
	require.NoError(t, err)
	assert.Nil(t, got.Selection, "a changeset starts without a selection")

	sel := changeset.AcceptedSelection{
		Taken:   merge.Selection{Files: []string{"a.txt"}, Hunks: map[string][]int{"b.go": {0, 2}}},
		LeftOut: merge.Selection{Files: []string{"c.txt"}, Hunks: map[string][]int{"b.go": {1}}},
	}
	require.NoError(t, cst.SetChangesetSelection(ctx, c.ID, sel))
	got, err = cst.GetChangeset(ctx, c.ID)
	require.NoError(t, err)
	require.NotNil(t, got.Selection)
	assert.Equal(t, sel, *got.Selection)
	list, err := cst.ListChangesets(ctx, changeset.Filter{Repo: "r1"})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, &sel, list[0].Selection)
	assert.ErrorIs(t, cst.SetChangesetSelection(ctx, uuid.New(), sel), record.ErrNotFound)
}

func testConflicts(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	mkRepo(t, s, "q")
	a := mkSession(t, s, "r", nil)
	b := mkSession(t, s, "r", nil)
	got, err := s.ListConflicts(ctx, a.ID)
	require.NoError(t, err)
	assert.Empty(t, got)

	kc := func(p string, kind merge.ConflictKind) session.KeptConflict {
		return session.KeptConflict{
			Conflict: merge.Conflict{Path: p, Kind: kind, Base: &merge.Version{Path: p, OID: oid(1), Mode: gitstore.ModeFile},
				Ours: &merge.Version{Path: p, OID: oid(2), Mode: gitstore.ModeExec}, Message: "m " + p,
				Hunks: []merge.ConflictHunk{{BaseStart: 1, BaseLines: []string{"a\n"}, OursStart: 1, OursLines: []string{"b\n"}, TheirsStart: 2, TheirsLines: []string{}}}},
			Op: session.OpRebase, Written: []session.WrittenFile{{Path: p, OID: oid(3), Mode: gitstore.ModeFile}},
			Markers: []string{"<<<<<<< main"}, Rerere: "abc", Preimage: []byte("pre\x00\xff"),
		}
	}
	want := []session.KeptConflict{kc("a/x", merge.ConflictContent), kc("b", merge.ConflictModifyDelete)}
	require.NoError(t, s.InTx(ctx, func(tx session.Tx) error { return tx.PutConflicts(ctx, a.ID, []session.KeptConflict{want[1], want[0]}) }))
	require.NoError(t, s.PutConflicts(ctx, b.ID, want[:1]))
	got, err = s.ListConflicts(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, want, got, "by path, every field round trips")
	// Put replaces; delete removes only the paths named.
	require.NoError(t, s.PutConflicts(ctx, a.ID, want))
	require.NoError(t, s.DeleteConflicts(ctx, a.ID, []string{"a/x", "absent"}))
	got, err = s.ListConflicts(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, want[1:], got)
	got, err = s.ListConflicts(ctx, b.ID)
	require.NoError(t, err)
	assert.Equal(t, want[:1], got, "another session's conflicts stay")
	require.NoError(t, s.PutConflicts(ctx, a.ID, nil))
	got, err = s.ListConflicts(ctx, a.ID)
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.ErrorIs(t, s.PutConflicts(ctx, uuid.New(), want), record.ErrNotFound)

	// Resolutions: per repository and id, the last one wins.
	_, err = s.GetResolution(ctx, "r", "abc")
	assert.ErrorIs(t, err, record.ErrNotFound)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	r1 := session.Resolution{Repo: "r", ID: "abc", Preimage: []byte("<<<<<<<\na\n"), Postimage: []byte("x\x00y"), CreatedAt: at}
	require.NoError(t, s.PutResolution(ctx, r1))
	require.NoError(t, s.PutResolution(ctx, session.Resolution{Repo: "q", ID: "abc", Preimage: []byte("p"), Postimage: []byte{}, CreatedAt: at}))
	r, err := s.GetResolution(ctx, "r", "abc")
	require.NoError(t, err)
	assert.Equal(t, r1, r)
	r1.Postimage = []byte("resolved again\n")
	require.NoError(t, s.InTx(ctx, func(tx session.Tx) error { return tx.PutResolution(ctx, r1) }))
	r, err = s.GetResolution(ctx, "r", "abc")
	require.NoError(t, err)
	assert.Equal(t, r1, r)
	r, err = s.GetResolution(ctx, "q", "abc")
	require.NoError(t, err)
	assert.Equal(t, []byte{}, r.Postimage)
	assert.ErrorIs(t, s.PutResolution(ctx, session.Resolution{Repo: "nope", ID: "x", CreatedAt: at}), record.ErrNotFound)
}
