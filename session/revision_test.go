package session_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/session"
)

// TestRevisionsEverywhere: base, onto and against take git's revision
// syntax, resolved as `git rev-parse` does (issue 13, wrong results 1);
// expected_head is changeset's TestExpectedHeadRevision.
func TestRevisionsEverywhere(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	bare := testrepo.BuildBare(t, "small")
	_, err := e.en.Repos.Register(ctx, "bare", bare)
	require.NoError(t, err)
	bgit := func(args ...string) string { return testrepo.Git(t, bare, args...) }
	for _, base := range []string{"main~1", "main^", "HEAD~2", "v1^{commit}", "v1~1", "refs/heads/main^0", "feature^^{commit}"} {
		s, err := e.m.Create(ctx, session.CreateOptions{Repo: "bare", Base: base, AgentID: "a"})
		if assert.NoError(t, err, base) {
			assert.Equal(t, bgit("rev-parse", base+"^{commit}"), s.BaseCommit.String(), base)
		}
	}
	// A revision that names nothing is not found, as one out of the
	// caller's reach is (TestRevisionsKeepTheirScope); one that names a
	// tree or blob is invalid.
	for _, base := range []string{"main~9", "main^2", "main^{bogus}", "main@{0}"} {
		_, err := e.m.Create(ctx, session.CreateOptions{Repo: "bare", Base: base, AgentID: "a"})
		assert.ErrorIs(t, err, record.ErrNotFound, base)
	}
	for _, base := range []string{"main^{tree}", "v1^{blob}"} {
		_, err := e.m.Create(ctx, session.CreateOptions{Repo: "bare", Base: base, AgentID: "a"})
		assert.ErrorIs(t, err, record.ErrInvalid, base)
	}

	s := e.create(session.CreateOptions{Repo: "bare", Base: "main~2"})
	e.write(s.ID, "new.txt", "new\n")
	got, _, err := e.m.Rebase(ctx, s.ID, "main^", "")
	require.NoError(t, err)
	assert.Equal(t, bgit("rev-parse", "main^"), got.BaseCommit.String())
	_, _, err = e.m.Rebase(ctx, s.ID, "main~7", "")
	assert.ErrorIs(t, err, record.ErrNotFound)
	_, _, err = e.m.Rebase(ctx, s.ID, "main^{tree}", "")
	assert.ErrorIs(t, err, record.ErrInvalid)

	tree, err := e.m.AgainstTree(ctx, s.ID, "main~1^{tree}")
	require.NoError(t, err)
	assert.Equal(t, bgit("rev-parse", "main~1^{tree}"), tree.String())
	tree, err = e.m.AgainstTree(ctx, s.ID, "v0")
	require.NoError(t, err)
	assert.Equal(t, bgit("rev-parse", "v0^{tree}"), tree.String())
	_, err = e.m.AgainstTree(ctx, s.ID, "nope~1")
	assert.ErrorIs(t, err, record.ErrNotFound)
}

// TestRevisionsKeepTheirScope: with a session token's reach in the
// context (record.Reach, which the API sets), every revision the engine
// resolves for the caller (a diff's against, a rebase's onto, a new
// session's base, an accept's expected head) names only the session's
// own refs, the branches and tags and what they reach: another session's
// refs, commits and trees, in full or abbreviated, are not found, the
// answer for what does not exist, and change nothing. Without a reach
// (the admin, the engine itself) they resolve.
func TestRevisionsKeepTheirScope(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	a := e.create(session.CreateOptions{})
	b := e.create(session.CreateOptions{})
	e.write(b.ID, "secret.txt", "b's unaccepted secret\n")
	bcp, err := e.m.Checkpoint(ctx, b.ID, "", "")
	require.NoError(t, err)
	e.write(b.ID, "secret.txt", "b's unsaved secret\n")
	bLive, _, err := e.m.Tree(ctx, b.ID)
	require.NoError(t, err)
	e.write(a.ID, "mine.txt", "a's\n")
	acp, err := e.m.Checkpoint(ctx, a.ID, "", "")
	require.NoError(t, err)
	aLive, _, err := e.m.Tree(ctx, a.ID)
	require.NoError(t, err)

	asA := record.WithReach(ctx, record.Reach{Session: a.ID})
	bRefs := "refs/sessions/" + b.ID.String()
	foreign := []string{bRefs + "/head", bRefs + "/live", bRefs + "/base", bRefs + "/checkpoints/1", "sessions/" + b.ID.String() + "/head",
		bcp.Commit.String(), bcp.Commit.String()[:7], bcp.Commit.String()[:12] + "~0", bcp.Tree.String(), bcp.Tree.String()[:9],
		bLive.String(), bLive.String()[:10]}
	aRefs := "refs/sessions/" + a.ID.String()
	own := []string{aRefs + "/head", aRefs + "/live", "sessions/" + a.ID.String() + "/checkpoints/1", acp.Commit.String(), acp.Commit.String()[:8],
		aLive.String(), aLive.String()[:10], "main", "main~1", e.git("rev-parse", "main~1")[:9], "v1", "HEAD"}
	before := e.state(a.ID)
	for _, rev := range foreign {
		_, err := e.m.AgainstTree(asA, a.ID, rev)
		assert.ErrorIs(t, err, record.ErrNotFound, "against %s", rev)
		_, err = e.m.Diff(asA, a.ID, rev)
		assert.ErrorIs(t, err, record.ErrNotFound, "diff against %s", rev)
		_, _, err = e.m.Rebase(asA, a.ID, rev, "")
		assert.ErrorIs(t, err, record.ErrNotFound, "rebase onto %s", rev)
		_, err = e.m.Create(asA, session.CreateOptions{Repo: "r", Base: rev})
		assert.ErrorIs(t, err, record.ErrNotFound, "base %s", rev)
		_, err = e.m.AgainstTree(ctx, a.ID, rev)
		assert.NoError(t, err, "the admin's diff against %s", rev)
	}
	assert.Equal(t, before, e.state(a.ID), "nothing changed")
	_, _, err = e.m.Read(asA, a.ID, "secret.txt", 0, -1)
	assert.ErrorIs(t, err, record.ErrNotFound, "a never saw b's file")
	for _, rev := range own {
		_, err := e.m.AgainstTree(asA, a.ID, rev)
		assert.NoError(t, err, "against %s", rev)
	}
	// A reach without a session (a token that is neither the admin nor a
	// session's) names the branches and tags only.
	_, err = e.m.Create(record.WithReach(ctx, record.Reach{}), session.CreateOptions{Repo: "r", Base: acp.Commit.String()})
	assert.ErrorIs(t, err, record.ErrNotFound)
	_, err = e.m.Create(record.WithReach(ctx, record.Reach{}), session.CreateOptions{Repo: "r", Base: "main~1"})
	assert.NoError(t, err)

	// With b's head a commit a reaches, rebasing onto it with a's reach is
	// refused; the admin's rebase brings b's file in.
	_, _, err = e.m.Rebase(asA, a.ID, bcp.Commit.String()[:10], "")
	require.ErrorIs(t, err, record.ErrNotFound)
	_, _, err = e.m.Rebase(ctx, a.ID, bcp.Commit.String()[:10], "")
	require.NoError(t, err)
	assert.Equal(t, "b's unaccepted secret\n", e.read(a.ID, "secret.txt"))
	// The rebase pinned b's checkpoint as a's base: a reaches it now.
	_, err = e.m.AgainstTree(asA, a.ID, bcp.Commit.String()[:10])
	assert.NoError(t, err)
}
