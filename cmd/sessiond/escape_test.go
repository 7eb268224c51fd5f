package main

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestEscapesThroughTheDaemon tries, from commands run through the API,
// the command line and MCP's run tool of a real daemon with an admin
// token, to reach what the daemon owns: its token key, its database, its
// admin token (in its command line), another repository, the base
// checkout behind a read-limited view, and its own port. Each script
// prints ESCAPED where an attempt worked (the workdir package's escape
// suite has the rest of the list).
func TestEscapesThroughTheDaemon(t *testing.T) {
	plainRunOnly(t, "commands in namespaces in the daemon's binary")
	requireIsolationHere(t)
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	other := testrepo.Build(t, "small")
	const admin = "adm-SECRET-7f3a"
	// The test's temporary directories hold the data directory and the
	// repositories; shown to commands, what the daemon hides below them
	// must still be absent wherever the test runs (below /tmp, which
	// commands would not see at all, too).
	root := filepath.Dir(repo)
	d := newDaemon(t, stores[0], "--repo", "r="+repo, "--repo", "other="+other, "--admin-token", admin, "--exec-show", root)
	u, err := url.Parse(d.URL)
	require.NoError(t, err)
	data, err := filepath.Abs(d.DataDir)
	require.NoError(t, err)
	key, err := os.ReadFile(filepath.Join(data, "token.key"))
	require.NoError(t, err)

	script := strings.Join([]string{
		`cat ` + filepath.Join(data, "token.key") + ` && echo ESCAPED`,
		`cat ` + filepath.Join(data, "sessiond.db") + ` >/dev/null && echo ESCAPED`,
		`ls ` + data + ` && echo ESCAPED`,
		`ls ` + other + ` && echo ESCAPED`,
		`ls ` + repo + ` && echo ESCAPED`,
		`ls ` + root + ` >/dev/null || echo ESCAPED shown root not visible`,
		// The pattern comes on standard input from a builtin, so that no
		// process's command line (grep's own) holds the token.
		`printf '%s%s' ` + admin[:6] + ` ` + admin[6:] + ` | grep -l -a -F -f - /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null && echo ESCAPED`,
		`bash -c 'exec 3<>/dev/tcp/127.0.0.1/` + u.Port() + `' && echo ESCAPED`,
		`echo TRIED`,
	}, "\n")
	check := func(t *testing.T, out string) {
		t.Helper()
		assert.Contains(t, out, "TRIED")
		assert.NotContains(t, out, "ESCAPED")
		assert.NotContains(t, out, admin)
		assert.NotContains(t, out, string(key))
	}

	s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	t.Run("api", func(t *testing.T) {
		res, err := d.C.Exec(ctx, s.ID, apitypes.ExecRequest{Command: script}, nil)
		require.NoError(t, err)
		assert.True(t, res.Isolated)
		check(t, res.Stdout+res.Stderr)
	})
	t.Run("cli", func(t *testing.T) {
		t.Setenv("SESSIOND_SERVER", d.URL)
		t.Setenv("SESSIOND_TOKEN", s.Token)
		t.Setenv("SESSIOND_SESSION", s.ID)
		r := runCLI(t, "", "exec", "--", "sh", "-c", script)
		check(t, r.stdout+r.stderr)
	})
	t.Run("mcp run", func(t *testing.T) {
		tr := &mcp.StreamableClientTransport{Endpoint: d.URL + "/mcp/sessions/" + s.ID, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{s.Token}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "attacker", Version: "1"}, nil).Connect(ctx, tr, nil)
		require.NoError(t, err)
		t.Cleanup(func() { cs.Close() })
		// The text repeats the command; its output is in the structured
		// content.
		_, _, out := callTool(t, cs, "run", map[string]any{"command": script})
		stdout, _ := out["stdout_tail"].(string)
		stderr, _ := out["stderr_tail"].(string)
		check(t, stdout+stderr)
	})

	// What the daemon keeps is its user's alone: the data directory and
	// every scratch 0700, the token and secrets keys and the database 0600.
	t.Run("data directory modes", func(t *testing.T) {
		want := map[string]os.FileMode{data: 0o700, filepath.Join(data, "token.key"): 0o600, filepath.Join(data, "secrets.key"): 0o600,
			filepath.Join(data, "workdir", "sessions", s.ID): 0o700}
		for _, db := range []string{"sessiond.db", "sessiond.db-wal", "sessiond.db-shm"} {
			if _, err := os.Stat(filepath.Join(data, db)); err == nil {
				want[filepath.Join(data, db)] = 0o600
			}
		}
		for p, mode := range want {
			st, err := os.Stat(p)
			require.NoError(t, err)
			assert.Equal(t, mode, st.Mode().Perm(), p)
		}
	})

	// A read-limited session sees neither the file its policy hides in
	// its view nor the shared base checkout behind it.
	t.Run("read-limited view", func(t *testing.T) {
		ls, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main",
			Policy: &apitypes.Policy{Read: []string{"**"}, Deny: []string{"README.md"}}})
		require.NoError(t, err)
		readme := git(t, repo, "show", "main:README.md")
		res, err := d.C.Exec(ctx, ls.ID, apitypes.ExecRequest{Command: `cat README.md && echo ESCAPED
for f in $(find / -xdev -name README.md 2>/dev/null); do cat "$f"; done
ls ` + filepath.Join(data, "workdir", "bases") + ` && echo ESCAPED
echo TRIED`}, nil)
		require.NoError(t, err)
		check(t, res.Stdout+res.Stderr)
		assert.NotContains(t, res.Stdout, strings.TrimSpace(readme))
	})
}

// requireIsolationHere skips where the kernel gives no namespaces, unless
// the run requires them (CI), where it fails.
func requireIsolationHere(t *testing.T) {
	t.Helper()
	if os.Getenv("SESSIOND_TEST_REQUIRE_ISOLATION") != "1" {
		if _, err := os.Stat("/proc/self/ns/user"); err != nil {
			t.Skip("no user namespaces here")
		}
	}
}
