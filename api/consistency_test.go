package api

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
)

// testServer is the API over a real engine on the embedded store, with a
// registered repository "r" (internal/testrepo's "small").
type testServer struct {
	t    *testing.T
	URL  string
	m    *session.Manager
	repo string // the repository's path
	auth string // Authorization header sent by call; "" for none
}

func newTestServer(t *testing.T, adminToken string) *testServer {
	t.Helper()
	repo := testrepo.Build(t, "small")
	en := newEngine(t, repo)
	m := en.Sessions
	srv := httptest.NewServer(New(Config{Manager: m, Repos: en.Repos, Events: en.Events, Exec: en.Exec, Changesets: en.Changesets, AdminToken: adminToken, TokenSecret: []byte("0123456789abcdef0123456789abcdef")}))
	t.Cleanup(srv.Close)
	ts := &testServer{t: t, URL: srv.URL, m: m, repo: repo}
	if adminToken != "" {
		ts.auth = "Bearer " + adminToken
	}
	return ts
}

// response is an answer with its body read.
type response struct {
	*http.Response
	body []byte
}

// errorOf decodes the body as the API's error shape.
func (r response) errorOf(t *testing.T) map[string]any {
	t.Helper()
	var e struct {
		Error map[string]any `json:"error"`
	}
	require.NoError(t, json.Unmarshal(r.body, &e), "%d %s", r.StatusCode, r.body)
	require.NotNil(t, e.Error, "%s", r.body)
	return e.Error
}

// call sends a request; body nil sends none at all (Content-Length 0).
func (ts *testServer) call(method, path string, body []byte, headers ...string) response {
	ts.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ts.t.Context(), method, ts.URL+path, rd)
	require.NoError(ts.t, err)
	if ts.auth != "" {
		req.Header.Set("Authorization", ts.auth)
	}
	if body != nil && method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(ts.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(ts.t, err)
	return response{resp, b}
}

func (ts *testServer) newSession() string {
	ts.t.Helper()
	r := ts.call("POST", "/v1/sessions", []byte(`{"repo":"r","base":"main"}`))
	require.Equal(ts.t, 201, r.StatusCode, "%s", r.body)
	var s apitypes.Session
	require.NoError(ts.t, json.Unmarshal(r.body, &s))
	return s.ID
}

// TestBodylessPost: a POST without a body is the empty object, on every
// route that takes one.
func TestBodylessPost(t *testing.T) {
	ts := newTestServer(t, "")
	id := ts.newSession()
	r := ts.call("PUT", "/v1/sessions/"+id+"/files/new.txt", []byte("x\n"))
	require.Equal(t, 201, r.StatusCode, "%s", r.body)

	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/v1/sessions/" + id + "/checkpoints", 201},
		{"/v1/sessions/" + id + "/rebase", 200},
		{"/v1/sessions/" + id + "/fork", 201},
		{"/v1/sessions/" + id + "/changesets", 201},
	} {
		r := ts.call("POST", tc.path, nil)
		assert.Equal(t, tc.status, r.StatusCode, "POST %s: %s", tc.path, r.body)
	}
	var cs []apitypes.Changeset
	r = ts.call("GET", "/v1/changesets?repo=r", nil)
	require.NoError(t, json.Unmarshal(r.body, &struct {
		Changesets *[]apitypes.Changeset `json:"changesets"`
	}{&cs}))
	require.Len(t, cs, 1)
	r = ts.call("PUT", "/v1/repos/r/policy", []byte(`{"allow_checked_out":true}`))
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	r = ts.call("POST", "/v1/changesets/"+cs[0].ID+"/accept", nil)
	assert.Equal(t, 200, r.StatusCode, "accept: %s", r.body)
	r = ts.call("POST", "/v1/changesets/"+cs[0].ID+"/undo", nil)
	assert.Equal(t, 200, r.StatusCode, "undo: %s", r.body)

	// Required fields are still required, with a message naming them.
	for _, path := range []string{"/v1/sessions/" + id + "/rollback", "/v1/sessions/" + id + "/merge", "/v1/sessions/" + id + "/edits",
		"/v1/sessions/" + id + "/search", "/v1/sessions", "/v1/repos"} {
		r := ts.call("POST", path, nil)
		assert.Equal(t, 400, r.StatusCode, "POST %s: %s", path, r.body)
		assert.NotContains(t, string(r.body), "empty request body", path)
	}
	// A PUT still needs its body.
	r = ts.call("PUT", "/v1/repos/r/policy", nil)
	assert.Equal(t, 400, r.StatusCode, "%s", r.body)
}

// TestMethodNotAllowed: a known route with another method is 405 with
// Allow; an unknown path is 404.
func TestMethodNotAllowed(t *testing.T) {
	ts := newTestServer(t, "")
	id := ts.newSession()
	for _, tc := range []struct {
		method, path, allow string
	}{
		{"PATCH", "/v1/sessions/" + id, "GET, HEAD, DELETE"},
		{"PUT", "/v1/sessions", "GET, HEAD, POST"},
		{"DELETE", "/v1/repos/r", "GET, HEAD"},
		{"GET", "/v1/sessions/" + id + "/rebase", "POST"},
		{"POST", "/v1/sessions/" + id + "/files/a.txt", "GET, HEAD, PUT, DELETE"},
		{"GET", "/v1/repos/r/undo", "POST"},
	} {
		r := ts.call(tc.method, tc.path, nil)
		assert.Equal(t, 405, r.StatusCode, "%s %s: %s", tc.method, tc.path, r.body)
		assert.Equal(t, tc.allow, r.Header.Get("Allow"), "%s %s", tc.method, tc.path)
		assert.Equal(t, apitypes.CodeMethodNotAllowed, r.errorOf(t)["code"])
	}
	r := ts.call("GET", "/v1/nothing/here", nil)
	assert.Equal(t, 404, r.StatusCode)
	assert.Empty(t, r.Header.Get("Allow"))
}

// TestUnknownFilterValues: a filter value that names nothing is 400 on
// every listing.
func TestUnknownFilterValues(t *testing.T) {
	ts := newTestServer(t, "")
	id := ts.newSession()
	for _, path := range []string{
		"/v1/sessions?state=bogus",
		"/v1/changesets?status=bogus",
		"/v1/sessions/" + id + "/diff?format=bogus",
		"/v1/sessions/" + id + "/tree?recursive=maybe",
		"/v1/sessions/" + id + "/mutations?after=-1",
		"/v1/sessions/" + id + "/events?type=bogus",
		"/v1/repos/r/events?type=file.written,bogus",
	} {
		r := ts.call("GET", path, nil)
		assert.Equal(t, 400, r.StatusCode, "%s: %s", path, r.body)
		assert.Equal(t, apitypes.CodeBadRequest, r.errorOf(t)["code"], path)
	}
	// A repository that is not registered is an unknown value too, not an
	// empty list; the message names the filter and the value.
	for _, path := range []string{"/v1/sessions?repo=nosuch", "/v1/changesets?repo=nosuch", "/v1/changesets?repo=nosuch&status=open"} {
		r := ts.call("GET", path, nil)
		assert.Equal(t, 400, r.StatusCode, "%s: %s", path, r.body)
		e := r.errorOf(t)
		assert.Equal(t, apitypes.CodeBadRequest, e["code"], path)
		assert.Contains(t, e["message"], `repo="nosuch"`, path)
	}
	for _, path := range []string{"/v1/sessions?state=active", "/v1/sessions?state=expired", "/v1/changesets?status=open",
		"/v1/sessions?repo=r", "/v1/changesets?repo=r"} {
		r := ts.call("GET", path, nil)
		assert.Equal(t, 200, r.StatusCode, "%s: %s", path, r.body)
	}
	r := ts.call("GET", "/v1/sessions?repo=r", nil)
	assert.Contains(t, string(r.body), id, "the registered repository's sessions are listed")
}

// TestBearerSchemeCaseInsensitive: RFC 7235 makes the scheme name
// case-insensitive.
func TestBearerSchemeCaseInsensitive(t *testing.T) {
	ts := newTestServer(t, "admin-secret")
	for _, h := range []string{"Bearer admin-secret", "bearer admin-secret", "BEARER admin-secret", "Bearer  admin-secret"} {
		ts.auth = h
		r := ts.call("GET", "/v1/repos", nil)
		assert.Equal(t, 200, r.StatusCode, "%q: %s", h, r.body)
	}
	for _, h := range []string{"Basic admin-secret", "Bearer", "Bearer ", "admin-secret", "Bearer wrong", "Bearerx admin-secret"} {
		ts.auth = h
		r := ts.call("GET", "/v1/repos", nil)
		assert.Equal(t, 401, r.StatusCode, "%q: %s", h, r.body)
	}
}

// TestRanges: ranges and conditional GETs as http.ServeContent serves
// them, with the API's JSON errors.
func TestRanges(t *testing.T) {
	ts := newTestServer(t, "")
	id := ts.newSession()
	content := "0123456789abcdef"
	r := ts.call("PUT", "/v1/sessions/"+id+"/files/f.txt", []byte(content))
	require.Equal(t, 201, r.StatusCode, "%s", r.body)
	f := "/v1/sessions/" + id + "/files/f.txt"
	whole := ts.call("GET", f, nil)
	require.Equal(t, 200, whole.StatusCode)
	etag := whole.Header.Get("ETag")
	require.NotEmpty(t, etag)
	assert.Equal(t, "bytes", whole.Header.Get("Accept-Ranges"))

	r = ts.call("GET", f, nil, "Range", "bytes=2-5")
	assert.Equal(t, 206, r.StatusCode)
	assert.Equal(t, "2345", string(r.body))
	assert.Equal(t, "bytes 2-5/16", r.Header.Get("Content-Range"))
	assert.Equal(t, etag, r.Header.Get("ETag"))

	r = ts.call("GET", f, nil, "Range", "bytes=-3")
	assert.Equal(t, 206, r.StatusCode)
	assert.Equal(t, "def", string(r.body))

	// Several ranges: multipart/byteranges.
	r = ts.call("GET", f, nil, "Range", "bytes=0-1,4-5")
	assert.Equal(t, 206, r.StatusCode)
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	require.NoError(t, err)
	assert.Equal(t, "multipart/byteranges", mt)
	assert.NotEmpty(t, params["boundary"])
	assert.Contains(t, string(r.body), "01")
	assert.Contains(t, string(r.body), "45")

	// Not satisfiable: 416 with the size, in the API's error shape.
	r = ts.call("GET", f, nil, "Range", "bytes=100-200")
	assert.Equal(t, 416, r.StatusCode)
	assert.Equal(t, "bytes */16", r.Header.Get("Content-Range"))
	e := r.errorOf(t)
	assert.Equal(t, apitypes.CodeRangeNotSatisfiable, e["code"])
	assert.Contains(t, e["message"], "bytes=100-200")
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))

	// A unit the server does not know is ignored: the whole file.
	r = ts.call("GET", f, nil, "Range", "items=0-1")
	assert.Equal(t, 200, r.StatusCode)
	assert.Equal(t, content, string(r.body))

	// Conditional GETs.
	r = ts.call("GET", f, nil, "If-None-Match", etag)
	assert.Equal(t, 304, r.StatusCode)
	assert.Empty(t, r.body)
	r = ts.call("GET", f, nil, "If-None-Match", `"`+strings.Repeat("0", 40)+`"`)
	assert.Equal(t, 200, r.StatusCode)
	r = ts.call("GET", f, nil, "If-Match", `"`+strings.Repeat("0", 40)+`"`)
	assert.Equal(t, 412, r.StatusCode)
	assert.Equal(t, apitypes.CodePreconditionFailed, r.errorOf(t)["code"])
	r = ts.call("GET", f, nil, "If-Match", etag)
	assert.Equal(t, 200, r.StatusCode)
	// If-Range with another version: the whole (new) file, not a range of
	// the old one.
	r = ts.call("GET", f, nil, "Range", "bytes=0-1", "If-Range", `"`+strings.Repeat("0", 40)+`"`)
	assert.Equal(t, 200, r.StatusCode)
	assert.Equal(t, content, string(r.body))
	r = ts.call("GET", f, nil, "Range", "bytes=0-1", "If-Range", etag)
	assert.Equal(t, 206, r.StatusCode)
	assert.Equal(t, "01", string(r.body))
}

// TestErrorMessages: errors from the store carry no driver text, and a
// message says each thing once.
func TestErrorMessages(t *testing.T) {
	ts := newTestServer(t, "")
	r := ts.call("POST", "/v1/repos", []byte(`{"name":"r","path":"`+ts.repo+`"}`))
	assert.Equal(t, 409, r.StatusCode, "%s", r.body)
	e := r.errorOf(t)
	assert.Equal(t, apitypes.CodeConflict, e["code"])
	msg := e["message"].(string)
	assert.Contains(t, msg, `repository "r"`)
	assert.Contains(t, msg, "already")
	for _, leak := range []string{"constraint", "UNIQUE", "1555", "2067", "repos.name", "sqlite", "SQLSTATE"} {
		assert.NotContains(t, msg, leak)
	}

	id := ts.newSession()
	missing := "00000000-0000-0000-0000-000000000000"
	for _, path := range []string{
		"/v1/sessions/" + missing,
		"/v1/sessions/" + missing + "/checkpoints",
		"/v1/sessions/" + missing + "/tree",
		"/v1/sessions/" + missing + "/mutations",
		"/v1/sessions/" + id + "/files/no/such.txt",
		"/v1/sessions/" + id + "/diff?against=7",
		"/v1/repos/nosuch",
		"/v1/repos/nosuch/branches",
		"/v1/changesets/" + missing,
	} {
		r := ts.call("GET", path, nil)
		assert.Equal(t, 404, r.StatusCode, "%s: %s", path, r.body)
		msg := r.errorOf(t)["message"].(string)
		assert.Equal(t, 1, strings.Count(msg, "not found"), "%s: %q", path, msg)
		for _, name := range []string{missing, `"nosuch"`} {
			assert.LessOrEqual(t, strings.Count(msg, name), 1, "%s: %q", path, msg)
		}
	}
	// Every route that changes a session or a changeset says once that it
	// is missing.
	for _, tc := range []struct{ method, path, body string }{
		{"DELETE", "/v1/sessions/" + missing, ""},
		{"POST", "/v1/sessions/" + missing + "/fork", "{}"},
		{"POST", "/v1/sessions/" + missing + "/checkpoints", "{}"},
		{"POST", "/v1/sessions/" + missing + "/rebase", "{}"},
		{"POST", "/v1/sessions/" + missing + "/rollback", `{"checkpoint":"1"}`},
		{"POST", "/v1/sessions/" + missing + "/edits", `{"edits":[{"op":"delete","path":"x"}]}`},
		{"POST", "/v1/sessions/" + missing + "/changesets", "{}"},
		{"PUT", "/v1/sessions/" + missing + "/files/x", "x"},
		{"DELETE", "/v1/sessions/" + missing + "/files/x", ""},
		{"POST", "/v1/changesets/" + missing + "/accept", "{}"},
		{"POST", "/v1/changesets/" + missing + "/undo", "{}"},
		{"POST", "/v1/changesets/" + missing + "/reviews", `{"verdict":"approve"}`},
		{"GET", "/v1/changesets/" + missing + "/diff", ""},
	} {
		r := ts.call(tc.method, tc.path, []byte(tc.body))
		assert.Equal(t, 404, r.StatusCode, "%s %s: %s", tc.method, tc.path, r.body)
		msg := r.errorOf(t)["message"].(string)
		assert.Equal(t, 1, strings.Count(msg, "not found"), "%s %s: %q", tc.method, tc.path, msg)
		assert.Equal(t, 1, strings.Count(msg, missing), "%s %s: %q", tc.method, tc.path, msg)
	}
	r = ts.call("POST", "/v1/sessions", []byte(`{"repo":"nosuch"}`))
	assert.Equal(t, 404, r.StatusCode, "%s", r.body)
	assert.Equal(t, `repository "nosuch": not found`, r.errorOf(t)["message"])
	// A revision that resolves to nothing is not_found, named once, with
	// what is wrong (as one out of a session token's reach is:
	// TestRevisionScopeOnEveryRoute).
	for _, tc := range []struct{ path, body, rev string }{
		{"/v1/sessions", `{"repo":"r","base":"nope~1"}`, "nope~1"},
		{"/v1/sessions", `{"repo":"r","base":"main~99"}`, "main~99"},
		{"/v1/sessions/" + id + "/rebase", `{"onto":"nope^{commit}"}`, "nope^{commit}"},
	} {
		r := ts.call("POST", tc.path, []byte(tc.body))
		assert.Equal(t, 404, r.StatusCode, "%s: %s", tc.body, r.body)
		msg := r.errorOf(t)["message"].(string)
		assert.Equal(t, 1, strings.Count(msg, `"`+tc.rev+`"`), "%s: %q", tc.body, msg)
	}
	for _, body := range []string{`{"checkpoint":"9"}`, `{"checkpoint":"nolabel"}`} {
		r := ts.call("POST", "/v1/sessions/"+id+"/rollback", []byte(body))
		assert.Equal(t, 404, r.StatusCode, "%s", r.body)
		msg := r.errorOf(t)["message"].(string)
		assert.Equal(t, 1, strings.Count(msg, "not found"), "%q", msg)
		assert.LessOrEqual(t, strings.Count(msg, id), 1, "%q", msg)
	}
}

// TestEditValidation: edits that do not say what they mean are refused,
// and change nothing.
func TestEditValidation(t *testing.T) {
	ts := newTestServer(t, "")
	id := ts.newSession()
	edits := "/v1/sessions/" + id + "/edits"
	r := ts.call("PUT", "/v1/sessions/"+id+"/files/src.txt", []byte("from src\n"))
	require.Equal(t, 201, r.StatusCode, "%s", r.body)
	r = ts.call("PUT", "/v1/sessions/"+id+"/files/dst.txt", []byte("old dst\n"))
	require.Equal(t, 201, r.StatusCode, "%s", r.body)
	seq := func() int64 {
		t.Helper()
		r := ts.call("GET", "/v1/sessions/"+id, nil)
		var s apitypes.Session
		require.NoError(t, json.Unmarshal(r.body, &s))
		return s.Seq
	}
	before := seq()
	for _, tc := range []struct {
		name, body string
		status     int
		code, says string
	}{
		{"negative count", `{"edits":[{"op":"replace","path":"src.txt","old":"src","new":"x","count":-1}]}`, 400, apitypes.CodeBadRequest, "count -1"},
		{"write without content", `{"edits":[{"op":"write","path":"new.txt"}]}`, 400, apitypes.CodeBadRequest, `write needs "content"`},
		{"to on delete", `{"edits":[{"op":"delete","path":"src.txt","to":"elsewhere.txt"}]}`, 400, apitypes.CodeBadRequest, `takes no "to"`},
		{"to on write", `{"edits":[{"op":"write","path":"n.txt","content":"x","to":"m.txt"}]}`, 400, apitypes.CodeBadRequest, `takes no "to"`},
		{"overwrite on write", `{"edits":[{"op":"write","path":"n.txt","content":"x","overwrite":true}]}`, 400, apitypes.CodeBadRequest, `takes no "overwrite"`},
		{"append without content", `{"edits":[{"op":"append","path":"n.txt"}]}`, 400, apitypes.CodeBadRequest, `append needs "content"`},
		{"content on delete", `{"edits":[{"op":"delete","path":"src.txt","content":"x"}]}`, 400, apitypes.CodeBadRequest, `delete takes no "content" (only write and append do)`},
		{"mode on delete", `{"edits":[{"op":"delete","path":"src.txt","mode":"100755"}]}`, 400, apitypes.CodeBadRequest, `delete takes no "mode"`},
		{"count on delete", `{"edits":[{"op":"delete","path":"src.txt","count":2}]}`, 400, apitypes.CodeBadRequest, `delete takes no "count" (only replace does)`},
		{"recursive on write", `{"edits":[{"op":"write","path":"n.txt","content":"x","recursive":true}]}`, 400, apitypes.CodeBadRequest, `write takes no "recursive" (only delete does)`},
		{"glob on write", `{"edits":[{"op":"write","path":"n.txt","content":"x","glob":"*"}]}`, 400, apitypes.CodeBadRequest, `write takes no "glob"`},
		{"old and new on move", `{"edits":[{"op":"move","path":"src.txt","to":"m.txt","old":"a","new":"b"}]}`, 400, apitypes.CodeBadRequest, `move takes no "old"`},
		{"content on replace", `{"edits":[{"op":"replace","path":"src.txt","old":"src","new":"x","content":"y"}]}`, 400, apitypes.CodeBadRequest, `replace takes no "content"`},
		{"move onto a file", `{"edits":[{"op":"move","path":"src.txt","to":"dst.txt"}]}`, 409, apitypes.CodeConflict, `"dst.txt" exists; set overwrite`},
		{"copy onto a file", `{"edits":[{"op":"copy","path":"src.txt","to":"dst.txt"}]}`, 409, apitypes.CodeConflict, `"dst.txt" exists`},
		{"move onto a directory", `{"edits":[{"op":"move","path":"src.txt","to":"src","overwrite":true}]}`, 409, apitypes.CodeConflict, `"src" is a directory`},
	} {
		r := ts.call("POST", edits, []byte(tc.body))
		assert.Equal(t, tc.status, r.StatusCode, "%s: %s", tc.name, r.body)
		if r.StatusCode >= 400 {
			e := r.errorOf(t)
			assert.Equal(t, tc.code, e["code"], tc.name)
			assert.Contains(t, e["message"], tc.says, tc.name)
		}
	}
	assert.Equal(t, before, seq(), "nothing changed")

	// An empty content is an empty file, not a missing one.
	r = ts.call("POST", edits, []byte(`{"edits":[{"op":"write","path":"empty.txt","content":""}]}`))
	assert.Equal(t, 200, r.StatusCode, "%s", r.body)
	r = ts.call("GET", "/v1/sessions/"+id+"/files/empty.txt", nil)
	assert.Equal(t, 200, r.StatusCode)
	assert.Empty(t, r.body)

	// overwrite replaces the file at "to".
	r = ts.call("POST", edits, []byte(`{"edits":[{"op":"move","path":"src.txt","to":"dst.txt","overwrite":true}]}`))
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	r = ts.call("GET", "/v1/sessions/"+id+"/files/dst.txt", nil)
	assert.Equal(t, "from src\n", string(r.body))
	r = ts.call("GET", "/v1/sessions/"+id+"/files/src.txt", nil)
	assert.Equal(t, 404, r.StatusCode)
}

// TestReviewValidation: a line comment must name a line the file has;
// without an admin token a review is by the local user, named or not.
func TestReviewValidation(t *testing.T) {
	ts := newTestServer(t, "")
	id := ts.newSession()
	r := ts.call("PUT", "/v1/sessions/"+id+"/files/three.txt", []byte("1\n2\n3"))
	require.Equal(t, 201, r.StatusCode, "%s", r.body)
	r = ts.call("POST", "/v1/sessions/"+id+"/changesets", nil)
	require.Equal(t, 201, r.StatusCode, "%s", r.body)
	var cs apitypes.Changeset
	require.NoError(t, json.Unmarshal(r.body, &cs))
	reviews := "/v1/changesets/" + cs.ID + "/reviews"

	for _, line := range []int{0, 4, 999} {
		body := `{"verdict":"comment","author":"lead","comments":[{"path":"three.txt","line":` + strconv.Itoa(line) + `,"body":"?"}]}`
		r := ts.call("POST", reviews, []byte(body))
		assert.Equal(t, 400, r.StatusCode, "line %d: %s", line, r.body)
		assert.Contains(t, r.errorOf(t)["message"], "the file has lines 1 to 3", "line %d", line)
	}
	r = ts.call("POST", reviews, []byte(`{"verdict":"comment","author":"lead","comments":[{"path":"three.txt","line":3,"body":"last"}]}`))
	assert.Equal(t, 201, r.StatusCode, "%s", r.body)

	r = ts.call("PUT", "/v1/repos/r/policy", []byte(`{"required_approvals":1,"allow_checked_out":true}`))
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	r = ts.call("POST", "/v1/changesets/"+cs.ID+"/accept", nil)
	assert.Equal(t, 409, r.StatusCode, "not approved yet: %s", r.body)
	r = ts.call("POST", reviews, []byte(`{"verdict":"approve"}`))
	require.Equal(t, 201, r.StatusCode, "%s", r.body)
	var res apitypes.ReviewResult
	require.NoError(t, json.Unmarshal(r.body, &res))
	assert.Equal(t, "approved", res.Changeset.Status)
	assert.Equal(t, "local user", res.Review.Author, "never empty")
	assert.Equal(t, apitypes.AuthorLocal, res.Review.AuthorKind)
}

// TestEventTypeFilter: ?type= keeps the stored events of the named types,
// comma-separated or repeated.
func TestEventTypeFilter(t *testing.T) {
	ts := newTestServer(t, "")
	id := ts.newSession()
	r := ts.call("PUT", "/v1/sessions/"+id+"/files/a.txt", []byte("a\n"))
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	r = ts.call("POST", "/v1/sessions/"+id+"/checkpoints", []byte(`{}`))
	require.Equal(t, 201, r.StatusCode, "%s", r.body)
	types := func(query string) []string {
		t.Helper()
		r := ts.call("GET", "/v1/sessions/"+id+"/events"+query, nil, "Accept", "application/json")
		require.Equal(t, 200, r.StatusCode, "%s", r.body)
		var evs apitypes.Events
		require.NoError(t, json.Unmarshal(r.body, &evs))
		var out []string
		for _, e := range evs.Events {
			out = append(out, e.Type)
		}
		return out
	}
	assert.Equal(t, []string{"session.state", "file.written", "checkpoint.created"}, types(""))
	assert.Equal(t, []string{"checkpoint.created"}, types("?type=checkpoint.created"))
	assert.Equal(t, []string{"file.written", "checkpoint.created"}, types("?type=checkpoint.created,file.written"))
	assert.Equal(t, []string{"session.state", "checkpoint.created"}, types("?type=session.state&type=checkpoint.created"))
	assert.Empty(t, types("?type=overlap.detected"))
}

// TestDiffAgainstRevision: a diff's against is "base", a checkpoint, or
// any revision resolved as git rev-parse resolves it, and the diff lists
// the files git diff lists between the same trees.
func TestDiffAgainstRevision(t *testing.T) {
	ts := newTestServer(t, "")
	id := ts.newSession()
	r := ts.call("PUT", "/v1/sessions/"+id+"/files/new.txt", []byte("new\n"))
	require.Equal(t, 201, r.StatusCode, "%s", r.body)
	r = ts.call("POST", "/v1/sessions/"+id+"/checkpoints", nil)
	require.Equal(t, 201, r.StatusCode, "%s", r.body)
	tree, _, err := ts.m.Tree(t.Context(), uuid.MustParse(id))
	require.NoError(t, err)
	full := testrepo.Git(t, ts.repo, "rev-parse", "main~1")
	// against, and the revision git compares the session's tree with.
	for _, tc := range [][2]string{
		{"base", "main"}, {"1", tree.String()}, {"main", "main"}, {"main~1", "main~1"}, {"main^", "main^"},
		{"HEAD~2", "HEAD~2"}, {"v1", "v1"}, {"v1^{commit}", "v1"}, {"v0", "v0"}, {"main~1^{tree}", "main~1"},
		{"feature", "feature"}, {full, full}, {full[:10], full},
	} {
		against, rev := tc[0], tc[1]
		r := ts.call("GET", "/v1/sessions/"+id+"/diff?format=json&against="+url.QueryEscape(against), nil)
		if !assert.Equal(t, 200, r.StatusCode, "against %s: %s", against, r.body) {
			continue
		}
		var d apitypes.Diff
		require.NoError(t, json.Unmarshal(r.body, &d))
		// Every path on either side of each file, renames included.
		var got []string
		for _, f := range d.Files {
			for _, p := range []string{f.Path, f.OldPath, f.NewPath} {
				if p != "" && !slices.Contains(got, p) {
					got = append(got, p)
				}
			}
		}
		slices.Sort(got)
		assert.Equal(t, testrepo.Git(t, ts.repo, "diff", "--no-renames", "--name-only", rev, tree.String()), strings.Join(got, "\n"), "against %s", against)
		assert.Equal(t, testrepo.Git(t, ts.repo, "rev-parse", rev+"^{tree}"), d.From, "against %s", against)
	}
	for _, against := range []string{"nope", "main~99"} {
		r := ts.call("GET", "/v1/sessions/"+id+"/diff?against="+url.QueryEscape(against), nil)
		assert.Equal(t, 404, r.StatusCode, "against %s: %s", against, r.body)
		assert.Contains(t, r.errorOf(t)["message"], "no checkpoint or revision", against)
	}
	// A revision that names a blob names something, of the wrong kind.
	r = ts.call("GET", "/v1/sessions/"+id+"/diff?against="+url.QueryEscape("main^{blob}"), nil)
	assert.Equal(t, 400, r.StatusCode, "%s", r.body)
	assert.Contains(t, r.errorOf(t)["message"], `"main^{blob}"`)
}
