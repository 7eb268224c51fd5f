package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestCLIConflicts: rebase refuses a conflict; --keep-conflicts moves the
// session and names the conflicted file; conflicts lists it; changeset
// submit is refused; resolve takes the file as it is and submit goes
// through. merge takes --keep-conflicts too.
func TestCLIConflicts(t *testing.T) {
	plainRunOnly(t, "conflicts through the CLI against the daemon's binary")
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	d := newDaemon(t, stores[0], "--repo", "r="+repo)
	s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	clientEnv(t, d, s.ID)
	_, err = d.C.WriteFile(ctx, s.ID, "README.md", []byte("the session's\n"), client.WriteOptions{})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README.md"), []byte("upstream's\n"), 0o644))
	testrepo.Git(t, repo, "checkout", "-q", "main")
	testrepo.Git(t, repo, "commit", "-qam", "upstream")

	r := runCLI(t, "", "rebase")
	assert.NotEqual(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "README.md (content)")
	r = runCLI(t, "", "rebase", "--keep-conflicts")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "1 conflict left with markers")
	assert.Contains(t, r.stdout, "README.md\tcontent, 1 hunk")
	r = runCLI(t, "", "conflicts")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "README.md\tcontent")
	r = runCLI(t, "", "changeset", "submit")
	assert.NotEqual(t, exitOK, r.code)
	assert.Contains(t, r.stderr, "unresolved_conflicts")
	r = runCLI(t, "", "resolve", "README.md")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "0 unresolved conflicts left")
	r = runCLI(t, "", "conflicts")
	assert.Contains(t, r.stdout, "no unresolved conflicts")
	r = runCLI(t, "", "changeset", "submit")
	require.Equal(t, exitOK, r.code, r.stderr)

	b, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	c, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	for id, content := range map[string]string{b.ID: "b's\n", c.ID: "c's\n"} {
		_, err = d.C.WriteFile(ctx, id, "README.md", []byte(content), client.WriteOptions{})
		require.NoError(t, err)
	}
	t.Setenv("SESSIOND_SESSION", b.ID)
	r = runCLI(t, "", "merge", c.ID, "--keep-conflicts")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "README.md\tcontent")
}
