package mcpserver_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/mcpserver"
)

// bearerTransport adds a bearer token to every request, under the scheme
// name spelled as given ("Bearer" when empty).
type bearerTransport struct{ scheme, token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		scheme := b.scheme
		if scheme == "" {
			scheme = "Bearer"
		}
		r.Header.Set("Authorization", scheme+" "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func httpClient(token string) *http.Client {
	return &http.Client{Transport: bearerTransport{token: token}}
}

// connectHTTP connects the SDK's client to an MCP endpoint over streamable
// HTTP with a token.
func connectHTTP(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	return connectWith(t, url, httpClient(token))
}

func connectWith(t *testing.T, url string, hc *http.Client) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "1"}, nil).Connect(t.Context(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func TestStreamableHTTPAuth(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(e.api)
	t.Cleanup(srv.Close)
	a := e.newSession(t, apitypes.CreateSessionRequest{})
	b := e.newSession(t, apitypes.CreateSessionRequest{})
	urlA := srv.URL + "/mcp/sessions/" + a.ID

	t.Run("no token", func(t *testing.T) {
		resp := rawPost(t, urlA, "", "", initialize("2025-06-18"))
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		_, err := connectHTTP(t, urlA, "")
		assert.Error(t, err)
	})
	t.Run("another session's token", func(t *testing.T) {
		resp := rawPost(t, urlA, b.Token, "", initialize("2025-06-18"))
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
		_, err := connectHTTP(t, urlA, b.Token)
		assert.Error(t, err)
	})
	t.Run("a session token on /mcp", func(t *testing.T) {
		resp := rawPost(t, srv.URL+"/mcp", a.Token, "", initialize("2025-06-18"))
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
	t.Run("bad token", func(t *testing.T) {
		resp := rawPost(t, urlA, "sst.nope", "", initialize("2025-06-18"))
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	})
	t.Run("its own token", func(t *testing.T) {
		cs, err := connectHTTP(t, urlA, a.Token)
		require.NoError(t, err)
		res, err := cs.ListTools(t.Context(), nil)
		require.NoError(t, err)
		assert.Len(t, res.Tools, len(mcpserver.ToolNames()))
		text, _ := ok(t, cs, "write_file", map[string]any{"path": "from-http.txt", "content": "hi\n"})
		assert.Contains(t, text, "Wrote from-http.txt")
		_, _, err = e.admin.ReadFile(t.Context(), b.ID, "from-http.txt")
		assert.Error(t, err, "the write stayed in session a")
	})
	t.Run("the scheme name in any case", func(t *testing.T) {
		// RFC 7235: the API takes "bearer" as "Bearer", and so do the
		// tool calls made with the request's token.
		for i, scheme := range []string{"bearer", "BEARER"} {
			cs, err := connectWith(t, urlA, &http.Client{Transport: bearerTransport{scheme: scheme, token: a.Token}})
			require.NoError(t, err, scheme)
			name := fmt.Sprintf("scheme-%d.txt", i)
			text, _ := ok(t, cs, "write_file", map[string]any{"path": name, "content": scheme + "\n"})
			assert.Contains(t, text, "Wrote "+name, scheme)
			got, _, err := e.admin.ReadFile(t.Context(), a.ID, name)
			require.NoError(t, err, scheme)
			assert.Equal(t, scheme+"\n", string(got), scheme)
		}
	})
	t.Run("admin token, bound and unbound", func(t *testing.T) {
		cs, err := connectHTTP(t, urlA, adminToken)
		require.NoError(t, err)
		ok(t, cs, "read_file", map[string]any{"path": "go.mod"})
		cs, err = connectHTTP(t, srv.URL+"/mcp", adminToken)
		require.NoError(t, err)
		text, _ := ok(t, cs, "read_file", map[string]any{"session": b.ID, "path": "go.mod"})
		assert.Contains(t, text, "go.mod: 3 lines")
		_, code, _ := fails(t, cs, "read_file", map[string]any{"path": "go.mod"})
		assert.Equal(t, "bad_request", code)
	})
	t.Run("an MCP session belongs to its token", func(t *testing.T) {
		resp := rawPost(t, urlA, a.Token, "", initialize("2025-06-18"))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		mcpID := resp.Header.Get("Mcp-Session-Id")
		require.NotEmpty(t, mcpID)
		list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
		// b's token on a's route: the API refuses it.
		resp = rawPost(t, urlA, b.Token, mcpID, list)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
		// b's token on b's route with a's MCP session: the SDK refuses it.
		resp = rawPost(t, srv.URL+"/mcp/sessions/"+b.ID, b.Token, mcpID, list)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
		// a's token goes on.
		resp = rawPost(t, urlA, a.Token, mcpID, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		assert.Less(t, resp.StatusCode, 300)
		resp = rawPost(t, urlA, a.Token, mcpID, list)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	})
}

// TestOlderProtocolVersions initializes with protocol revisions older than
// the SDK's newest, as a raw JSON-RPC client would, and uses the tools.
func TestOlderProtocolVersions(t *testing.T) {
	plainRunOnly(t, "a table of protocol versions, one client at a time")
	e := newEnv(t)
	srv := httptest.NewServer(e.api)
	t.Cleanup(srv.Close)
	s := e.newSession(t, apitypes.CreateSessionRequest{})
	url := srv.URL + "/mcp/sessions/" + s.ID
	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run(v, func(t *testing.T) {
			resp := rawPost(t, url, s.Token, "", initialize(v))
			require.Equal(t, http.StatusOK, resp.StatusCode)
			msg := readRPC(t, resp)
			var init struct {
				Result struct {
					ProtocolVersion string `json:"protocolVersion"`
					ServerInfo      struct{ Name string }
				}
			}
			require.NoError(t, json.Unmarshal(msg, &init), string(msg))
			assert.Equal(t, v, init.Result.ProtocolVersion, "the server speaks the client's revision")
			assert.Equal(t, "sessiond", init.Result.ServerInfo.Name)
			id := resp.Header.Get("Mcp-Session-Id")
			post := func(body string) *http.Response {
				req, err := http.NewRequestWithContext(t.Context(), "POST", url, strings.NewReader(body))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", "Bearer "+s.Token)
				req.Header.Set("Mcp-Session-Id", id)
				if v >= "2025-06-18" { // the header exists since 2025-06-18
					req.Header.Set("MCP-Protocol-Version", v)
				}
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				t.Cleanup(func() { resp.Body.Close() })
				return resp
			}
			resp = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			assert.Less(t, resp.StatusCode, 300)
			resp = post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"go.mod"}}}`)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			msg = readRPC(t, resp)
			assert.Contains(t, string(msg), `go.mod: 3 lines`)
		})
	}
}

func initialize(version string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":{},"clientInfo":{"name":"old-client","version":"0.1"}}}`
}

func rawPost(t *testing.T, url, token, mcpSession, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "POST", url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if mcpSession != "" {
		req.Header.Set("Mcp-Session-Id", mcpSession)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readRPC reads the first JSON-RPC message of a response, plain JSON or
// an event stream.
func readRPC(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return b
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
			return append([]byte(nil), d...)
		}
	}
	t.Fatalf("no data in the event stream: %v", sc.Err())
	return nil
}
