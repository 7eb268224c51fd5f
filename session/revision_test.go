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
	for _, base := range []string{"main~9", "main^2", "main^{tree}", "v1^{blob}", "main^{bogus}", "main@{0}"} {
		_, err := e.m.Create(ctx, session.CreateOptions{Repo: "bare", Base: base, AgentID: "a"})
		assert.ErrorIs(t, err, record.ErrInvalid, base)
	}

	s := e.create(session.CreateOptions{Repo: "bare", Base: "main~2"})
	e.write(s.ID, "new.txt", "new\n")
	got, _, err := e.m.Rebase(ctx, s.ID, "main^", "")
	require.NoError(t, err)
	assert.Equal(t, bgit("rev-parse", "main^"), got.BaseCommit.String())
	_, _, err = e.m.Rebase(ctx, s.ID, "main~7", "")
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
