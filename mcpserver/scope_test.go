package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// toolRevisionInputs classifies every tool by the inputs that name a
// revision ("revision") or a checkpoint of the session ("checkpoint").
// A tool missing here fails TestToolRevisionScope, as does an input whose
// name or description speaks of revisions or checkpoints and is not
// listed; every input listed is walked.
var toolRevisionInputs = map[string]map[string]string{
	"read_file": nil, "read_files": nil, "write_file": nil, "edit_file": nil, "delete_path": nil, "move_path": nil,
	"list_dir": nil, "glob": nil, "grep": nil, "status": nil, "log": nil, "run": nil,
	"service_start": nil, "service_logs": nil, "service_stop": nil,
	"checkpoint": nil, // a label
	"submit":     nil, // target_branch names a branch to write, not a revision to read
	"diff":       {"against": "revision"},
	"rollback":   {"checkpoint": "checkpoint"},
	"rebase":     {"onto": "revision"}, // a commit: a tree is a bad request
}

// revisionish reports whether a tool input looks like it names a revision
// or a checkpoint.
func revisionish(name, description string) bool {
	switch name {
	case "against", "onto", "base", "checkpoint", "rev", "revision", "commit", "expected_head", "ref":
		return true
	}
	d := strings.ToLower(description)
	return strings.Contains(d, "revision") || strings.Contains(d, "commit id")
}

// TestToolRevisionScope: through MCP over HTTP with a session's token,
// every tool input that names a revision or a checkpoint refuses another
// session's refs, its checkpoint's commit (full and abbreviated), its
// trees and its checkpoints as not_found, and takes the session's own and
// the branches'; with the admin token the other session's revisions
// resolve.
func TestToolRevisionScope(t *testing.T) {
	plainRunOnly(t, "a table of every revision input, one call at a time")
	e := newEnv(t)
	ctx := context.Background()
	srv := httptest.NewServer(e.api)
	t.Cleanup(srv.Close)
	b := e.newSession(t, apitypes.CreateSessionRequest{})
	_, err := e.admin.WriteFile(ctx, b.ID, "secret.txt", []byte("b's unaccepted secret\n"), client.WriteOptions{})
	require.NoError(t, err)
	bcp, err := e.admin.Checkpoint(ctx, b.ID, "", "")
	require.NoError(t, err)
	_, err = e.admin.WriteFile(ctx, b.ID, "secret.txt", []byte("b's unsaved secret\n"), client.WriteOptions{})
	require.NoError(t, err)
	bLive := liveTree(t, e, b.ID)
	bRefs := "refs/sessions/" + b.ID
	foreign := map[string][]string{
		"revision": {bRefs + "/head", bRefs + "/live", bRefs + "/checkpoints/1", "sessions/" + b.ID + "/head",
			bcp.Commit, bcp.Commit[:7], bcp.Commit[:12] + "^{commit}", bcp.Tree, bLive, bLive[:10]},
		"checkpoint": {bcp.Commit, bcp.ID},
	}
	head := testrepo.Git(t, e.repoDir, "rev-parse", "HEAD")

	a := e.newSession(t, apitypes.CreateSessionRequest{})
	cs, err := connectHTTP(t, srv.URL+"/mcp/sessions/"+a.ID, a.Token)
	require.NoError(t, err)
	adminCS, err := connectHTTP(t, srv.URL+"/mcp/sessions/"+a.ID, adminToken)
	require.NoError(t, err)
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)

	walked := 0
	for _, tool := range tools.Tools {
		inputs, classified := toolRevisionInputs[tool.Name]
		if !assert.True(t, classified, "tool %s: say in toolRevisionInputs which revisions it takes", tool.Name) {
			continue
		}
		raw, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		var schema struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		require.NoError(t, json.Unmarshal(raw, &schema))
		for name, p := range schema.Properties {
			if revisionish(name, p.Description) {
				assert.Contains(t, inputs, name, "tool %s: input %s looks like a revision; classify it", tool.Name, name)
			}
		}
		for name, kind := range inputs {
			require.Contains(t, schema.Properties, name, "tool %s has no input %s", tool.Name, name)
			walked++
			t.Run(tool.Name+"/"+name, func(t *testing.T) {
				_, err := e.admin.WriteFile(ctx, a.ID, "mine.txt", []byte("a's work "+tool.Name+"\n"), client.WriteOptions{})
				require.NoError(t, err)
				acp, err := e.admin.Checkpoint(ctx, a.ID, "", "")
				require.NoError(t, err)
				_, err = e.admin.WriteFile(ctx, a.ID, "mine.txt", []byte("a's unsaved work\n"), client.WriteOptions{})
				require.NoError(t, err)
				aRefs := "refs/sessions/" + a.ID
				own := map[string][]string{
					"revision":   {aRefs + "/head", aRefs + "/live", acp.Commit, acp.Commit[:9], liveTree(t, e, a.ID), "main", "HEAD", head[:8]},
					"checkpoint": {acp.Commit, acp.ID},
				}
				for _, v := range foreign[kind] {
					text, code, _ := fails(t, cs, tool.Name, map[string]any{name: v})
					assert.Equal(t, "not_found", code, "%s=%s with a's token: %s", name, v, text)
					assert.NotContains(t, text, "secret", "%s=%s", name, v)
					switch {
					case tool.Name == "rebase" && slices.Contains([]string{bRefs + "/live", bcp.Tree, bLive, bLive[:10]}, v):
						// a tree: not a commit to rebase onto
					case tool.Name == "rebase":
						ok(t, adminCS, tool.Name, map[string]any{name: v})
						// Back where a was: b's files leave with b's commit.
						ok(t, adminCS, tool.Name, map[string]any{name: "main"})
					case kind == "revision":
						ok(t, adminCS, tool.Name, map[string]any{name: v})
					}
				}
				_, _, err = e.admin.ReadFile(ctx, a.ID, "secret.txt")
				assert.Error(t, err, "b's file never reached a")
				for _, v := range own[kind] {
					if tool.Name == "rebase" {
						if v == liveTree(t, e, a.ID) || v == aRefs+"/live" {
							continue // a tree, not a commit
						}
						// Found: a's own checkpoint holds another mine.txt,
						// which conflicts (and changes nothing).
						if text, isErr, data := call(t, cs, tool.Name, map[string]any{name: v}); isErr {
							assert.Equal(t, "conflict", data["error"].(map[string]any)["code"], "%s=%s: %s", name, v, text)
						}
						continue
					}
					ok(t, cs, tool.Name, map[string]any{name: v})
				}
			})
		}
	}
	assert.Equal(t, 3, walked, "every input of toolRevisionInputs was walked")
}

func liveTree(t testing.TB, e *env, id string) string {
	t.Helper()
	tree, _, err := e.m.Tree(context.Background(), uuid.MustParse(id))
	require.NoError(t, err)
	return tree.String()
}
