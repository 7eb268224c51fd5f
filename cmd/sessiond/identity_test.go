package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
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
	plainRunOnly(t, "reviews through the CLI against the daemon's binary")
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
	plainRunOnly(t, "the daemon's binary reading its flags")
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

// TestCLIAgentIdentity: an agent given by name alone, by id alone, by
// both or not at all is one identity: session ls and show, changeset ls
// and show, the accepted commit's author and its Sessiond-Agent trailer
// all name it; a fork given no agent keeps its source's.
func TestCLIAgentIdentity(t *testing.T) {
	plainRunOnly(t, "the CLI's identities against the daemon's binary")
	repo := testrepo.BuildBare(t, "small")
	d := newDaemon(t, stores[0], "--repo", "r="+repo)
	clientEnv(t, d, "")
	t.Setenv("USER", "")
	cli := func(args ...string) string {
		t.Helper()
		r := runCLI(t, "", args...)
		require.Equal(t, exitOK, r.code, "%v: %s", args, r.stderr)
		return r.stdout
	}
	agentLine := regexp.MustCompile(`(?m)^agent\s+(.*)$`)
	for i, tc := range []struct {
		flags       []string
		shown, id   string
		authorEmail string
	}{
		{[]string{"--agent-name", "chi"}, "chi", "chi", "chi@sessiond"},
		{[]string{"--agent-id", "bot-7"}, "bot-7", "bot-7", "bot-7@sessiond"},
		{[]string{"--agent-id", "bot-8", "--agent-name", "Chi Bot"}, "Chi Bot (bot-8)", "bot-8", "bot-8@sessiond"},
		{nil, "agent", "agent", "agent@sessiond"},
	} {
		id := strings.TrimSpace(cli(append([]string{"session", "new", "--repo", "r", "-q"}, tc.flags...)...))
		path := fmt.Sprintf("agent-%d.txt", i)
		r := runCLI(t, "x\n", "--session", id, "put", path)
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Regexp(t, regexp.MustCompile(id+`\s+r\s+active\s+read_write\s+`+regexp.QuoteMeta(tc.shown)+`\s+main@`), cli("session", "ls"), "session ls names the agent: %v", tc.flags)
		assert.Equal(t, tc.shown, agentLine.FindStringSubmatch(cli("session", "show", id))[1], "session show: %v", tc.flags)
		var js apitypes.Session
		require.NoError(t, json.Unmarshal([]byte(cli("--json", "session", "show", id)), &js))
		assert.Equal(t, tc.id, js.AgentID, "the API has the identity too, not an empty id")
		cs := strings.TrimSpace(cli("--session", id, "changeset", "submit", "-q"))
		name := tc.id
		if len(tc.flags) == 4 {
			name = "Chi Bot"
		}
		// A changeset carries the agent's id.
		assert.Contains(t, cli("changeset", "show", cs), "agent "+tc.id+", r → main", "changeset show: %v", tc.flags)
		assert.Regexp(t, regexp.MustCompile(cs+`\s+open\s+r\s+main\s+`+regexp.QuoteMeta(tc.id)+`\s`), cli("changeset", "ls"), "changeset ls: %v", tc.flags)
		cli("changeset", "accept", cs)
		assert.Equal(t, name+" <"+tc.authorEmail+">", git(t, repo, "log", "-1", "--format=%an <%ae>", "main"), "the commit's author is the agent")
		assert.Equal(t, tc.id, git(t, repo, "log", "-1", "--format=%(trailers:key=Sessiond-Agent,valueonly)", "main"), "the trailer is there: %v", tc.flags)
	}

	// A fork given no agent is its source's agent's.
	src := strings.TrimSpace(cli("session", "new", "--repo", "r", "-q", "--agent-name", "chi"))
	fork := strings.TrimSpace(cli("fork", src, "-q"))
	assert.Equal(t, "chi", agentLine.FindStringSubmatch(cli("session", "show", fork))[1])
	named := strings.TrimSpace(cli("fork", src, "-q", "--agent-name", "psi"))
	assert.Equal(t, "psi", agentLine.FindStringSubmatch(cli("session", "show", named))[1])
}

// TestLocalUserDefault: a daemon without an admin token and without
// --local-user records reviews under git's user.name, else the OS user,
// and the CLI says which identity it used.
func TestLocalUserDefault(t *testing.T) {
	plainRunOnly(t, "the daemon's binary naming its local user")
	me, err := user.Current()
	require.NoError(t, err)
	for _, tc := range []struct {
		name, gitName, want string
	}{
		{"git's user.name", "Gita Config", "Gita Config"},
		{"the OS user", "", me.Username},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			cfg := filepath.Join(home, "gitconfig")
			content := ""
			if tc.gitName != "" {
				content = "[user]\n\tname = " + tc.gitName + "\n"
			}
			require.NoError(t, os.WriteFile(cfg, []byte(content), 0o644))
			t.Setenv("HOME", home)
			t.Setenv("GIT_CONFIG_GLOBAL", cfg)
			t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			d := newDaemon(t, stores[0], "--repo", "r="+testrepo.BuildBare(t, "small"))
			ctx := t.Context()
			s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", AgentName: "chi"})
			require.NoError(t, err)
			_, err = d.C.WriteFile(ctx, s.ID, "reviewed.txt", []byte("x\n"), client.WriteOptions{})
			require.NoError(t, err)
			cs, err := d.C.Submit(ctx, s.ID, apitypes.SubmitRequest{})
			require.NoError(t, err)
			clientEnv(t, d, "")
			r := runCLI(t, "", "changeset", "review", cs.ID, "--verdict", "approve")
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.Contains(t, r.stdout, "as "+tc.want+" (local user): approve")
			r = runCLI(t, "", "--json", "changeset", "show", cs.ID)
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.Contains(t, r.stdout, `"author": "`+tc.want+`"`, "the review's author is the identity, never empty")
		})
	}
}

// TestCLIPlurals: one of a thing is one thing ("1 file", "1 byte",
// "1 approval"), any other count takes the plural.
func TestCLIPlurals(t *testing.T) {
	plainRunOnly(t, "the CLI's output against the daemon's binary")
	assert.Equal(t, "0 files", count(0, "file"))
	assert.Equal(t, "1 file", count(1, "file"))
	assert.Equal(t, "2 files", count(int64(2), "file"))

	d := newDaemon(t, stores[0], "--repo", "r="+testrepo.BuildBare(t, "small"))
	clientEnv(t, d, "")
	cli := func(stdin string, args ...string) cliResult {
		t.Helper()
		r := runCLI(t, stdin, args...)
		require.Equal(t, exitOK, r.code, "%v: %s", args, r.stderr)
		return r
	}
	id := strings.TrimSpace(cli("", "session", "new", "--repo", "r", "-q", "--agent-name", "chi").stdout)
	assert.Contains(t, cli("x", "--session", id, "put", "one.txt").stdout, "wrote one.txt (1 byte, ")
	assert.Contains(t, cli("", "--session", id, "checkout", filepath.Join(t.TempDir(), "view")).stdout, "files into")
	cs := strings.TrimSpace(cli("", "--session", id, "changeset", "submit", "-q").stdout)
	assert.Contains(t, cli("", "changeset", "show", cs).stdout, "  1 file, +1 -0\n")
	assert.Contains(t, cli("", "repo", "policy", "set", "r", "--required-approvals", "1").stdout, "1 approval\n")
	r := runCLI(t, "", "changeset", "accept", cs)
	assert.Equal(t, exitConflict, r.code)
	assert.Contains(t, r.stderr, "needs 1 approval")
	assert.NotContains(t, r.stderr, "1 approvals")
}

// TestCLIApprovedAndAcceptedOnce: with required_approvals 0 (the
// default), one approval makes a changeset approved; accepting it again
// says "already accepted" once, in text and in JSON.
func TestCLIApprovedAndAcceptedOnce(t *testing.T) {
	plainRunOnly(t, "approvals through the CLI against the daemon's binary")
	d := newDaemon(t, stores[0], "--repo", "r="+testrepo.BuildBare(t, "small"), "--local-user", "Lee Local")
	clientEnv(t, d, "")
	cli := func(stdin string, args ...string) cliResult {
		t.Helper()
		r := runCLI(t, stdin, args...)
		require.Equal(t, exitOK, r.code, "%v: %s", args, r.stderr)
		return r
	}
	assert.Contains(t, cli("", "repo", "policy", "show", "r").stdout, "required approvals  none")
	id := strings.TrimSpace(cli("", "session", "new", "--repo", "r", "-q", "--agent-name", "chi").stdout)
	cli("x\n", "--session", id, "put", "x.txt")
	cs := strings.TrimSpace(cli("", "--session", id, "changeset", "submit", "-q").stdout)
	assert.Contains(t, cli("", "changeset", "review", cs, "--verdict", "approve").stdout, "as Lee Local (local user): approve; changeset is approved")
	assert.Contains(t, cli("", "changeset", "show", cs).stdout, "(revision 1) approved\n")
	cli("", "changeset", "accept", cs)

	r := runCLI(t, "", "changeset", "accept", cs)
	assert.Equal(t, exitConflict, r.code)
	assert.Equal(t, 1, strings.Count(r.stderr, "already accepted"), r.stderr)
	assert.Empty(t, r.stdout)
	r = runCLI(t, "", "--json", "changeset", "accept", cs)
	assert.Equal(t, exitConflict, r.code)
	assert.Equal(t, 1, strings.Count(r.stdout+r.stderr, "already accepted"), r.stdout+r.stderr)
}
