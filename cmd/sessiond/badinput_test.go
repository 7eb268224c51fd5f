package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestBadInput sends every kind of bad request over HTTP and checks the
// status, the code and that nothing changed.
func TestBadInput(t *testing.T) {
	plainRunOnly(t, "bad requests to the daemon's binary")
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	const admin = "admin-secret"
	d := newDaemon(t, stores[0], "--repo", "r="+repo, "--admin-token", admin,
		"--max-body-bytes", "4096", "--max-file-bytes", "2048")
	c := d.C
	s, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main",
		Policy: &apitypes.Policy{Deny: []string{"secrets/**"}, Write: []string{"**"}}})
	require.NoError(t, err)
	other, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	ro, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", Mode: "read_only"})
	require.NoError(t, err)
	sc := c.WithToken(s.Token)
	_, err = sc.WriteFile(ctx, s.ID, "kept.txt", []byte("kept\n"), client.WriteOptions{})
	require.NoError(t, err)

	// state is everything a rejected request must leave alone.
	state := func(id string) string {
		t.Helper()
		ss, err := c.GetSession(ctx, id)
		require.NoError(t, err)
		tree, err := c.Tree(ctx, id, client.TreeOptions{OnlyModified: true, Recursive: true})
		require.NoError(t, err)
		b, _ := json.Marshal([]any{ss.Seq, ss.Head, ss.State, tree})
		return string(b)
	}

	files := func(id, p string) string { return "/v1/sessions/" + id + "/files/" + p }
	long := strings.Repeat("x", 256)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(bytes.Repeat([]byte("a"), 10_000)) // small on the wire, over the limit inflated
	zw.Close()

	type req struct {
		name    string
		method  string
		path    string
		token   string // default: the session's token
		headers map[string]string
		body    []byte
		status  int
		code    string
		rule    string
		session string // whose state must not change; default s
	}
	sid := s.ID
	cases := []req{
		// The path rules.
		{name: "empty path", method: "PUT", path: files(sid, ""), status: 400, code: "invalid_path", rule: "fullPathname"},
		{name: "trailing slash", method: "PUT", path: files(sid, "a/"), status: 400, code: "invalid_path", rule: "fullPathname"},
		{name: "double slash", method: "PUT", path: files(sid, "a//b"), status: 400, code: "invalid_path", rule: "fullPathname"},
		{name: "dot", method: "PUT", path: files(sid, "a/./b"), status: 400, code: "invalid_path", rule: "hasDot"},
		{name: "dotdot", method: "PUT", path: files(sid, "a/../b"), status: 400, code: "invalid_path", rule: "hasDotdot"},
		{name: "escaped dotdot", method: "GET", path: files(sid, "%2E%2E/etc/passwd"), status: 400, code: "invalid_path", rule: "hasDotdot"},
		{name: "dotgit", method: "PUT", path: files(sid, ".git/config"), status: 400, code: "invalid_path", rule: "hasDotgit"},
		{name: "dotgit case", method: "PUT", path: files(sid, "x/.GiT/hooks"), status: 400, code: "invalid_path", rule: "hasDotgit"},
		{name: "dotgit ntfs short name", method: "PUT", path: files(sid, "git~1/config"), status: 400, code: "invalid_path", rule: "hasDotgit"},
		{name: "dotgit hfs ignorable", method: "PUT", path: files(sid, ".g%E2%80%8Cit/config"), status: 400, code: "invalid_path", rule: "hasDotgit"},
		{name: "NUL", method: "PUT", path: files(sid, "a%00b"), status: 400, code: "invalid_path", rule: "badPathChar"},
		{name: "control char", method: "PUT", path: files(sid, "a%01b"), status: 400, code: "invalid_path", rule: "badPathChar"},
		{name: "backslash", method: "PUT", path: files(sid, "a%5Cb"), status: 400, code: "invalid_path", rule: "badPathChar"},
		{name: "invalid UTF-8", method: "PUT", path: files(sid, "a%FFb"), status: 400, code: "invalid_path", rule: "badPathChar"},
		{name: "long component", method: "PUT", path: files(sid, long), status: 400, code: "invalid_path", rule: "largePathname"},
		{name: "write below a file", method: "PUT", path: files(sid, "README.md/x"), status: 400, code: "invalid_path", rule: "fileDirectoryCollision"},
		{name: "file over a directory", method: "PUT", path: files(sid, "src"), status: 400, code: "invalid_path", rule: "fileDirectoryCollision"},
		{name: "bad mode", method: "PUT", path: files(sid, "m.txt"), headers: map[string]string{"X-Sessiond-Mode": "100600"}, status: 400, code: "invalid_path", rule: "badFilemode"},
		{name: "gitlink mode", method: "PUT", path: files(sid, "m.txt"), headers: map[string]string{"X-Sessiond-Mode": "160000"}, status: 400, code: "invalid_path", rule: "badFilemode"},
		{name: "gitmodules symlink", method: "PUT", path: files(sid, ".gitmodules"), headers: map[string]string{"X-Sessiond-Mode": "120000"}, body: []byte("target"), status: 400, code: "invalid_path", rule: "gitmodulesSymlink"},
		{name: "case collision", method: "PUT", path: files(sid, "readme.md"), status: 400, code: "invalid_path", rule: "caseCollision"},
		{name: "path rule in a batch", method: "POST", path: "/v1/sessions/" + sid + "/edits", body: []byte(`{"edits":[{"op":"write","path":"ok.txt","content":"x"},{"op":"write","path":"a/../b","content":"x"}]}`), status: 400, code: "invalid_path", rule: "hasDotdot"},
		{name: "path rule in a listing", method: "GET", path: "/v1/sessions/" + sid + "/tree?prefix=a/../b", status: 400, code: "invalid_path", rule: "hasDotdot"},
		// Sizes.
		{name: "body over the limit", method: "PUT", path: files(sid, "big.bin"), body: bytes.Repeat([]byte("a"), 5000), status: 413, code: "too_large"},
		{name: "gzip body over the limit inflated", method: "PUT", path: files(sid, "big.bin"), headers: map[string]string{"Content-Encoding": "gzip"}, body: gz.Bytes(), status: 413, code: "too_large"},
		{name: "file over the limit", method: "PUT", path: files(sid, "big.bin"), body: bytes.Repeat([]byte("a"), 3000), status: 413, code: "too_large"},
		{name: "batch content over the limit", method: "POST", path: "/v1/sessions/" + sid + "/edits", body: []byte(`{"edits":[{"op":"write","path":"big.bin","content":"` + strings.Repeat("a", 3000) + `"}]}`), status: 413, code: "too_large"},
		// JSON.
		{name: "malformed JSON", method: "POST", path: "/v1/sessions/" + sid + "/edits", body: []byte(`{"edits":[`), status: 400, code: "bad_request"},
		{name: "unknown field", method: "POST", path: "/v1/sessions/" + sid + "/edits", body: []byte(`{"edits":[{"op":"write","path":"x","content":"x"}],"bogus":1}`), status: 400, code: "bad_request"},
		{name: "wrong type", method: "POST", path: "/v1/sessions/" + sid + "/edits", body: []byte(`{"dry_run":"yes","edits":[]}`), status: 400, code: "bad_request"},
		{name: "trailing data", method: "POST", path: "/v1/sessions/" + sid + "/checkpoints", body: []byte(`{} {}`), status: 400, code: "bad_request"},
		{name: "unknown op", method: "POST", path: "/v1/sessions/" + sid + "/edits", body: []byte(`{"edits":[{"op":"chmod","path":"x"}]}`), status: 400, code: "bad_request"},
		{name: "negative exec timeout", method: "POST", path: "/v1/sessions/" + sid + "/exec", body: []byte(`{"argv":["true"],"timeout_seconds":-5}`), status: 400, code: "bad_request"},
		{name: "bad regexp", method: "POST", path: "/v1/sessions/" + sid + "/search", body: []byte(`{"pattern":"("}`), status: 400, code: "bad_request"},
		// Tokens.
		{name: "no token", method: "PUT", path: files(sid, "x.txt"), token: "-", status: 401, code: "unauthorized"},
		{name: "wrong token", method: "PUT", path: files(sid, "x.txt"), token: "nope", status: 401, code: "unauthorized"},
		{name: "forged session token", method: "PUT", path: files(sid, "x.txt"), token: "sst." + sid + ".AAAA", status: 401, code: "unauthorized"},
		{name: "another session's token", method: "PUT", path: files(sid, "x.txt"), token: other.Token, status: 403, code: "forbidden"},
		{name: "session token on an admin route", method: "POST", path: "/v1/sessions", token: s.Token, body: []byte(`{"repo":"r"}`), status: 403, code: "forbidden"},
		// Policy and mode.
		{name: "policy-denied write", method: "PUT", path: files(sid, "secrets/key"), status: 403, code: "forbidden"},
		{name: "policy-denied read", method: "GET", path: files(sid, "secrets/key"), status: 403, code: "forbidden"},
		{name: "policy-denied batch", method: "POST", path: "/v1/sessions/" + sid + "/edits", body: []byte(`{"edits":[{"op":"write","path":"ok.txt","content":"x"},{"op":"copy","path":"kept.txt","to":"secrets/copy"}]}`), status: 403, code: "forbidden"},
		{name: "read-only session", method: "PUT", path: files(ro.ID, "x.txt"), token: ro.Token, status: 403, code: "forbidden", session: ro.ID},
		{name: "read-only batch", method: "POST", path: "/v1/sessions/" + ro.ID + "/edits", token: ro.Token, body: []byte(`{"edits":[{"op":"write","path":"x","content":"x"}]}`), status: 403, code: "forbidden", session: ro.ID},
		// Preconditions and missing things.
		{name: "stale If-Match", method: "PUT", path: files(sid, "kept.txt"), headers: map[string]string{"If-Match": `"` + strings.Repeat("0", 39) + `1"`}, status: 412, code: "precondition_failed"},
		{name: "create over a file", method: "PUT", path: files(sid, "kept.txt"), headers: map[string]string{"If-None-Match": "*"}, status: 412, code: "precondition_failed"},
		{name: "missing file", method: "GET", path: files(sid, "no/such"), status: 404, code: "not_found"},
		{name: "missing session", method: "GET", path: "/v1/sessions/00000000-0000-0000-0000-000000000000", token: admin, status: 404, code: "not_found"},
		{name: "unknown checkpoint", method: "POST", path: "/v1/sessions/" + sid + "/rollback", body: []byte(`{"checkpoint":"7"}`), status: 404, code: "not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := tc.session
			if target == "" {
				target = sid
			}
			before := state(target)
			r, err := http.NewRequestWithContext(ctx, tc.method, d.URL+tc.path, bytes.NewReader(tc.body))
			require.NoError(t, err)
			if tc.method == http.MethodPost {
				r.Header.Set("Content-Type", "application/json")
			}
			switch tc.token {
			case "":
				r.Header.Set("Authorization", "Bearer "+s.Token)
			case "-":
			default:
				r.Header.Set("Authorization", "Bearer "+tc.token)
			}
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(r)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, tc.status, resp.StatusCode, "%s", body)
			var e struct {
				Error map[string]any `json:"error"`
			}
			require.NoError(t, json.Unmarshal(body, &e), "%s", body)
			assert.Equal(t, tc.code, e.Error["code"], "%s", body)
			assert.NotEmpty(t, e.Error["message"])
			if tc.rule != "" {
				assert.Equal(t, tc.rule, e.Error["rule"], "%s", body)
			}
			assert.Equal(t, before, state(target), "a rejected request changes nothing")
		})
	}

	// Hidden paths stay hidden from listings and search.
	tree, err := sc.Tree(ctx, sid, client.TreeOptions{Recursive: true})
	require.NoError(t, err)
	for _, e := range tree {
		assert.False(t, strings.HasPrefix(e.Path, "secrets"), e.Path)
	}
}
