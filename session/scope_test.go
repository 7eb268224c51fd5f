package session_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/session"
)

// state is what a refused operation must leave as it was: the session's
// metadata, its view's tree, its log and the repository's refs.
type state struct {
	meta session.Session
	tree gitstore.OID
	muts int
	refs string
}

func (e *env) state(id uuid.UUID) state {
	e.t.Helper()
	ctx := e.t.Context()
	meta, err := e.m.Get(ctx, id)
	require.NoError(e.t, err)
	tree, _, err := e.m.Tree(ctx, id)
	require.NoError(e.t, err)
	muts, err := e.m.Mutations(ctx, id, 0, 0)
	require.NoError(e.t, err)
	meta.LastActiveAt = meta.LastActiveAt.Truncate(0)
	return state{meta: meta, tree: tree, muts: len(muts), refs: e.git("for-each-ref", "--format=%(refname) %(objectname)")}
}

// TestSummaryHidesWhatThePolicyHides: the summary counts only files the
// session may read, and only directories that hold one.
func TestSummaryHidesWhatThePolicyHides(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	open := e.create(session.CreateOptions{})
	full, err := e.m.TreeSummary(ctx, open.ID)
	require.NoError(t, err)

	s := e.create(session.CreateOptions{Policy: session.Policy{Deny: []string{"a/**", "data/**"}}})
	sum, err := e.m.TreeSummary(ctx, s.ID)
	require.NoError(t, err)
	// The fixture's a/ holds moved.txt, b/sibling.txt and b/c/deep.txt
	// data/ holds blob.bin.
	assert.Equal(t, full.Files-4, sum.Files)
	assert.Equal(t, full.Directories-4, sum.Directories, "a, a/b, a/b/c and data are hidden")
	assert.NotContains(t, sum.TopLevel, "a")
	assert.NotContains(t, sum.TopLevel, "data")
	assert.NotContains(t, sum.Extensions, ".bin")
	assert.Less(t, sum.Bytes, full.Bytes)

	// A deletion under a hidden directory is not counted either (the
	// session's own fork source deleted it).
	_, err = e.m.Delete(ctx, open.ID, "a/b/sibling.txt", false, "")
	require.NoError(t, err)
	fork, err := e.m.Fork(ctx, open.ID, session.ForkOptions{Policy: &session.Policy{Deny: []string{"a/**"}}})
	require.NoError(t, err)
	sum, err = e.m.TreeSummary(ctx, fork.ID)
	require.NoError(t, err)
	assert.Zero(t, sum.Deleted)
	sum, err = e.m.TreeSummary(ctx, open.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Deleted)
}

// TestCopyNeedsReadOnSourceWriteOnDestination: a copy reads its source
// and writes its destination; it does not need to write the source. A
// move writes both.
func TestCopyNeedsReadOnSourceWriteOnDestination(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{Policy: session.Policy{Write: []string{"out/**"}, Deny: []string{"data/**"}}})

	_, err := e.m.Copy(ctx, s.ID, "README.md", "out/README.md", "")
	require.NoError(t, err, "README.md is readable, out/ writable")
	assert.Equal(t, e.read(s.ID, "README.md"), e.read(s.ID, "out/README.md"))
	_, err = e.m.Copy(ctx, s.ID, "a", "out/a", "")
	require.NoError(t, err, "a directory copies the same way")
	assert.Equal(t, "three directories deep\n", e.read(s.ID, "out/a/b/c/deep.txt"))
	res, err := e.m.Edits(ctx, s.ID, []session.Edit{{Op: "copy", Path: "a.txt", To: "out/a.txt"}}, false, "")
	require.NoError(t, err, "and in a batch")
	assert.Len(t, res.Changes, 1)

	before := e.state(s.ID)
	for name, fn := range map[string]func() error{
		"copy to an unwritable path": func() error { _, err := e.m.Copy(ctx, s.ID, "README.md", "README2.md", ""); return err },
		"copy an unreadable source":  func() error { _, err := e.m.Copy(ctx, s.ID, "data/blob.bin", "out/blob.bin", ""); return err },
		"move an unwritable source":  func() error { _, err := e.m.Move(ctx, s.ID, "README.md", "out/R.md", ""); return err },
		"batch copy to an unwritable path": func() error {
			_, err := e.m.Edits(ctx, s.ID, []session.Edit{{Op: "copy", Path: "a.txt", To: "b.txt"}}, false, "")
			return err
		},
		"batch move an unwritable source": func() error {
			_, err := e.m.Edits(ctx, s.ID, []session.Edit{{Op: "move", Path: "a.txt", To: "out/b.txt"}}, false, "")
			return err
		},
	} {
		assert.ErrorIs(t, fn(), record.ErrForbidden, name)
		assert.Equal(t, before, e.state(s.ID), name)
	}
}

// TestGlobDirMatchesItself: `dir/**` matches dir itself, also when it is
// a file, in listings and replace.
func TestGlobDirMatchesItself(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	e.write(s.ID, "secrets", "top secret\n")
	paths, err := e.m.GlobPaths(ctx, s.ID, "secrets/**")
	require.NoError(t, err)
	assert.Equal(t, []string{"secrets"}, paths)
	paths, err = e.m.GlobPaths(ctx, s.ID, "nothing/here/**")
	require.NoError(t, err)
	assert.Empty(t, paths)
	res, err := e.m.Edits(ctx, s.ID, []session.Edit{{Op: "replace", Glob: "secrets/**", Old: "top", New: "no"}}, false, "")
	require.NoError(t, err)
	assert.Equal(t, 1, res.Results[0].Replacements)
	paths, err = e.m.GlobPaths(ctx, s.ID, `a/b/c/*.{txt,md}`)
	require.NoError(t, err)
	assert.Equal(t, []string{"a/b/c/deep.txt"}, paths)

	// And a policy that denies secrets/** denies the file secrets.
	d := e.create(session.CreateOptions{Policy: session.Policy{Deny: []string{"README.md/**"}}})
	_, _, err = e.m.Read(ctx, d.ID, "README.md", 0, -1)
	assert.ErrorIs(t, err, record.ErrForbidden)
}

// TestConditionsOnEveryChange: if_match holds on every op that changes a
// path — a stale version is a *PreconditionError and the batch changes
// nothing; where there is no one version (a directory, a glob replace)
// the batch is refused, never run without the condition.
func TestConditionsOnEveryChange(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	readme, err := e.m.Stat(ctx, s.ID, "README.md")
	require.NoError(t, err)
	cur := readme.OID
	stale := gitstore.OID{1}
	before := e.state(s.ID)

	_, err = e.m.Remove(ctx, s.ID, "README.md", session.DeleteOptions{IfMatch: &stale})
	var pe *session.PreconditionError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, cur.String(), pe.Current)
	assert.Equal(t, before, e.state(s.ID))
	_, err = e.m.Remove(ctx, s.ID, "missing.txt", session.DeleteOptions{IfMatch: &cur})
	assert.ErrorIs(t, err, session.ErrPrecondition)
	_, err = e.m.Remove(ctx, s.ID, "a", session.DeleteOptions{Recursive: true, IfMatch: &cur})
	assert.ErrorIs(t, err, record.ErrInvalid)
	assert.Equal(t, before, e.state(s.ID))

	ops := []session.Edit{
		{Op: "write", Path: "README.md", Content: "x"},
		{Op: "append", Path: "README.md", Content: "x"},
		{Op: "delete", Path: "README.md"},
		{Op: "move", Path: "README.md", To: "moved.md"},
		{Op: "copy", Path: "README.md", To: "copied.md"},
		{Op: "replace", Path: "README.md", Old: "small", New: "big"},
	}
	for _, op := range ops {
		t.Run(string(op.Op), func(t *testing.T) {
			// A first edit in the batch succeeds, so a refusal must undo it.
			first := session.Edit{Op: "write", Path: "first.txt", Content: "1"}
			op.IfMatch = &stale
			_, err := e.m.Edits(ctx, s.ID, []session.Edit{first, op}, false, "")
			assert.ErrorIs(t, err, session.ErrPrecondition)
			assert.Equal(t, before, e.state(s.ID))
			// The condition is checked against the batch's evolving view:
			// after an earlier edit changed the file, its old version is
			// stale.
			op.IfMatch = &cur
			_, err = e.m.Edits(ctx, s.ID, []session.Edit{{Op: "append", Path: "README.md", Content: "more"}, op}, true, "")
			assert.ErrorIs(t, err, session.ErrPrecondition)
			res, err := e.m.Edits(ctx, s.ID, []session.Edit{op}, true, "")
			require.NoError(t, err, "the current version passes")
			assert.NotEmpty(t, res.Changes)
		})
	}
	for name, bad := range map[string]session.Edit{
		"glob replace":     {Op: "replace", Glob: "**/*.md", Old: "a", New: "b", IfMatch: &cur},
		"recursive delete": {Op: "delete", Path: "a", Recursive: true, IfMatch: &cur},
		"directory move":   {Op: "move", Path: "a", To: "z", IfMatch: &cur},
	} {
		_, err := e.m.Edits(ctx, s.ID, []session.Edit{bad}, false, "")
		assert.ErrorIs(t, err, record.ErrInvalid, name)
		assert.Equal(t, before, e.state(s.ID), name)
	}
	// Without a stale condition the delete goes through.
	_, err = e.m.Remove(ctx, s.ID, "README.md", session.DeleteOptions{IfMatch: &cur})
	require.NoError(t, err)
	ok, err := e.m.Exists(ctx, s.ID, "README.md")
	require.NoError(t, err)
	assert.False(t, ok)
}

// TestForkNeverWidens: a fork inherits its source's mode and policy and
// may only narrow them (issue: a read_only session with a read policy
// forked itself read_write with no policy).
func TestForkNeverWidens(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	ro := e.create(session.CreateOptions{Mode: session.ModeReadOnly, Policy: session.Policy{Read: []string{"README.md"}, Deny: []string{"a/**"}}})
	count := func() int {
		ss, err := e.m.ListSessions(ctx, session.SessionFilter{})
		require.NoError(t, err)
		return len(ss)
	}
	n, refs := count(), e.git("for-each-ref")
	_, err := e.m.Fork(ctx, ro.ID, session.ForkOptions{Mode: session.ModeReadWrite, Policy: &session.Policy{}})
	assert.ErrorIs(t, err, session.ErrReadOnly)
	assert.Equal(t, n, count(), "a refused fork creates no session")
	assert.Equal(t, refs, e.git("for-each-ref"), "and no ref")

	for _, req := range []*session.Policy{nil, {}, {Read: []string{"**"}, Write: []string{"**"}}, {Read: []string{"a/**", "README.md"}}} {
		f, err := e.m.Fork(ctx, ro.ID, session.ForkOptions{Policy: req})
		require.NoError(t, err)
		assert.Equal(t, session.ModeReadOnly, f.Mode)
		_, _, err = e.m.Read(ctx, f.ID, "README.md", 0, -1)
		assert.NoError(t, err, "%+v", req)
		for _, hidden := range []string{"a/b/sibling.txt", "a.txt"} {
			_, _, err = e.m.Read(ctx, f.ID, hidden, 0, -1)
			assert.ErrorIs(t, err, record.ErrForbidden, "fork with %+v reads %q", req, hidden)
		}
		_, _, err = e.m.Write(ctx, f.ID, "README.md", []byte("x"), session.WriteOptions{})
		assert.ErrorIs(t, err, session.ErrReadOnly)
		// A fork of the fork is no wider either.
		ff, err := e.m.Fork(ctx, f.ID, session.ForkOptions{Policy: &session.Policy{Read: []string{"**"}}})
		require.NoError(t, err)
		_, _, err = e.m.Read(ctx, ff.ID, "a.txt", 0, -1)
		assert.ErrorIs(t, err, record.ErrForbidden)
	}

	rw := e.create(session.CreateOptions{Policy: session.Policy{Write: []string{"src/**"}}})
	f, err := e.m.Fork(ctx, rw.ID, session.ForkOptions{Policy: &session.Policy{Write: []string{"**"}, Deny: []string{"src/private/**"}}})
	require.NoError(t, err)
	_, _, err = e.m.Write(ctx, f.ID, "README.md", []byte("x"), session.WriteOptions{})
	assert.ErrorIs(t, err, record.ErrForbidden, "the parent cannot write README.md")
	_, _, err = e.m.Write(ctx, f.ID, "src/private/k", []byte("x"), session.WriteOptions{})
	assert.ErrorIs(t, err, record.ErrForbidden, "the fork's own deny applies")
	e.write(f.ID, "src/ok.go", "package ok\n")
	ro2, err := e.m.Fork(ctx, rw.ID, session.ForkOptions{Mode: session.ModeReadOnly})
	require.NoError(t, err, "narrowing the mode is fine")
	assert.Equal(t, session.ModeReadOnly, ro2.Mode)
	// The fork's policy survives a restart.
	e.restart()
	_, _, err = e.m.Write(ctx, f.ID, "README.md", []byte("x"), session.WriteOptions{})
	assert.ErrorIs(t, err, record.ErrForbidden)
}

// TestMergeHoldsToBothPolicies: a merge brings in only paths this session
// may write and the other session may read; otherwise it is refused and
// changes nothing.
func TestMergeHoldsToBothPolicies(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	a := e.create(session.CreateOptions{Policy: session.Policy{Write: []string{"src/**"}, Deny: []string{"secret/**"}}})
	e.write(a.ID, "src/mine.go", "package mine\n")

	for name, files := range map[string][]string{
		"under a deny glob":    {"src/theirs.go", "secret/key"},
		"outside write globs":  {"src/theirs.go", "README.md"},
		"only a denied delete": {"src/x.go"},
	} {
		b := e.create(session.CreateOptions{})
		for _, p := range files {
			e.write(b.ID, p, p+"\n")
		}
		if name == "only a denied delete" {
			_, err := e.m.Delete(ctx, b.ID, "a.txt", false, "")
			require.NoError(t, err)
		}
		before := e.state(a.ID)
		_, _, err := e.m.MergeFrom(ctx, a.ID, b.ID, "")
		assert.ErrorIs(t, err, record.ErrForbidden, name)
		assert.Equal(t, before, e.state(a.ID), name)
	}

	// What the other session cannot read (a fork's inherited, hidden
	// entries) does not come in through it.
	p := e.create(session.CreateOptions{})
	e.write(p.ID, "src/hidden/x.go", "package hidden\n")
	b, err := e.m.Fork(ctx, p.ID, session.ForkOptions{Policy: &session.Policy{Deny: []string{"src/hidden/**"}}})
	require.NoError(t, err)
	before := e.state(a.ID)
	_, _, err = e.m.MergeFrom(ctx, a.ID, b.ID, "")
	assert.ErrorIs(t, err, record.ErrForbidden)
	assert.Equal(t, before, e.state(a.ID))

	ok := e.create(session.CreateOptions{})
	e.write(ok.ID, "src/theirs.go", "package theirs\n")
	_, _, err = e.m.MergeFrom(ctx, a.ID, ok.ID, "")
	require.NoError(t, err)
	assert.Equal(t, "package theirs\n", e.read(a.ID, "src/theirs.go"))
}

// TestRebaseAndRollbackHoldToPolicy: a rebase writes only the session's
// own changes (upstream's are the new base, not writes); a rollback that
// would write a path the session may not write is refused, never
// silently applied.
func TestRebaseAndRollbackHoldToPolicy(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{Policy: session.Policy{Write: []string{"src/**"}}})
	e.write(s.ID, "src/a.go", "package a\n")
	cp, err := e.m.Checkpoint(ctx, s.ID, "one", "")
	require.NoError(t, err)

	// Upstream changes README.md, which the session may not write.
	commitOnMain(t, e, "README.md", "upstream readme\n")

	_, _, err = e.m.Rebase(ctx, s.ID, "main", "")
	require.NoError(t, err, "upstream's README.md is not the session's write")
	assert.Equal(t, "upstream readme\n", e.read(s.ID, "README.md"))

	before := e.state(s.ID)
	_, _, err = e.m.Rollback(ctx, s.ID, strconv.Itoa(cp.N), "")
	if err != nil {
		assert.Equal(t, before, e.state(s.ID), "a refused rollback changes nothing")
	} else {
		assert.Equal(t, "upstream readme\n", e.read(s.ID, "README.md"), "a rollback never writes upstream's README.md back")
	}
}

// commitOnMain commits content at p on top of main with the git CLI,
// through a temporary index, as another user of the repository would.
func commitOnMain(t testing.TB, e *env, p, content string) {
	t.Helper()
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
	blob := testrepo.GitInput(t, e.repoDir, []byte(content), "hash-object", "-w", "--stdin")
	testrepo.GitEnv(t, e.repoDir, env, nil, "read-tree", "main")
	testrepo.GitEnv(t, e.repoDir, env, nil, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+p)
	tree := testrepo.GitEnv(t, e.repoDir, env, nil, "write-tree")
	commit := e.git("commit-tree", tree, "-p", "main", "-m", "upstream "+p)
	e.git("update-ref", "refs/heads/main", commit)
}

// TestRebaseShowsOnlyReadablePaths: upstream's change to a path the
// session may not read is part of its new base, but neither the rebase's
// result, its mutation log nor its event stream names that path.
func TestRebaseShowsOnlyReadablePaths(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{Policy: session.Policy{Deny: []string{"secret/**"}}})
	e.write(s.ID, "src/a.go", "package a\n")
	commitOnMain(t, e, "secret/plan.txt", "upstream secret\n")
	commitOnMain(t, e, "public.txt", "upstream public\n")

	_, mu, err := e.m.Rebase(ctx, s.ID, "main", "")
	require.NoError(t, err)
	assert.Contains(t, mu.Paths, "public.txt")
	assert.NotContains(t, mu.Paths, "secret/plan.txt", "the rebase's result")
	assert.Len(t, mu.Old, len(mu.Paths))
	assert.Len(t, mu.New, len(mu.Paths))

	ms, err := e.m.Mutations(ctx, s.ID, 0, 0)
	require.NoError(t, err)
	last := ms[len(ms)-1]
	assert.Equal(t, session.OpRebase, last.Op)
	assert.Equal(t, mu.Paths, last.Paths, "the log")
	assert.Len(t, last.New, len(last.Paths))

	evs, err := e.en.Events.List(ctx, events.Filter{Session: s.ID})
	require.NoError(t, err)
	var seen []string
	for _, ev := range evs {
		seen = append(seen, string(ev.Payload))
	}
	joined := strings.Join(seen, "\n")
	assert.Contains(t, joined, "public.txt")
	assert.NotContains(t, joined, "secret/plan.txt", "the event stream")
	assert.NotContains(t, joined, `"mode":"000000"`, "a written file's event carries its mode")

	// The path is in the new base all the same: an admin sees it on the
	// branch, and the session's view holds it (hidden, not lost).
	assert.Equal(t, "upstream secret\n", e.git("show", "main:secret/plan.txt")+"\n")
	_, _, err = e.m.Read(ctx, s.ID, "secret/plan.txt", 0, -1)
	assert.ErrorIs(t, err, record.ErrForbidden)
}
