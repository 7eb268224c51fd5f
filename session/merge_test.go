package session_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/session"
)

func TestRebase(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{Base: "main"})
	e.write(s.ID, "notes.txt", "mine\n")
	e.write(s.ID, "a.txt", "session's a.txt\n")
	before := checkpointOf(t, e, s) // parent: the old base

	// The branch moves: someone changes README.md with the git CLI.
	e.git("checkout", "-q", "main")
	writeWorkFile(t, e, "README.md", "moved on\n")
	e.git("commit", "-q", "-am", "upstream")
	up := e.oid("main")

	got, mu, err := e.m.Rebase(ctx, s.ID, "", "")
	require.NoError(t, err)
	assert.Equal(t, up, got.BaseCommit)
	assert.Equal(t, session.OpRebase, mu.Op)
	assert.Equal(t, "moved on\n", e.read(s.ID, "README.md"))
	assert.Equal(t, "mine\n", e.read(s.ID, "notes.txt"))
	assert.Equal(t, "session's a.txt\n", e.read(s.ID, "a.txt"))
	tree, _, err := e.m.Tree(ctx, s.ID)
	require.NoError(t, err)
	want := e.git("merge-tree", "--write-tree", up.String(), before)
	assert.Equal(t, want, tree.String(), "same tree as git's merge of the session onto the new base")

	// A conflicting upstream change: nothing applies.
	writeWorkFile(t, e, "a.txt", "upstream's a.txt\n")
	e.git("commit", "-q", "-am", "conflicting")
	view := e.view(s.ID)
	_, _, err = e.m.Rebase(ctx, s.ID, "main", "")
	var ce *merge.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Conflicts, 1)
	assert.Equal(t, "a.txt", ce.Conflicts[0].Path)
	assert.Equal(t, view, e.view(s.ID))
	cur, err := e.m.Get(ctx, s.ID)
	require.NoError(t, err)
	assert.Equal(t, up, cur.BaseCommit)

	// The new base survives a restart.
	e.restart()
	assert.Equal(t, view, e.view(s.ID))
}

// checkpointOf commits the session's view and returns the commit id.
func checkpointOf(t *testing.T, e *env, s session.Session) string {
	cp, err := e.m.Checkpoint(t.Context(), s.ID, "", "")
	require.NoError(t, err)
	return cp.Commit.String()
}

func TestMergeFrom(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	a := e.create(session.CreateOptions{})
	b := e.create(session.CreateOptions{AgentID: "b"})
	e.write(a.ID, "a.txt", "from a\n")
	e.write(b.ID, "README.md", "from b\n")
	e.write(b.ID, "b-only.txt", "b\n")
	_, _, err := e.m.MergeFrom(ctx, a.ID, b.ID, "")
	require.NoError(t, err)
	assert.Equal(t, "from a\n", e.read(a.ID, "a.txt"))
	assert.Equal(t, "from b\n", e.read(a.ID, "README.md"))
	assert.Equal(t, "b\n", e.read(a.ID, "b-only.txt"))
	_, err = e.m.Stat(ctx, b.ID, "a.txt")
	require.NoError(t, err)
	assert.NotEqual(t, "from a\n", e.read(b.ID, "a.txt"), "the source is not changed")

	e.write(b.ID, "a.txt", "b's a.txt\n")
	before := e.view(a.ID)
	_, _, err = e.m.MergeFrom(ctx, a.ID, b.ID, "")
	var ce *merge.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "a.txt", ce.Conflicts[0].Path)
	assert.Equal(t, before, e.view(a.ID))
}
