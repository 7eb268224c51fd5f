package api

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
)

// TestInvalidUnicodeInJSONPaths: a path in a JSON body with invalid UTF-8
// or an escaped lone surrogate is invalid_path with rule badPathChar, as
// the same bytes are in a URL, instead of a path with U+FFFD in it; other
// strings are bad_request. Nothing is written.
func TestInvalidUnicodeInJSONPaths(t *testing.T) {
	e := newDaemonEnv(t, Config{})
	var s apitypes.Session
	e.must(http.StatusCreated, req{"POST", "/v1/sessions", map[string]any{"repo": "r", "base": "main"}, nil}, &s)
	e.must(http.StatusCreated, req{"PUT", "/v1/sessions/" + s.ID + "/files/new.txt", "new\n", nil}, nil)
	var cs apitypes.Changeset
	e.must(http.StatusCreated, req{"POST", "/v1/sessions/" + s.ID + "/changesets", nil, nil}, &cs)
	asJSON := []string{"Content-Type", "application/json"}
	sess := "/v1/sessions/" + s.ID
	tests := []struct {
		name, method, path, body string
		code                     string // invalid_path (rule badPathChar) or bad_request
	}{
		{"write path, lone high surrogate", "POST", sess + "/edits", `{"edits":[{"op":"write","path":"\ud800","content":"x"}]}`, "invalid_path"},
		{"write path, lone low surrogate", "POST", sess + "/edits", `{"edits":[{"op":"write","path":"a/\udfff.txt","content":"x"}]}`, "invalid_path"},
		{"write path, invalid UTF-8", "POST", sess + "/edits", "{\"edits\":[{\"op\":\"write\",\"path\":\"a\xff.txt\",\"content\":\"x\"}]}", "invalid_path"},
		{"second edit of a batch", "POST", sess + "/edits", `{"edits":[{"op":"write","path":"ok.txt","content":"x"},{"op":"write","path":"\ud800x","content":"x"}]}`, "invalid_path"},
		{"move to", "POST", sess + "/edits", `{"edits":[{"op":"move","path":"new.txt","to":"\ud800"}]}`, "invalid_path"},
		{"copy to", "POST", sess + "/edits", "{\"edits\":[{\"op\":\"copy\",\"path\":\"new.txt\",\"to\":\"\xc0\xae\"}]}", "invalid_path"},
		{"replace glob", "POST", sess + "/edits", `{"edits":[{"op":"replace","glob":"\ud800*","old":"a","new":"b"}]}`, "invalid_path"},
		{"delete path", "POST", sess + "/edits", `{"edits":[{"op":"delete","path":"\udc00"}]}`, "invalid_path"},
		{"write content", "POST", sess + "/edits", `{"edits":[{"op":"write","path":"ok.txt","content":"\ud800"}]}`, "bad_request"},
		{"search prefix", "POST", sess + "/search", `{"pattern":"x","prefix":"\ud800"}`, "invalid_path"},
		{"search glob", "POST", sess + "/search", `{"pattern":"x","glob":"\ud800"}`, "invalid_path"},
		{"search pattern", "POST", sess + "/search", `{"pattern":"\ud800"}`, "bad_request"},
		{"exec cwd", "POST", sess + "/exec", `{"argv":["true"],"cwd":"\ud800"}`, "invalid_path"},
		{"fork policy glob", "POST", sess + "/fork", `{"policy":{"write":["\ud800/**"]}}`, "invalid_path"},
		{"new session policy glob", "POST", "/v1/sessions", `{"repo":"r","policy":{"deny":["\udbff"]}}`, "invalid_path"},
		{"review comment path", "POST", "/v1/changesets/" + cs.ID + "/reviews", `{"verdict":"comment","comments":[{"path":"\ud800","line":1,"body":"x"}]}`, "invalid_path"},
		{"review body", "POST", "/v1/changesets/" + cs.ID + "/reviews", `{"verdict":"comment","body":"\ud800"}`, "bad_request"},
		{"selected file", "POST", "/v1/changesets/" + cs.ID + "/accept", `{"dry_run":true,"select":{"files":["\ud800"]}}`, "invalid_path"},
		{"selected hunks' file", "POST", "/v1/changesets/" + cs.ID + "/accept", `{"dry_run":true,"select":{"hunks":{"\ud800":[0]}}}`, "invalid_path"},
	}
	mutations := func() int {
		ms, err := e.m.Mutations(t.Context(), mustUUID(t, s.ID), 0, 0)
		require.NoError(t, err)
		return len(ms)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := mutations()
			status, body := e.do(req{tt.method, tt.path, tt.body, asJSON})
			require.Equal(t, http.StatusBadRequest, status, "%s", body)
			var got struct{ Error map[string]any }
			require.NoError(t, json.Unmarshal(body, &got))
			assert.Equal(t, tt.code, got.Error["code"], "%s", body)
			if tt.code == "invalid_path" {
				assert.Equal(t, "badPathChar", got.Error["rule"])
				assert.Contains(t, got.Error["path"], "\ufffd")
			}
			assert.Equal(t, before, mutations(), "nothing written")
		})
	}
	// The same bytes in a URL: the same rule.
	status, body := e.do(req{"PUT", sess + "/files/a%FF.txt", "x", nil})
	assert.Equal(t, http.StatusBadRequest, status)
	var got struct{ Error map[string]any }
	require.NoError(t, json.Unmarshal(body, &got))
	assert.Equal(t, "badPathChar", got.Error["rule"])
	// A valid pair of surrogates is one character, and fine.
	e.must(http.StatusOK, req{"POST", sess + "/edits", `{"edits":[{"op":"write","path":"\ud83d\ude00.txt","content":"x"}]}`, asJSON}, nil)
	data, _, err := e.m.Read(t.Context(), mustUUID(t, s.ID), "\U0001F600.txt", 0, -1)
	require.NoError(t, err)
	assert.Equal(t, "x", string(data))
}
