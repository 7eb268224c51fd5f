package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/api"
	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/internal/graphsession"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/mcpserver"
	"github.com/sessiond/sessiond/session"
	"github.com/sessiond/sessiond/workdir"
)

const adminToken = "admin-secret"

// env is a real engine on the embedded store, its API handler with auth
// on, and a repository built with the git CLI.
type env struct {
	repoDir string
	m       *session.Manager
	g       *graph.Graph
	api     *api.Server
	admin   *client.Client
}

// The repository: a small Go module whose test fails until Add is fixed,
// and files for the edge cases of the file tools.
var repoFiles = map[string]string{
	"go.mod":           "module example.com/calc\n\ngo 1.22\n",
	"calc.go":          "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n\n// Sub returns a minus b.\nfunc Sub(a, b int) int {\n\treturn a - b\n}\n",
	"calc_test.go":     "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n",
	"docs/crlf.txt":    "one\r\ntwo\r\nthree\r\n",
	"docs/nofinal.txt": "alpha\nbeta",
	"docs/long.txt":    "short\n" + strings.Repeat("x", 2500) + "\nend\n",
	"docs/deep/a/b.md": "# deep\n",
	"bin/blob.dat":     "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00",
	"secrets/key.txt":  "hunter2\n",
	// The project's tests, as a script (a Go toolchain with an empty build
	// cache takes a minute per run on a small machine).
	"test.sh": "#!/bin/sh\nif grep -q 'return a + b' calc.go; then echo 'ok  calc'; else echo '--- FAIL: TestAdd: Add(2, 3) = -1, want 5' >&2; exit 1; fi\n",
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	repo := testrepo.Init(t)
	for p, c := range repoFiles {
		full := filepath.Join(repo, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
	testrepo.Git(t, repo, "add", "-A")
	testrepo.Git(t, repo, "commit", "-q", "-m", "initial")
	data := t.TempDir()
	st, err := db.OpenSQLiteDir(ctx, data)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	evs := events.New(st, nil)
	g := graph.New(graph.Config{Events: evs})
	t.Cleanup(g.Close)
	var en *testengine.Engine
	wd, err := workdir.New(workdir.Config{Dir: filepath.Join(data, "workdir"),
		Hide: func() []string { return append([]string{data}, en.Repos.Hidden(context.Background())...) }})
	require.NoError(t, err)
	t.Cleanup(func() { wd.Close() })
	en = testengine.New(st, data, session.Config{Events: evs, Workdirs: wd, Observers: []session.Observer{graphsession.Observer(g)}}).WithSummaries(g)
	m := en.Sessions
	t.Cleanup(func() { en.Close() })
	_, err = en.Repos.Register(ctx, "calc", repo)
	require.NoError(t, err)
	e := &env{repoDir: repo, m: m, g: g}
	e.api = api.New(api.Config{Manager: m, Repos: en.Repos, Events: en.Events, Exec: en.Exec, Changesets: en.Changesets, AdminToken: adminToken, TokenSecret: []byte("0123456789abcdef0123456789abcdef"),
		MCP: mcpserver.NewHTTPHandler(func(token string) mcpserver.Backend { return client.NewInProcess(e.api, token) }, mcpserver.Options{})})
	e.admin = client.NewInProcess(e.api, adminToken)
	return e
}

// newSession starts a session on main and returns it with its token.
func (e *env) newSession(t testing.TB, req apitypes.CreateSessionRequest) apitypes.Session {
	t.Helper()
	if req.Repo == "" {
		req.Repo = "calc"
	}
	s, err := e.admin.CreateSession(context.Background(), req)
	require.NoError(t, err)
	require.NotEmpty(t, s.Token)
	return s
}

// connect runs a server bound to s over in-memory transports and returns
// the SDK client's session.
func (e *env) connect(t testing.TB, s apitypes.Session, opts mcpserver.Options) *mcp.ClientSession {
	t.Helper()
	opts.Session = s.ID
	return connectServer(t, mcpserver.New(client.NewInProcess(e.api, s.Token), opts), nil)
}

func connectServer(t testing.TB, ms *mcp.Server, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := ms.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, copts).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and returns its text, whether it is an error, and its
// structured content decoded as a map.
func call(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) (string, bool, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "tool %s: a protocol error; tool failures must be tool errors", name)
	require.Len(t, res.Content, 1)
	text := res.Content[0].(*mcp.TextContent).Text
	var data map[string]any
	if res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &data))
		// What a result carries, an error's too, is what its tool
		// declares, as a client that checks the outputSchema verifies.
		var v any
		require.NoError(t, json.Unmarshal(raw, &v))
		require.NoError(t, outputSchema(t, cs, name).Validate(v), "tool %s: structured content %s", name, raw)
	}
	return text, res.IsError, data
}

// outputSchemas caches each client session's tools' resolved output
// schemas.
var outputSchemas sync.Map // *mcp.ClientSession → map[string]*jsonschema.Resolved

// outputSchema is tool name's outputSchema as the client lists it.
func outputSchema(t testing.TB, cs *mcp.ClientSession, name string) *jsonschema.Resolved {
	t.Helper()
	if m, ok := outputSchemas.Load(cs); ok {
		if r := m.(map[string]*jsonschema.Resolved)[name]; r != nil {
			return r
		}
	}
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	m := map[string]*jsonschema.Resolved{}
	for _, tool := range res.Tools {
		require.NotNil(t, tool.OutputSchema, "tool %s declares no outputSchema", tool.Name)
		raw, err := json.Marshal(tool.OutputSchema)
		require.NoError(t, err)
		var s jsonschema.Schema
		require.NoError(t, json.Unmarshal(raw, &s), tool.Name)
		r, err := s.Resolve(nil)
		require.NoError(t, err, tool.Name)
		m[tool.Name] = r
	}
	outputSchemas.Store(cs, m)
	require.Contains(t, m, name)
	return m[name]
}

// ok calls a tool that must succeed.
func ok(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) (string, map[string]any) {
	t.Helper()
	text, isErr, data := call(t, cs, name, args)
	require.False(t, isErr, "tool %s failed: %s", name, text)
	return text, data
}

// fails calls a tool that must fail and returns the error's code.
func fails(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) (string, string, map[string]any) {
	t.Helper()
	text, isErr, data := call(t, cs, name, args)
	require.True(t, isErr, "tool %s should have failed: %s", name, text)
	e, _ := data["error"].(map[string]any)
	require.NotNil(t, e, "a tool error carries {error:{code,message}}: %v", data)
	code, _ := e["code"].(string)
	return text, code, e
}

// plainRunOnly skips t in make test's race detector run (-short): what
// says what t runs, all of which the plain run covers, with no goroutines
// of the daemon's own against each other for the detector to watch.
func plainRunOnly(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what + ": the plain run covers it; nothing of the daemon's races here")
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
