package session_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/session"
)

func TestCreateAtRevisions(t *testing.T) {
	e := newEnv(t, "small")
	for _, rev := range []string{"main", "feature", "v1", "v0", "HEAD", ""} {
		s := e.create(session.CreateOptions{Base: rev})
		want := rev
		if rev == "" {
			want = "main"
		}
		assert.Equal(t, e.oid(want+"^{commit}"), s.BaseCommit, rev)
		assert.Equal(t, session.StateActive, s.State)
	}
	s := e.create(session.CreateOptions{Base: e.oid("main~1").String()[:8]})
	assert.Equal(t, e.oid("main~1"), s.BaseCommit)
	assert.Empty(t, s.BaseRef)
	s = e.create(session.CreateOptions{Base: "feature"})
	assert.Equal(t, "feature", s.BaseRef)
	// The base is pinned against gc.
	assert.Equal(t, s.BaseCommit.String(), e.git("rev-parse", "refs/sessions/"+s.ID.String()+"/base"))

	for _, bad := range []session.CreateOptions{{Base: "nope"}, {Repo: "missing"}, {Mode: "sideways"}, {Policy: session.Policy{Write: []string{"[x"}}}} {
		_, err := e.m.Create(t.Context(), fill(bad))
		assert.Error(t, err, "%+v", bad)
	}
}

func fill(o session.CreateOptions) session.CreateOptions {
	if o.Repo == "" {
		o.Repo = "r"
	}
	if o.Base == "" {
		o.Base = "main"
	}
	return o
}

func TestReadWriteThroughOverlay(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	other := e.create(session.CreateOptions{})

	readme := e.git("show", "main:README.md")
	assert.Equal(t, readme+"\n", e.read(s.ID, "README.md"))
	fi, err := e.m.Stat(ctx, s.ID, "README.md")
	require.NoError(t, err)
	assert.Equal(t, session.SourceBase, fi.Source)
	assert.Equal(t, e.oid("main:README.md"), fi.OID)

	w := e.write(s.ID, "README.md", "changed\n")
	assert.Equal(t, session.SourceOverlay, w.Source)
	assert.Equal(t, overlay.Modified, w.Status)
	assert.Equal(t, gitstore.HashObject(gitstore.KindBlob, []byte("changed\n")), w.OID)
	assert.Equal(t, "changed\n", e.read(s.ID, "README.md"))
	// Isolation: the other session and the repository are untouched.
	assert.Equal(t, readme+"\n", e.read(other.ID, "README.md"))
	assert.Equal(t, readme, e.git("show", "main:README.md"))

	e.write(s.ID, "new/dir/file.txt", "hello")
	part, _, err := e.m.Read(ctx, s.ID, "new/dir/file.txt", 1, 3)
	require.NoError(t, err)
	assert.Equal(t, "ell", string(part))

	// Writing the base content back removes the entry.
	e.write(s.ID, "README.md", readme+"\n")
	mods, err := e.m.ListFiles(ctx, s.ID, session.ListOptions{Recursive: true, OnlyModified: true})
	require.NoError(t, err)
	var paths []string
	for _, fi := range mods {
		paths = append(paths, fi.Path)
	}
	assert.Equal(t, []string{"new", "new/dir", "new/dir/file.txt"}, paths)

	_, err = e.m.Delete(ctx, s.ID, "a", false, "")
	assert.ErrorIs(t, err, record.ErrInvalid)
	_, err = e.m.Delete(ctx, s.ID, "a", true, "")
	require.NoError(t, err)
	_, err = e.m.Stat(ctx, s.ID, "a/b/c/deep.txt")
	assert.ErrorIs(t, err, record.ErrNotFound)
	_, _, err = e.m.Read(ctx, s.ID, "nope.txt", 0, -1)
	assert.ErrorIs(t, err, record.ErrNotFound)

	_, err = e.m.Move(ctx, s.ID, "new", "moved", "")
	require.NoError(t, err)
	assert.Equal(t, "hello", e.read(s.ID, "moved/dir/file.txt"))
	_, err = e.m.Copy(ctx, s.ID, "a.txt", "copy.txt", "")
	require.NoError(t, err)
	assert.Equal(t, e.read(s.ID, "a.txt"), e.read(s.ID, "copy.txt"))
	_, _, err = e.m.Append(ctx, s.ID, "copy.txt", []byte("more\n"), session.WriteOptions{})
	require.NoError(t, err)
	assert.Equal(t, e.read(s.ID, "a.txt")+"more\n", e.read(s.ID, "copy.txt"))

	muts, err := e.m.Mutations(ctx, s.ID, 0, 0)
	require.NoError(t, err)
	var ops []session.Op
	for i, mu := range muts {
		assert.Equal(t, int64(i+1), mu.Seq)
		ops = append(ops, mu.Op)
	}
	assert.Equal(t, []session.Op{session.OpWrite, session.OpWrite, session.OpWrite, session.OpDelete, session.OpMove, session.OpCopy, session.OpAppend}, ops)
	assert.Equal(t, []string{"README.md"}, muts[0].Paths)
	assert.Equal(t, e.oid("main:README.md"), muts[0].Old[0])
	assert.Equal(t, w.OID, muts[0].New[0])

	// The read set has what was read from the base.
	rs, err := e.m.ReadSet(ctx, s.ID)
	require.NoError(t, err)
	assert.Equal(t, e.oid("main:README.md"), rs["README.md"])
	assert.Equal(t, e.oid("main:a.txt"), rs["a.txt"])
}

func TestOptimisticConcurrency(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	cur := e.oid("main:README.md")
	stale := gitstore.HashObject(gitstore.KindBlob, []byte("stale"))
	_, _, err := e.m.Write(ctx, s.ID, "README.md", []byte("x"), session.WriteOptions{IfMatch: &stale})
	var pe *session.PreconditionError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, cur.String(), pe.Current)
	assert.ErrorIs(t, err, session.ErrPrecondition)
	fi, _, err := e.m.Write(ctx, s.ID, "README.md", []byte("x"), session.WriteOptions{IfMatch: &cur})
	require.NoError(t, err)
	_, _, err = e.m.Write(ctx, s.ID, "README.md", []byte("y"), session.WriteOptions{IfMatch: &cur})
	assert.ErrorIs(t, err, session.ErrPrecondition)
	_, _, err = e.m.Write(ctx, s.ID, "README.md", []byte("y"), session.WriteOptions{IfNoneMatch: true})
	assert.ErrorIs(t, err, session.ErrPrecondition)
	_, _, err = e.m.Write(ctx, s.ID, "fresh.txt", []byte("y"), session.WriteOptions{IfNoneMatch: true})
	require.NoError(t, err)
	assert.Equal(t, "x", e.read(s.ID, "README.md"))
	assert.Equal(t, fi.OID, gitstore.HashObject(gitstore.KindBlob, []byte("x")))
}

// TestBadInputChangesNothing: bad paths, writes to read-only, abandoned and
// expired sessions, and policy violations fail with typed errors and leave
// the overlay and the log as they were.
func TestBadInputChangesNothing(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	now := time.Now()
	clock := func() time.Time { return now }
	require.NoError(t, e.en.Close())
	e.start(session.Config{Now: clock})
	s := e.create(session.CreateOptions{Policy: session.Policy{Write: []string{"src/**", "*.md"}, Deny: []string{"secrets/**"}}})
	e.write(s.ID, "src/ok.go", "package ok\n")
	before := e.view(s.ID)
	muts, _ := e.m.Mutations(ctx, s.ID, 0, 0)

	for _, c := range []struct {
		path string
		rule overlay.Rule
	}{
		{"", overlay.RuleFullPathname}, {"/abs", overlay.RuleFullPathname}, {"a//b", overlay.RuleFullPathname},
		{"src/../x", overlay.RuleHasDotdot}, {"src/./x", overlay.RuleHasDot},
		{"src/.git/config", overlay.RuleHasDotgit}, {"src/.GIT", overlay.RuleHasDotgit}, {"src/git~1", overlay.RuleHasDotgit},
		{"src/a\x00b", overlay.RuleBadPathChar}, {"src/a\\b", overlay.RuleBadPathChar},
		{"src/ok.go/x", overlay.RuleFileDirectoryCollision},
	} {
		_, _, err := e.m.Write(ctx, s.ID, c.path, []byte("x"), session.WriteOptions{})
		var pe *overlay.PathError
		if assert.ErrorAs(t, err, &pe, "%q", c.path) {
			assert.Equal(t, c.rule, pe.Rule, "%q", c.path)
		}
	}
	for _, p := range []string{"secrets/key", "other.txt"} {
		_, _, err := e.m.Write(ctx, s.ID, p, []byte("x"), session.WriteOptions{})
		assert.ErrorIs(t, err, record.ErrForbidden, p)
	}
	_, err := e.m.Edits(ctx, s.ID, []session.Edit{{Op: "write", Path: "src/a", Content: "a"}, {Op: "write", Path: "src/.git/x", Content: "b"}}, false, "")
	assert.Error(t, err)
	_, err = e.m.Edits(ctx, s.ID, []session.Edit{{Op: "write", Path: "src/a", Content: "a"}, {Op: "delete", Path: "src/missing"}}, false, "")
	assert.ErrorIs(t, err, record.ErrNotFound)
	_, _, err = e.m.Write(ctx, s.ID, "src/big", make([]byte, 64<<20+1), session.WriteOptions{})
	assert.ErrorIs(t, err, session.ErrTooLarge)

	ro := e.create(session.CreateOptions{Mode: session.ModeReadOnly})
	_, _, err = e.m.Write(ctx, ro.ID, "x", []byte("x"), session.WriteOptions{})
	assert.ErrorIs(t, err, session.ErrReadOnly)

	gone := e.create(session.CreateOptions{})
	_, err = e.m.Abandon(ctx, gone.ID)
	require.NoError(t, err)
	_, _, err = e.m.Write(ctx, gone.ID, "x", []byte("x"), session.WriteOptions{})
	assert.ErrorIs(t, err, record.ErrSessionClosed)
	_, err = e.m.Checkpoint(ctx, gone.ID, "", "")
	assert.ErrorIs(t, err, record.ErrSessionClosed)

	short := e.create(session.CreateOptions{TTL: time.Minute})
	now = now.Add(2 * time.Minute)
	_, _, err = e.m.Write(ctx, short.ID, "x", []byte("x"), session.WriteOptions{})
	assert.ErrorIs(t, err, record.ErrSessionClosed)
	got, err := e.m.Get(ctx, short.ID)
	require.NoError(t, err)
	assert.Equal(t, session.StateExpired, got.State)

	assert.Equal(t, before, e.view(s.ID))
	after, _ := e.m.Mutations(ctx, s.ID, 0, 0)
	assert.Equal(t, muts, after)
}

func TestBatchEditsAtomicAndDryRun(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	edits := []session.Edit{
		{Op: "write", Path: "x.txt", Content: "one two one\n"},
		{Op: "append", Path: "x.txt", Content: "three\n"},
		{Op: "replace", Path: "x.txt", Old: "one", New: "1", Count: 1},
		{Op: "copy", Path: "x.txt", To: "y.txt"},
		{Op: "move", Path: "a.txt", To: "b.txt"},
		{Op: "delete", Path: "bin", Recursive: true},
		{Op: "replace", Glob: "**/*.txt", Old: "three", New: "3"},
	}
	dry, err := e.m.Edits(ctx, s.ID, edits, true, "")
	require.NoError(t, err)
	assert.True(t, dry.DryRun)
	assert.Equal(t, int64(0), dry.Seq)
	_, err = e.m.Stat(ctx, s.ID, "x.txt")
	assert.ErrorIs(t, err, record.ErrNotFound, "a dry run changes nothing")

	res, err := e.m.Edits(ctx, s.ID, edits, false, "")
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.Seq)
	assert.Equal(t, dry.Results, res.Results)
	assert.Equal(t, dry.Changes, res.Changes)
	assert.Equal(t, "1 two one\n3\n", e.read(s.ID, "x.txt"))
	assert.Equal(t, "1 two one\n3\n", e.read(s.ID, "y.txt"))
	_, err = e.m.Stat(ctx, s.ID, "bin/run.sh")
	assert.ErrorIs(t, err, record.ErrNotFound)
	assert.Equal(t, 3, res.Results[6].Replacements) // x.txt, y.txt and a/b/c/deep.txt
	assert.Equal(t, "3 directories deep\n", e.read(s.ID, "a/b/c/deep.txt"))

	// One bad edit: nothing of the batch applies.
	before := e.view(s.ID)
	_, err = e.m.Edits(ctx, s.ID, []session.Edit{{Op: "write", Path: "z.txt", Content: "z"}, {Op: "replace", Path: "x.txt", Old: "absent", New: "q"}}, false, "")
	assert.ErrorIs(t, err, record.ErrInvalid)
	assert.Equal(t, before, e.view(s.ID))
}

func TestCheckpointRollbackFork(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{AgentName: "Agent One"})
	e.write(s.ID, "README.md", "v1\n")
	cp1, err := e.m.Checkpoint(ctx, s.ID, "first", "")
	require.NoError(t, err)
	assert.Equal(t, 1, cp1.N)
	assert.Equal(t, e.oid("main"), cp1.Parent)
	assert.Equal(t, cp1.Commit.String(), e.git("rev-parse", "refs/sessions/"+s.ID.String()+"/checkpoints/1"))
	assert.Equal(t, cp1.Commit.String(), e.git("rev-parse", "refs/sessions/"+s.ID.String()+"/head"))
	assert.Equal(t, "v1", e.git("show", cp1.Commit.String()+":README.md"))

	e.write(s.ID, "README.md", "v2\n")
	_, err = e.m.Delete(ctx, s.ID, "a", true, "")
	require.NoError(t, err)
	e.write(s.ID, "a", "a is a file now\n")
	cp2, err := e.m.Checkpoint(ctx, s.ID, "second", "")
	require.NoError(t, err)
	assert.Equal(t, cp1.Commit, cp2.Parent)
	v2 := e.view(s.ID)
	assert.Equal(t, e.treeFiles(cp2.Tree), v2)
	testrepoFsck(t, e)

	rb, _, err := e.m.Rollback(ctx, s.ID, "1", "")
	require.NoError(t, err)
	assert.Equal(t, 3, rb.N)
	assert.Equal(t, cp1.Tree, rb.Tree)
	assert.Equal(t, e.treeFiles(cp1.Tree), e.view(s.ID))
	muts, _ := e.m.Mutations(ctx, s.ID, 0, 0)
	assert.Equal(t, session.OpRollback, muts[len(muts)-1].Op)

	f, err := e.m.Fork(ctx, s.ID, session.ForkOptions{AgentID: "agent-2", Checkpoint: cp2.Commit.String()})
	require.NoError(t, err)
	assert.Equal(t, s.ID, f.Parent)
	assert.Equal(t, v2, e.view(f.ID))
	f2, err := e.m.Fork(ctx, s.ID, session.ForkOptions{AgentID: "agent-3"})
	require.NoError(t, err)
	assert.Equal(t, e.treeFiles(cp1.Tree), e.view(f2.ID))
	// Forks are independent.
	e.write(f.ID, "README.md", "fork\n")
	assert.Equal(t, "v1\n", e.read(s.ID, "README.md"))

	// Everything survives a restart.
	e.restart()
	assert.Equal(t, e.treeFiles(cp1.Tree), e.view(s.ID))
	assert.Equal(t, "fork\n", e.read(f.ID, "README.md"))
	cps, err := e.m.Checkpoints(ctx, s.ID)
	require.NoError(t, err)
	assert.Len(t, cps, 3)
}

func testrepoFsck(t *testing.T, e *env) {
	t.Helper()
	e.git("fsck", "--strict", "--no-dangling")
}

func TestGCKeepsEverythingReferenced(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{Base: e.oid("main~1").String()})
	e.write(s.ID, "one.txt", "only in the overlay\n")
	cp, err := e.m.Checkpoint(ctx, s.ID, "", "")
	require.NoError(t, err)
	e.write(s.ID, "two.txt", "written after the checkpoint\n")
	// Move main away from the session's base and prune everything
	// unreachable, as an impatient user would.
	e.git("update-ref", "refs/heads/main", e.oid("main~2").String())
	e.git("reflog", "expire", "--expire=now", "--all")
	e.git("gc", "-q", "--prune=now")
	testrepoFsck(t, e)
	e.restart()
	assert.Equal(t, "only in the overlay\n", e.read(s.ID, "one.txt"))
	assert.Equal(t, "written after the checkpoint\n", e.read(s.ID, "two.txt"))
	assert.Equal(t, "only in the overlay", e.git("show", cp.Commit.String()+":one.txt"))
	e.write(s.ID, "three.txt", "after gc\n")
	assert.Equal(t, "after gc\n", e.read(s.ID, "three.txt"))
}

func TestEvents(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	sub := e.en.Events.Subscribe(ctx, events.Filter{Session: s.ID})
	first := <-sub
	assert.Equal(t, session.EventSessionState, first.Type)
	e.write(s.ID, "x", "1")
	_, err := e.m.Delete(ctx, s.ID, "x", false, "")
	require.NoError(t, err)
	_, err = e.m.Checkpoint(ctx, s.ID, "", "")
	require.NoError(t, err)
	var types []string
	var ids []int64
	for range 3 {
		select {
		case ev := <-sub:
			types = append(types, ev.Type)
			ids = append(ids, ev.ID)
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
	}
	assert.Equal(t, []string{session.EventFileWritten, session.EventFileDeleted, session.EventCheckpointCreated}, types)
	assert.Less(t, first.ID, ids[0])
	// Resume after the first file event.
	resumed := e.en.Events.Subscribe(ctx, events.Filter{Session: s.ID, After: ids[0]})
	assert.Equal(t, ids[1], (<-resumed).ID)
}

func TestSearchGlobSummary(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	e.write(s.ID, "pkg/main.go", "package main\n\nfunc Main() {}\n")
	e.write(s.ID, "pkg/util/u.go", "package util\nfunc Helper() {}\n")
	paths, err := e.m.GlobPaths(ctx, s.ID, "pkg/**/*.go")
	require.NoError(t, err)
	assert.Equal(t, []string{"pkg/main.go", "pkg/util/u.go"}, paths)
	paths, err = e.m.GlobPaths(ctx, s.ID, "a?txt")
	require.NoError(t, err)
	assert.Equal(t, []string{"a.txt"}, paths)
	paths, err = e.m.GlobPaths(ctx, s.ID, "a[!.]*")
	require.NoError(t, err)
	assert.Equal(t, []string{"a-b", "a0"}, paths)

	res, err := e.m.Search(ctx, s.ID, session.SearchOptions{Pattern: `func (\w+)`, Prefix: "pkg"})
	require.NoError(t, err)
	require.Len(t, res.Matches, 2)
	assert.Equal(t, session.Match{Path: "pkg/main.go", Line: 3, Column: 1, Text: "func Main() {}"}, res.Matches[0])
	res, err = e.m.Search(ctx, s.ID, session.SearchOptions{Pattern: "FUNC", CaseInsensitive: true, Glob: "pkg/util/*", MaxResults: 1})
	require.NoError(t, err)
	assert.Len(t, res.Matches, 1)
	assert.False(t, res.Truncated)
	res, err = e.m.Search(ctx, s.ID, session.SearchOptions{Pattern: "a", MaxResults: 1})
	require.NoError(t, err)
	assert.True(t, res.Truncated)
	_, err = e.m.Search(ctx, s.ID, session.SearchOptions{Pattern: "("})
	assert.ErrorIs(t, err, record.ErrInvalid)

	sum, err := e.m.TreeSummary(ctx, s.ID)
	require.NoError(t, err)
	assert.Equal(t, 2, sum.Added)
	assert.Equal(t, len(e.view(s.ID)), sum.Files)
}

func TestFSConformance(t *testing.T) {
	e := newEnv(t, "small")
	s := e.create(session.CreateOptions{})
	e.write(s.ID, "added/file.txt", "x")
	_, err := e.m.Delete(t.Context(), s.ID, "a/b", true, "")
	require.NoError(t, err)
	require.NoError(t, fstest.TestFS(session.NewFS(t.Context(), e.m, s.ID), "README.md", "added/file.txt", "a/moved.txt", "bin/run.sh"))
}

// TestConcurrentSessions runs many sessions in parallel and many writers on
// one session (serialized); run with -race.
func TestConcurrentSessions(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	shared := e.create(session.CreateOptions{})
	var wg sync.WaitGroup
	ids := make([]uuid.UUID, 8)
	for i := range ids {
		ids[i] = e.create(session.CreateOptions{AgentID: fmt.Sprint("a", i)}).ID
	}
	for i, id := range ids {
		wg.Go(func() {
			for j := range 5 {
				_, _, err := e.m.Write(ctx, id, fmt.Sprintf("f%d.txt", j), []byte(fmt.Sprint(i, j)), session.WriteOptions{})
				assert.NoError(t, err)
				_, _, err = e.m.Write(ctx, shared.ID, fmt.Sprintf("w%d/%d.txt", i, j), []byte("x"), session.WriteOptions{})
				assert.NoError(t, err)
				_, _, err = e.m.Read(ctx, shared.ID, "README.md", 0, -1)
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		v := e.view(id)
		assert.Equal(t, fmt.Sprint(i, 4), v["f4.txt"])
		assert.NotContains(t, v, "w0/0.txt")
	}
	muts, err := e.m.Mutations(ctx, shared.ID, 0, 0)
	require.NoError(t, err)
	assert.Len(t, muts, 40)
	for i, mu := range muts {
		assert.Equal(t, int64(i+1), mu.Seq)
	}
}

var _ = errors.Is

// TestReadSetSurvivesRestart: reads are saved with the session's next
// transaction and come back after a restart; the first read of a path
// is the one kept.
func TestReadSetSurvivesRestart(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	e.read(s.ID, "a.txt")
	e.read(s.ID, "README.md")
	e.write(s.ID, "README.md", "mine\n") // saves the reads
	e.read(s.ID, "README.md")            // from the overlay: not a base read
	e.restart()
	rs, err := e.m.ReadSet(ctx, s.ID)
	require.NoError(t, err)
	assert.Equal(t, map[string]gitstore.OID{"a.txt": e.oid("main:a.txt"), "README.md": e.oid("main:README.md")}, rs)

	// ReadSet saves reads that no transaction has carried yet.
	e.read(s.ID, "a0")
	_, err = e.m.ReadSet(ctx, s.ID)
	require.NoError(t, err)
	e.restart()
	rs, err = e.m.ReadSet(ctx, s.ID)
	require.NoError(t, err)
	assert.Contains(t, rs, "a0")
}
