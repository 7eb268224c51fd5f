package session_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/session"
)

// state is what a refused operation must leave as it was: the session's
// metadata, its view's tree, its log and the repository's refs.
type state struct {
	meta  session.Session
	tree  gitstore.OID
	muts  int
	refs  string
	files map[string]string
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
		assert.ErrorIs(t, fn(), session.ErrForbidden, name)
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
	assert.ErrorIs(t, err, session.ErrForbidden)
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
	assert.ErrorIs(t, err, session.ErrInvalid)
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
		assert.ErrorIs(t, err, session.ErrInvalid, name)
		assert.Equal(t, before, e.state(s.ID), name)
	}
	// Without a stale condition the delete goes through.
	_, err = e.m.Remove(ctx, s.ID, "README.md", session.DeleteOptions{IfMatch: &cur})
	require.NoError(t, err)
	ok, err := e.m.Exists(ctx, s.ID, "README.md")
	require.NoError(t, err)
	assert.False(t, ok)
}
