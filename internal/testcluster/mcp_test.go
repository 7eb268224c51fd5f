package testcluster

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roundRobin sends each request to the next node in turn, as a load
// balancer without stickiness would, and counts the nodes it used.
type roundRobin struct {
	hosts []string
	n     atomic.Int64
	used  [3]atomic.Int64
}

func (rr *roundRobin) RoundTrip(req *http.Request) (*http.Response, error) {
	i := int(rr.n.Add(1)-1) % len(rr.hosts)
	rr.used[i].Add(1)
	out := req.Clone(req.Context())
	out.URL.Host, out.Host = rr.hosts[i], rr.hosts[i]
	return http.DefaultTransport.RoundTrip(out)
}

// TestMCPRoundRobin: an MCP client whose every HTTP request goes to the
// next of three nodes completes a tool workflow on /mcp and on
// /mcp/sessions/{id}: each MCP session's id names the node that holds it,
// and the others forward its requests there.
func TestMCPRoundRobin(t *testing.T) {
	ctx := t.Context()
	c := appCluster(t, 3)
	var hosts []string
	for _, n := range c.Nodes {
		u, err := url.Parse(n.URL)
		require.NoError(t, err)
		hosts = append(hosts, u.Host)
	}
	s := newSession(t, c.Nodes[0])

	call := func(mc *mcp.ClientSession, name string, args map[string]any) string {
		t.Helper()
		res, err := mc.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err, name)
		require.False(t, res.IsError, "%s: %+v", name, res.Content)
		var b strings.Builder
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	for _, tc := range []struct {
		path string
		args map[string]any // the session argument, on /mcp
	}{
		{"/mcp", map[string]any{"session": s.ID}},
		{"/mcp/sessions/" + s.ID, map[string]any{}},
	} {
		t.Run(strings.ReplaceAll(tc.path, "/", "_"), func(t *testing.T) {
			rr := &roundRobin{hosts: hosts}
			tr := &mcp.StreamableClientTransport{Endpoint: c.Nodes[0].URL + tc.path, MaxRetries: -1,
				HTTPClient: &http.Client{Transport: rr}}
			mc, err := mcp.NewClient(&mcp.Implementation{Name: "rr-agent", Version: "1"}, nil).Connect(ctx, tr, nil)
			require.NoError(t, err)
			defer mc.Close()
			with := func(kv ...any) map[string]any {
				m := map[string]any{}
				for k, v := range tc.args {
					m[k] = v
				}
				for i := 0; i < len(kv); i += 2 {
					m[kv[i].(string)] = kv[i+1]
				}
				return m
			}
			file := "rr" + strings.ReplaceAll(tc.path, "/", "-") + ".txt"
			tools, err := mc.ListTools(ctx, nil)
			require.NoError(t, err)
			assert.NotEmpty(t, tools.Tools)
			call(mc, "write_file", with("path", file, "content", "one\n"))
			call(mc, "edit_file", with("path", file, "edits", []map[string]any{{"old_text": "one", "new_text": "two"}}))
			assert.Contains(t, call(mc, "read_file", with("path", file)), "two")
			assert.Contains(t, call(mc, "run", with("command", "cat "+file)), "two")
			assert.Contains(t, call(mc, "status", with()), file)
			b, _, err := c.Nodes[1].C.ReadFile(ctx, s.ID, file)
			require.NoError(t, err)
			assert.Equal(t, "two\n", string(b))
			for i := range rr.used {
				assert.Positive(t, rr.used[i].Load(), "requests sent to node %d", i+1)
			}
		})
	}
}
