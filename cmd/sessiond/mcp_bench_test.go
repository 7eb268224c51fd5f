package main

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/api"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/mcpserver"
	"github.com/sessiond/sessiond/session"
)

// BenchmarkMCPReadFile is SPEC section 8's MCP row: the read_file tool
// over streamable HTTP against the plain HTTP read of the same file, on
// one loopback server (the daemon's wiring: the MCP handler behind the
// API's, acting through the API's handler in-process). The difference of
// the medians is what MCP adds: JSON-RPC, the tool's formatting and the
// in-process API call.
func BenchmarkMCPReadFile(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	st, err := db.OpenSQLiteDir(ctx, dir)
	require.NoError(b, err)
	b.Cleanup(func() { st.Close() })
	en := testengine.New(st, dir, session.Config{})
	m := en.Sessions
	b.Cleanup(func() { m.Close() })
	_, err = en.Repos.Register(ctx, "r", testrepo.Build(b, "small"))
	require.NoError(b, err)
	var srvAPI *api.Server
	srvAPI = api.New(api.Config{Manager: m, Repos: en.Repos, Events: en.Events, Exec: en.Exec, Changesets: en.Changesets, MCP: mcpserver.NewHTTPHandler(func(token string) mcpserver.Backend {
		return client.NewInProcess(srvAPI, token)
	}, mcpserver.Options{})})
	srv := httptest.NewServer(srvAPI)
	b.Cleanup(srv.Close)
	s, err := m.Create(ctx, session.CreateOptions{Repo: "r", Base: "main"})
	require.NoError(b, err)
	_, _, err = m.Write(ctx, s.ID, "overlay.txt", []byte("in the overlay\n"), session.WriteOptions{})
	require.NoError(b, err)
	c := client.New(srv.URL, "")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/sessions/" + s.ID.String()}, nil)
	require.NoError(b, err)
	b.Cleanup(func() { cs.Close() })

	for _, tc := range []struct{ name, path string }{{"overlay", "overlay.txt"}, {"base", "README.md"}} {
		b.Run("from="+tc.name+"/via=http", func(b *testing.B) {
			for b.Loop() {
				_, _, err := c.ReadFile(ctx, s.ID.String(), tc.path)
				require.NoError(b, err)
			}
		})
		b.Run("from="+tc.name+"/via=mcp-http", func(b *testing.B) {
			args := map[string]any{"path": tc.path}
			for b.Loop() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: args})
				require.NoError(b, err)
				require.False(b, res.IsError)
			}
		})
	}
}
