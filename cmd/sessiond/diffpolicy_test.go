package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestDiffHidesWhatThePolicyHides: a fork inherits its source's changes
// but reads through its own policy; its diff must not show the files
// that policy hides, in either form.
func TestDiffHidesWhatThePolicyHides(t *testing.T) {
	plainRunOnly(t, "diffs from the daemon's binary")
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	d := newDaemon(t, stores[0], "--repo", "r="+repo)
	c := d.C
	src, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	for _, p := range []string{"secrets/key", "ok.txt"} {
		_, err := c.WriteFile(ctx, src.ID, p, []byte(p+"\n"), client.WriteOptions{})
		require.NoError(t, err)
	}
	fork, err := c.Fork(ctx, src.ID, apitypes.ForkRequest{Policy: &apitypes.Policy{Deny: []string{"secrets/**"}}})
	require.NoError(t, err)

	full, err := c.DiffJSON(ctx, src.ID, "")
	require.NoError(t, err)
	assert.Equal(t, 2, full.Stats.Files)

	d2, err := c.DiffJSON(ctx, fork.ID, "")
	require.NoError(t, err)
	require.Len(t, d2.Files, 1)
	assert.Equal(t, "ok.txt", d2.Files[0].Path)
	assert.Equal(t, 1, d2.Stats.Files)
	text, err := c.Diff(ctx, fork.ID, "")
	require.NoError(t, err)
	assert.Contains(t, string(text), "ok.txt")
	assert.False(t, strings.Contains(string(text), "secrets"), "unified diff:\n%s", text)
}
