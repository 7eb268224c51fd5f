package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestCLIReviewIdentity: the CLI issues reviewer tokens and says, for each
// review, which identity it was recorded under: a reviewer token's name,
// a name the admin token gives (counted as a comment), or, on a daemon
// without an admin token, its local user, once.
func TestCLIReviewIdentity(t *testing.T) {
	ctx := t.Context()
	submitted := func(d *daemon) string {
		t.Helper()
		s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
		require.NoError(t, err)
		c := d.C
		if s.Token != "" {
			c = c.WithToken(s.Token)
		}
		_, err = c.WriteFile(ctx, s.ID, "reviewed.txt", []byte("x\n"), client.WriteOptions{})
		require.NoError(t, err)
		cs, err := c.Submit(ctx, s.ID, apitypes.SubmitRequest{})
		require.NoError(t, err)
		_, err = d.C.SetRepoPolicy(ctx, "r", apitypes.RepoPolicy{RequiredApprovals: 2})
		require.NoError(t, err)
		return cs.ID
	}

	t.Run("admin token", func(t *testing.T) {
		d := newDaemon(t, stores[0], "--repo", "r="+testrepo.BuildBare(t, "small"), "--admin-token", "admin-secret")
		cs := submitted(d)
		clientEnv(t, d, "")
		r := runCLI(t, "", "reviewer", "add", "Ann Reviewer", "-q")
		require.Equal(t, exitOK, r.code, r.stderr)
		ann := strings.TrimSpace(r.stdout)
		r = runCLI(t, "", "changeset", "review", cs, "--verdict", "approve", "--author", "bob")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, `as "bob" (named with the admin token): comment; changeset is open`)
		assert.Contains(t, r.stdout, "counted as a comment, not approve")
		r = runCLI(t, "", "--token", ann, "changeset", "review", cs, "--verdict", "approve", "--author", "bob")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, "as Ann Reviewer (reviewer token): approve; changeset is open")
		assert.NotContains(t, r.stdout, "counted as a comment")
		r = runCLI(t, "", "changeset", "show", cs)
		assert.Contains(t, r.stdout, "review by Ann Reviewer (reviewer token)")
		assert.Contains(t, r.stdout, `review by "bob" (named with the admin token)`)
		r = runCLI(t, "", "--token", ann, "changeset", "accept", cs)
		assert.Equal(t, exitError, r.code, "a reviewer token does not accept: %s", r.stdout)
		assert.Contains(t, r.stderr, "forbidden")
	})

	t.Run("no admin token", func(t *testing.T) {
		d := newDaemon(t, stores[0], "--repo", "r="+testrepo.BuildBare(t, "small"), "--local-user", "Lee Local")
		cs := submitted(d)
		clientEnv(t, d, "")
		for _, author := range []string{"alice", "bob"} {
			r := runCLI(t, "", "changeset", "review", cs, "--verdict", "approve", "--author", author)
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.Contains(t, r.stdout, "as Lee Local (local user): approve; changeset is open", "one identity, one approval")
		}
		r := runCLI(t, "", "reviewer", "add", "alice")
		assert.Equal(t, exitError, r.code)
		assert.Contains(t, r.stderr, `its local user "Lee Local"`)
		assert.Contains(t, d.Logs.String(), "no admin token: any process on this machine", "the daemon says so at start")
	})
}

// TestAllowedHostFlag: a name given with --allowed-host (or its variable)
// is one of the daemon's names; without it the same Host is refused.
func TestAllowedHostFlag(t *testing.T) {
	get := func(d *daemon, host string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), "GET", d.URL+"/v1/repos", nil)
		require.NoError(t, err)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	plain := newDaemon(t, stores[0])
	assert.Equal(t, http.StatusForbidden, get(plain, "sessiond.internal"))
	assert.Equal(t, http.StatusOK, get(plain, strings.TrimPrefix(plain.URL, "http://")))
	named := newDaemon(t, stores[0], "--allowed-host", "sessiond.internal", "--allowed-host", "other.internal:8443")
	assert.Equal(t, http.StatusOK, get(named, "sessiond.internal"))
	assert.Equal(t, http.StatusOK, get(named, "other.internal:8443"))
	assert.Equal(t, http.StatusForbidden, get(named, "other.internal"))
	t.Setenv("SESSIOND_ALLOWED_HOSTS", "a.internal,b.internal")
	fromEnv := newDaemon(t, stores[0])
	assert.Equal(t, http.StatusOK, get(fromEnv, "b.internal"))
}
