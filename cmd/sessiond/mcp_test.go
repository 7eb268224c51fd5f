package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/internal/testdaemon"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/mcpserver"
)

// The MCP command: a real `sessiond mcp` subprocess driven by the SDK's
// client over standard input and output, against a real daemon and with
// the engine in-process.

// calcRepo is a small Go module whose test fails until Add is fixed.
func calcRepo(t *testing.T) string {
	t.Helper()
	repo := testrepo.Init(t)
	files := map[string]string{
		"go.mod":       "module example.com/calc\n\ngo 1.22\n",
		"calc.go":      "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n\n// Sub returns a minus b.\nfunc Sub(a, b int) int {\n\treturn a - b\n}\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n",
		// The project's test command for the agent: it checks what
		// calc_test.go checks without a Go toolchain, whose empty build
		// cache in a fresh session costs a minute on a small machine.
		"test.sh": "#!/bin/sh\ngrep -q 'return a + b' calc.go && echo 'ok  example.com/calc' && exit 0\n" +
			"echo \"--- FAIL: TestAdd: Add(2, 3) = $(sed -n 's/.*return a \\(.\\) b/2 \\1 3/p' calc.go | head -1 | awk '{ if ($2 == \"*\") print $1*$3; else if ($2 == \"-\") print $1-$3; else print \"?\" }'), want 5\" >&2\nexit 1\n",
	}
	for p, c := range files {
		require.NoError(t, os.WriteFile(filepath.Join(repo, p), []byte(c), 0o644))
	}
	testrepo.Git(t, repo, "add", "-A")
	testrepo.Git(t, repo, "commit", "-q", "-m", "initial")
	return repo
}

// mcpClient starts `sessiond mcp args…` and connects the SDK's client to
// it; stderr collects the process's logs.
func mcpClient(t *testing.T, stderr io.Writer, args ...string) *mcp.ClientSession {
	t.Helper()
	return mcpClientIn(t, "", stderr, args...)
}

// mcpClientIn is mcpClient with the process started in dir.
func mcpClientIn(t *testing.T, dir string, stderr io.Writer, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(testdaemon.Binary, append([]string{"mcp"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SESSIOND_TOKEN=", "SESSIOND_SESSION=", "SESSIOND_SERVER=")
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-agent", Version: "1"}, nil).
		Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "logs: %s", stderr)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, name)
	text := res.Content[0].(*mcp.TextContent).Text
	var data map[string]any
	raw, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(raw, &data)
	return text, res.IsError, data
}

func toolOK(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, map[string]any) {
	t.Helper()
	text, isErr, data := callTool(t, cs, name, args)
	require.False(t, isErr, "%s: %s", name, text)
	return text, data
}

// agentLoop is the scripted agent: read, an ambiguous edit refused, a
// precise edit, the tests run (failing, then passing after a fix where
// run is available), the diff, submit. It returns the changeset id.
func agentLoop(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	assert.Len(t, res.Tools, len(mcpserver.ToolNames()))

	text, _ := toolOK(t, cs, "read_file", map[string]any{"path": "calc.go"})
	require.Contains(t, text, "     5\t\treturn a - b\n")

	text, isErr, data := callTool(t, cs, "edit_file", map[string]any{"path": "calc.go",
		"edits": []any{map[string]any{"old_text": "return a - b", "new_text": "return a + b"}}})
	require.True(t, isErr, "an ambiguous edit is refused")
	assert.Equal(t, "ambiguous_match", data["error"].(map[string]any)["code"])
	assert.Contains(t, text, "match 1 at line 5:")
	assert.Contains(t, text, "match 2 at line 10:")

	// A precise edit that is still wrong, so the tests fail first.
	toolOK(t, cs, "edit_file", map[string]any{"path": "calc.go", "edits": []any{map[string]any{
		"old_text": "func Add(a, b int) int {\n\treturn a - b", "new_text": "func Add(a, b int) int {\n\treturn a * b"}}})
	text, data = toolOK(t, cs, "run", map[string]any{"argv": []string{"sh", "test.sh"}})
	assert.Contains(t, text, "exit code 1")
	assert.Contains(t, text, "Add(2, 3) = 6, want 5")
	assert.EqualValues(t, 1, data["exit_code"])
	text, _ = toolOK(t, cs, "read_file", map[string]any{"path": "calc.go", "offset": 4, "limit": 3})
	require.Contains(t, text, "     5\t\treturn a * b\n")
	toolOK(t, cs, "edit_file", map[string]any{"path": "calc.go", "edits": []any{map[string]any{
		"old_text": "\treturn a * b", "new_text": "\treturn a + b"}}})
	text, _ = toolOK(t, cs, "run", map[string]any{"command": "sh test.sh"})
	assert.Contains(t, text, "exit code 0")
	assert.Contains(t, text, "ok  example.com/calc")
	text, _ = toolOK(t, cs, "diff", nil)
	assert.Contains(t, text, "-\treturn a - b\n+\treturn a + b\n")
	text, data = toolOK(t, cs, "submit", map[string]any{"intent": "fix Add"})
	assert.Contains(t, text, "Submitted: changeset ")
	return data["id"].(string)
}

func TestMCPStdioAgainstDaemon(t *testing.T) {
	plainRunOnly(t, "the mcp command's binary against the daemon's binary")
	d := newDaemon(t, stores[0], "--admin-token", "adm")
	repo := filepath.Join(t.TempDir(), "calc.git") // bare: accept may move main
	testrepo.Git(t, "", "clone", "-q", "--bare", "--", calcRepo(t), repo)
	_, err := d.C.CreateRepo(t.Context(), apitypes.CreateRepoRequest{Name: "calc", Path: repo})
	require.NoError(t, err)

	var logs lockedBuffer
	cs := mcpClient(t, &logs, "--server", d.URL, "--token", "adm", "--repo", "calc", "--intent", "fix Add", "--agent", "scripted")
	id := agentLoop(t, cs)
	assert.Contains(t, logs.String(), "sessiond mcp: started session ")

	// The daemon has the session, started by the agent, and its changeset.
	cset, err := d.C.GetChangeset(t.Context(), id)
	require.NoError(t, err)
	s, err := d.C.GetSession(t.Context(), cset.Session)
	require.NoError(t, err)
	assert.Equal(t, "scripted", s.AgentName)
	assert.Equal(t, "fix Add", s.Intent)

	// Accepted, the change is one commit on main that git sees.
	before := git(t, repo, "rev-parse", "main")
	acc, err := d.C.Accept(t.Context(), id, apitypes.AcceptRequest{})
	require.NoError(t, err)
	assert.Equal(t, acc.Commit, git(t, repo, "rev-parse", "main"))
	assert.Contains(t, git(t, repo, "show", "main:calc.go"), "func Add(a, b int) int {\n\treturn a + b\n}")
	assert.Contains(t, git(t, repo, "show", "main:calc.go"), "func Sub(a, b int) int {\n\treturn a - b\n}")
	assert.Equal(t, "calc.go", git(t, repo, "diff", "--name-only", "main~1", "main"))
	git(t, repo, "fsck", "--strict")

	// Bound by --session with that session's token.
	s2, err := d.C.CreateSession(t.Context(), apitypes.CreateSessionRequest{Repo: "calc"})
	require.NoError(t, err)
	cs2 := mcpClient(t, &logs, "--server", d.URL, "--token", s2.Token, "--session", s2.ID)
	text, _ := toolOK(t, cs2, "status", nil)
	assert.Contains(t, text, "Session "+s2.ID)

	// --base starts the session on another revision: the commit before
	// the accept, where Add is still wrong.
	cs3 := mcpClient(t, &logs, "--server", d.URL, "--token", "adm", "--repo", "calc", "--base", before)
	text, _ = toolOK(t, cs3, "status", nil)
	assert.Contains(t, text, "Base: "+before[:12]+".\n")
	text, _ = toolOK(t, cs3, "read_file", map[string]any{"path": "calc.go", "offset": 5, "limit": 1})
	assert.Contains(t, text, "     5\t\treturn a - b\n")

	// The daemon serves the same tools over streamable HTTP: the
	// session's own token on its route, another session's refused.
	connect := func(token, path string) (*mcp.ClientSession, error) {
		tr := &mcp.StreamableClientTransport{Endpoint: d.URL + path, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{token}}}
		return mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "1"}, nil).Connect(t.Context(), tr, nil)
	}
	hs, err := connect(s2.Token, "/mcp/sessions/"+s2.ID)
	require.NoError(t, err)
	t.Cleanup(func() { hs.Close() })
	res, err := hs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	assert.Len(t, res.Tools, len(mcpserver.ToolNames()))
	toolOK(t, hs, "write_file", map[string]any{"path": "over-http.txt", "content": "hi\n"})
	got, _, err := d.C.ReadFile(t.Context(), s2.ID, "over-http.txt")
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(got))
	s4, err := d.C.CreateSession(t.Context(), apitypes.CreateSessionRequest{Repo: "calc"})
	require.NoError(t, err)
	_, err = connect(s4.Token, "/mcp/sessions/"+s2.ID)
	assert.Error(t, err, "another session's token is refused")
	_, err = connect("", "/mcp/sessions/"+s2.ID)
	assert.Error(t, err, "no token is refused")
	as, err := connect("adm", "/mcp")
	require.NoError(t, err)
	t.Cleanup(func() { as.Close() })
	text, _ = toolOK(t, as, "read_file", map[string]any{"session": s2.ID, "path": "over-http.txt"})
	assert.Contains(t, text, "over-http.txt: 1 lines")
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestMCPStdioInProcess(t *testing.T) {
	plainRunOnly(t, "the mcp command's binary with its engine inside")
	repo := calcRepo(t)
	var logs lockedBuffer
	// Nothing listens on the port: the engine runs in the process, on
	// the repository of the directory it starts in (`--repo .`).
	noDaemon := []string{"--server", "http://127.0.0.1:9", "--probe", "200ms"}
	cs := mcpClientIn(t, repo, &logs, append(noDaemon, "--repo", ".")...)
	id := agentLoop(t, cs)
	real, err := filepath.EvalSymlinks(repo)
	require.NoError(t, err)
	assert.Contains(t, logs.String(), "engine in this process, data in "+filepath.Join(real, ".git", "sessiond"))

	// A second process on the same data directory is refused, naming the
	// holder.
	cmd := exec.Command(testdaemon.Binary, append([]string{"mcp", "--repo", repo}, noDaemon...)...)
	cmd.Env = append(os.Environ(), "SESSIOND_TOKEN=", "SESSIOND_SESSION=", "SESSIOND_SERVER=")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.Error(t, cmd.Run())
	assert.Regexp(t, `data directory .*sessiond is in use by process \d+`, stderr.String())
	assert.Empty(t, stdout.String(), "nothing but protocol on stdout")

	// The changeset's commit is a real git commit with the fix.
	cs.Close()
	head := waitHead(t, repo, id)
	assert.Contains(t, git(t, repo, "show", head+":calc.go"), "\treturn a + b\n}\n\n// Sub")
	git(t, repo, "fsck", "--strict")
}

// waitHead is the commit a submitted session's head ref points at, read
// with the git CLI once the in-process engine is gone.
func waitHead(t *testing.T, repo, _ string) string {
	t.Helper()
	refs := git(t, repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/sessions/")
	for _, line := range strings.Split(refs, "\n") {
		if name, oid, ok := strings.Cut(line, " "); ok && strings.HasSuffix(name, "/head") {
			return oid
		}
	}
	t.Fatalf("no session head among the refs:\n%s", refs)
	return ""
}

// TestMCPStdoutIsProtocolOnly speaks raw JSON-RPC to `sessiond mcp` and
// checks every line it prints is a JSON-RPC message.
func TestMCPStdoutIsProtocolOnly(t *testing.T) {
	plainRunOnly(t, "the mcp command's binary")
	repo := calcRepo(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testdaemon.Binary, "mcp", "--repo", repo, "--server", "http://127.0.0.1:9", "--probe", "200ms", "--log-level", "debug")
	cmd.Env = append(os.Environ(), "SESSIOND_TOKEN=", "SESSIOND_SESSION=", "SESSIOND_SERVER=")
	var logs lockedBuffer
	cmd.Stderr = &logs
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"go.mod"}}}`)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var lines []map[string]any
	for len(lines) < 2 && sc.Scan() {
		var msg map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &msg), "a line that is not JSON on stdout: %q", sc.Text())
		assert.Equal(t, "2.0", msg["jsonrpc"])
		lines = append(lines, msg)
	}
	stdin.Close()
	rest, _ := io.ReadAll(stdout)
	require.NoError(t, cmd.Wait(), "logs: %s", logs.String())
	require.Len(t, lines, 2)
	assert.Equal(t, "2024-11-05", lines[0]["result"].(map[string]any)["protocolVersion"])
	assert.Contains(t, fmt.Sprint(lines[1]["result"]), "go.mod: 3 lines")
	assert.Empty(t, strings.TrimSpace(string(rest)))
	assert.NotEmpty(t, logs.String(), "the logs went to stderr")
}

func TestMCPUsage(t *testing.T) {
	var out, errb strings.Builder
	code := run([]string{"mcp"}, strings.NewReader(""), &out, &errb)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errb.String(), "give --session ID")
	code = run([]string{"mcp", "--repo", "nowhere-such", "--server", "http://127.0.0.1:9", "--probe", "100ms"}, strings.NewReader(""), &out, &errb)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errb.String(), "no daemon answers at http://127.0.0.1:9")
	assert.Empty(t, out.String())
}
