package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/session"
)

// TestBrowserSafety drives the daemon's handler (Guard, the review page,
// the API) on a real listener, as a browser and a foreign page would, with
// no admin token: every request admitted is the admin's, so only the
// browser rules stand between a web page and the API. Each refused request
// must create nothing.
func TestBrowserSafety(t *testing.T) {
	e := newDaemonEnv(t, Config{AllowedHosts: []string{"sessiond.test", "pinned.test:9443", "[fd00::1]"}})
	own := "http://" + e.host
	_, port, _ := strings.Cut(e.host, ":")
	create := map[string]any{"repo": "r", "base": "main"}
	sessions := func() int {
		ss, err := e.m.ListSessions(t.Context(), session.SessionFilter{})
		require.NoError(t, err)
		return len(ss)
	}
	tests := []struct {
		name   string
		r      req
		status int
		code   string
	}{
		// Host.
		{"the listen address", req{"GET", "/v1/repos", nil, nil}, 200, ""},
		{"localhost with the port", req{"GET", "/v1/repos", nil, []string{"Host", "localhost:" + port}}, 200, ""},
		{"LOCALHOST in capitals", req{"GET", "/v1/repos", nil, []string{"Host", "LOCALHOST:" + port}}, 200, ""},
		{"another loopback address", req{"GET", "/v1/repos", nil, []string{"Host", "127.0.0.2:" + port}}, 200, ""},
		{"IPv6 loopback", req{"GET", "/v1/repos", nil, []string{"Host", "[::1]:" + port}}, 200, ""},
		{"an allowed name, any port", req{"GET", "/v1/repos", nil, []string{"Host", "sessiond.test:8080"}}, 200, ""},
		{"an allowed name without a port", req{"GET", "/v1/repos", nil, []string{"Host", "sessiond.test"}}, 200, ""},
		{"an allowed name with its port", req{"GET", "/v1/repos", nil, []string{"Host", "pinned.test:9443"}}, 200, ""},
		{"an allowed IPv6 address", req{"GET", "/v1/repos", nil, []string{"Host", "[fd00::1]:1"}}, 200, ""},
		{"an allowed name on another port", req{"GET", "/v1/repos", nil, []string{"Host", "pinned.test:9444"}}, 403, "forbidden"},
		{"a rebinding name", req{"GET", "/v1/repos", nil, []string{"Host", "attacker.example:" + port}}, 403, "forbidden"},
		{"a rebinding name, POST", req{"POST", "/v1/sessions", create, []string{"Host", "attacker.example:" + port, "Origin", "http://attacker.example:" + port}}, 403, "forbidden"},
		{"localhost on another port", req{"GET", "/v1/repos", nil, []string{"Host", "localhost:1"}}, 403, "forbidden"},
		{"localhost without the port", req{"GET", "/v1/repos", nil, []string{"Host", "localhost"}}, 403, "forbidden"},
		{"a suffix of localhost", req{"GET", "/v1/repos", nil, []string{"Host", "localhost.attacker.example:" + port}}, 403, "forbidden"},
		{"another address", req{"GET", "/v1/repos", nil, []string{"Host", "10.1.2.3:" + port}}, 403, "forbidden"},
		{"the review page under a rebinding name", req{"GET", "/ui/", nil, []string{"Host", "attacker.example:" + port}}, 403, "forbidden"},
		// Origin.
		{"same origin POST", req{"POST", "/v1/sessions", create, []string{"Origin", own}}, 201, ""},
		{"same origin as localhost", req{"POST", "/v1/sessions", create, []string{"Host", "localhost:" + port, "Origin", "http://localhost:" + port}}, 201, ""},
		{"a foreign origin, GET", req{"GET", "/v1/repos", nil, []string{"Origin", "https://attacker.example"}}, 403, "forbidden"},
		{"a foreign origin, JSON POST", req{"POST", "/v1/sessions", create, []string{"Origin", "https://attacker.example"}}, 403, "forbidden"},
		{"a foreign text/plain POST", req{"POST", "/v1/sessions", `{"repo":"r","base":"main"}`, []string{"Origin", "https://attacker.example", "Content-Type", "text/plain"}}, 403, "forbidden"},
		{"the daemon's port on another host", req{"POST", "/v1/sessions", create, []string{"Origin", "http://attacker.example:" + port}}, 403, "forbidden"},
		{"the null origin", req{"POST", "/v1/sessions", create, []string{"Origin", "null"}}, 403, "forbidden"},
		{"an origin with a path", req{"POST", "/v1/sessions", create, []string{"Origin", own + "/x"}}, 403, "forbidden"},
		{"a foreign DELETE", req{"DELETE", "/v1/sessions/" + strings.Repeat("0", 8) + "-0000-0000-0000-000000000000", nil, []string{"Origin", "https://attacker.example"}}, 403, "forbidden"},
		// Content-Type.
		{"a text/plain POST without Origin", req{"POST", "/v1/sessions", `{"repo":"r","base":"main"}`, []string{"Content-Type", "text/plain"}}, 415, apitypes.CodeUnsupportedMediaType},
		{"a form POST", req{"POST", "/v1/sessions", `repo=r`, []string{"Content-Type", "application/x-www-form-urlencoded"}}, 415, apitypes.CodeUnsupportedMediaType},
		{"a multipart POST", req{"POST", "/v1/sessions", "--x--", []string{"Content-Type", "multipart/form-data; boundary=x"}}, 415, apitypes.CodeUnsupportedMediaType},
		{"a POST body without a type", req{"POST", "/v1/sessions", `{"repo":"r","base":"main"}`, nil}, 415, apitypes.CodeUnsupportedMediaType},
		{"JSON with a charset", req{"POST", "/v1/sessions", `{"repo":"r","base":"main"}`, []string{"Content-Type", "application/json; charset=utf-8"}}, 201, ""},
		{"JSON in capitals", req{"POST", "/v1/sessions", `{"repo":"r","base":"main"}`, []string{"Content-Type", "Application/JSON"}}, 201, ""},
		{"a text/plain POST to MCP", req{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{"Content-Type", "text/plain"}}, 415, apitypes.CodeUnsupportedMediaType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := sessions()
			status, body := e.do(tt.r)
			require.Equal(t, tt.status, status, "%s", body)
			if tt.code != "" {
				assert.Equal(t, tt.code, errorCode(body), "%s", body)
				assert.Equal(t, before, sessions(), "a refused request created nothing")
			}
		})
	}
}

// TestBrowserSafetyKeepsClients: what the daemon's own clients send still
// works: the review page's same-origin fetches (a JSON POST with its
// Origin, GETs without one, the event stream), body-less POSTs, PUT and
// DELETE with any body type, and the Go client, which sends no Origin.
func TestBrowserSafetyKeepsClients(t *testing.T) {
	e := newDaemonEnv(t, Config{})
	own := "http://" + e.host
	page := []string{"Origin", own, "Sec-Fetch-Site", "same-origin", "Sec-Fetch-Mode", "cors"}

	status, body := e.do(req{"GET", "/ui/", nil, []string{"Sec-Fetch-Site", "same-origin"}})
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(body), "/ui/assets/app.js")
	status, _ = e.do(req{"GET", "/ui/assets/app.js", nil, []string{"Sec-Fetch-Site", "same-origin", "Sec-Fetch-Dest", "script"}})
	assert.Equal(t, http.StatusOK, status)

	var s apitypes.Session
	e.must(http.StatusCreated, req{"POST", "/v1/sessions", map[string]any{"repo": "r", "base": "main"}, page}, &s)
	e.must(http.StatusCreated, req{"PUT", "/v1/sessions/" + s.ID + "/files/notes.txt", "from the page\n",
		append([]string{"Content-Type", "text/plain"}, page...)}, nil)
	var cs apitypes.Changeset
	e.must(http.StatusCreated, req{"POST", "/v1/sessions/" + s.ID + "/changesets", nil, page}, &cs)
	var list struct{ Changesets []apitypes.Changeset }
	e.must(http.StatusOK, req{"GET", "/v1/changesets?repo=r", nil, []string{"Sec-Fetch-Site", "same-origin"}}, &list)
	require.Len(t, list.Changesets, 1)
	var rv apitypes.ReviewResult
	e.must(http.StatusCreated, req{"POST", "/v1/changesets/" + cs.ID + "/reviews", map[string]any{"verdict": "approve", "author": "page"}, page}, &rv)
	assert.Equal(t, "approved", rv.Changeset.Status)
	status, block := e.streamUntil("/v1/repos/r/events", []string{"Sec-Fetch-Site", "same-origin"}, "changeset.reviewed")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, block, cs.ID)
	e.must(http.StatusOK, req{"DELETE", "/v1/sessions/" + s.ID + "/files/notes.txt", "ignored", append([]string{"Content-Type", "text/plain"}, page...)}, nil)
	e.must(http.StatusCreated, req{"POST", "/v1/sessions/" + s.ID + "/checkpoints", "", append([]string{"Content-Type", "text/plain"}, page...)}, nil)
}
