package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
)

const testAdminToken = "admin-token-for-tests"

// scopeEnv is a server with auth on, over an embedded store and a bare
// repository built from the small fixture.
type scopeEnv struct {
	t    testing.TB
	en   *testengine.Engine
	m    *session.Manager
	cs   *changeset.Service
	api  *Server
	srv  *httptest.Server
	repo string // the repository's directory
}

func newScopeEnv(t testing.TB) *scopeEnv {
	t.Helper()
	repo := testrepo.BuildBare(t, "small")
	en := newEngine(t, repo)
	m := en.Sessions
	e := &scopeEnv{t: t, en: en, m: m, cs: en.Changesets, repo: repo}
	e.api = New(Config{Manager: m, Repos: en.Repos, Events: en.Events, Exec: en.Exec, Changesets: e.cs, AdminToken: testAdminToken, TokenSecret: []byte("token secret for tests")})
	e.srv = httptest.NewServer(e.api)
	t.Cleanup(e.srv.Close)
	return e
}

// call sends a request with token (none when empty) and returns the
// status and body.
func (e *scopeEnv) call(method, path, token string, body any, header ...string) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(e.t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.srv.URL+path, rd)
	require.NoError(e.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil && method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return resp.StatusCode, data
}

// session creates a session with the admin token and returns it with its
// token.
func (e *scopeEnv) session(req apitypes.CreateSessionRequest) apitypes.Session {
	e.t.Helper()
	if req.Repo == "" {
		req.Repo = "r"
	}
	if req.Base == "" {
		req.Base = "main"
	}
	status, body := e.call("POST", "/v1/sessions", testAdminToken, req)
	require.Equal(e.t, http.StatusCreated, status, "%s", body)
	var s apitypes.Session
	require.NoError(e.t, json.Unmarshal(body, &s))
	require.NotEmpty(e.t, s.Token)
	return s
}

func errorCode(body []byte) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Error.Code
}

// TestDeleteIfMatch: a stale If-Match on DELETE is 412 and the file
// stays; the current one deletes it.
func TestDeleteIfMatch(t *testing.T) {
	e := newScopeEnv(t)
	s := e.session(apitypes.CreateSessionRequest{})
	file := "/v1/sessions/" + s.ID + "/files/README.md"
	status, before := e.call("GET", file, s.Token, nil)
	require.Equal(t, http.StatusOK, status)
	stat, err := e.m.Stat(t.Context(), mustUUID(t, s.ID), "README.md")
	require.NoError(t, err)
	etag := `"` + stat.OID.String() + `"`

	status, body := e.call("DELETE", file, s.Token, nil, "If-Match", `"`+strings.Repeat("0", 40)+`"`)
	assert.Equal(t, http.StatusPreconditionFailed, status, "%s", body)
	assert.Equal(t, apitypes.CodePreconditionFailed, errorCode(body))
	status, after := e.call("GET", file, s.Token, nil)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, before, after, "the file stays")

	status, body = e.call("DELETE", file, s.Token, nil, "If-None-Match", "*")
	assert.Equal(t, http.StatusBadRequest, status, "%s", body)
	status, body = e.call("DELETE", "/v1/sessions/"+s.ID+"/files/missing", s.Token, nil, "If-Match", "*")
	assert.Equal(t, http.StatusPreconditionFailed, status, "%s", body)
	status, body = e.call("DELETE", "/v1/sessions/"+s.ID+"/files/a?recursive=true", s.Token, nil, "If-Match", etag)
	assert.Equal(t, http.StatusBadRequest, status, "a directory has no version: %s", body)
	ms, err := e.m.Mutations(t.Context(), mustUUID(t, s.ID), 0, 0)
	require.NoError(t, err)
	assert.Empty(t, ms, "no refused delete was recorded")

	status, body = e.call("DELETE", file, s.Token, nil, "If-Match", etag)
	assert.Equal(t, http.StatusOK, status, "%s", body)
	status, _ = e.call("GET", file, s.Token, nil)
	assert.Equal(t, http.StatusNotFound, status)
}

func mustUUID(t testing.TB, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	require.NoError(t, err)
	return id
}

// TestMergeNeedsReadOnFrom: a session token reaches only its own session,
// so merging another one needs the admin token or from's token too
// (issue: A's token merged any session B of the repository).
func TestMergeNeedsReadOnFrom(t *testing.T) {
	e := newScopeEnv(t)
	a := e.session(apitypes.CreateSessionRequest{})
	b := e.session(apitypes.CreateSessionRequest{})
	c := e.session(apitypes.CreateSessionRequest{})
	status, body := e.call("PUT", "/v1/sessions/"+b.ID+"/files/private.txt", b.Token, "b's secret\n")
	require.Equal(t, http.StatusCreated, status, "%s", body)
	merge := "/v1/sessions/" + a.ID + "/merge"
	from := apitypes.MergeRequest{From: b.ID}
	unchanged := func(msg string) {
		t.Helper()
		status, _ := e.call("GET", "/v1/sessions/"+a.ID+"/files/private.txt", a.Token, nil)
		assert.Equal(t, http.StatusNotFound, status, msg)
	}

	status, body = e.call("POST", merge, a.Token, from)
	assert.Equal(t, http.StatusForbidden, status, "%s", body)
	assert.Contains(t, string(body), apitypes.FromTokenHeader)
	unchanged("a's token alone")
	status, _ = e.call("POST", merge, a.Token, from, apitypes.FromTokenHeader, c.Token)
	assert.Equal(t, http.StatusForbidden, status)
	unchanged("another session's token as from's")
	status, _ = e.call("POST", merge, a.Token, from, apitypes.FromTokenHeader, "sst.bogus")
	assert.Equal(t, http.StatusUnauthorized, status)
	unchanged("an invalid from token")
	status, _ = e.call("POST", merge, b.Token, from, apitypes.FromTokenHeader, b.Token)
	assert.Equal(t, http.StatusForbidden, status)
	unchanged("b's token on a's route")

	status, body = e.call("POST", merge, a.Token, from, apitypes.FromTokenHeader, b.Token)
	require.Equal(t, http.StatusOK, status, "%s", body)
	status, body = e.call("GET", "/v1/sessions/"+a.ID+"/files/private.txt", a.Token, nil)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "b's secret\n", string(body))

	status, body = e.call("POST", "/v1/sessions/"+c.ID+"/merge", testAdminToken, apitypes.MergeRequest{From: b.ID})
	assert.Equal(t, http.StatusOK, status, "the admin reaches every session: %s", body)
}
