package mcpserver_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/mcpserver"
)

// TestInvalidUnicodeArguments: a path in a tool's input that is invalid
// UTF-8 or an escaped lone surrogate is invalid_path (badPathChar), as the
// API answers, never a path with U+FFFD in it; another string is
// bad_request; nothing is written. In memory and over HTTP.
func TestInvalidUnicodeArguments(t *testing.T) {
	plainRunOnly(t, "a table of bad strings, one call at a time")
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{})
	srv := httptest.NewServer(e.api)
	t.Cleanup(srv.Close)
	overHTTP, err := connectHTTP(t, srv.URL+"/mcp/sessions/"+s.ID, s.Token)
	require.NoError(t, err)
	tests := []struct {
		tool, args, code string
	}{
		{"read_file", `{"path":"\ud800"}`, "invalid_path"},
		{"read_files", `{"paths":["go.mod","\udc00"]}`, "invalid_path"},
		{"write_file", `{"path":"a\ud800.txt","content":"x"}`, "invalid_path"},
		{"write_file", "{\"path\":\"a\xff.txt\",\"content\":\"x\"}", "invalid_path"},
		{"write_file", `{"path":"ok.txt","content":"\ud800"}`, "bad_request"},
		{"edit_file", `{"path":"\ud800","edits":[{"old_text":"a","new_text":"b"}]}`, "invalid_path"},
		{"delete_path", `{"path":"\ud800"}`, "invalid_path"},
		{"move_path", `{"from":"go.mod","to":"\ud800"}`, "invalid_path"},
		{"move_path", `{"from":"\udbff\udbff","to":"x"}`, "invalid_path"},
		{"list_dir", `{"path":"\ud800"}`, "invalid_path"},
		{"glob", `{"pattern":"\ud800*"}`, "invalid_path"},
		{"grep", `{"pattern":"x","glob":"\ud800"}`, "invalid_path"},
		{"diff", `{"paths":["\ud800"]}`, "invalid_path"},
		{"run", `{"command":"true","cwd":"\ud800"}`, "invalid_path"},
		{"submit", `{"intent":"\ud800"}`, "bad_request"},
	}
	for name, cs := range map[string]*mcp.ClientSession{"in memory": e.connect(t, s, mcpserver.Options{}), "http": overHTTP} {
		t.Run(name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.tool, func(t *testing.T) {
					res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tt.tool, Arguments: json.RawMessage(tt.args)})
					require.NoError(t, err)
					require.True(t, res.IsError, "%v", res.Content)
					raw, err := json.Marshal(res.StructuredContent)
					require.NoError(t, err)
					var data struct{ Error map[string]any }
					require.NoError(t, json.Unmarshal(raw, &data))
					assert.Equal(t, tt.code, data.Error["code"], "%s", raw)
					if tt.code == "invalid_path" {
						assert.Equal(t, "badPathChar", data.Error["rule"])
					}
				})
			}
		})
	}
	got, err := e.admin.GetSession(t.Context(), s.ID)
	require.NoError(t, err)
	assert.Zero(t, got.Seq, "nothing was written")
}
