package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestGitmodulesOverHTTP sends the .gitmodules bodies that break
// `git fsck --strict` (issue 12 §3) as a PUT and in a batch: each is 400
// invalid_path with git fsck's rule, nothing changes, and git fsck --strict
// stays clean on the repository.
func TestGitmodulesOverHTTP(t *testing.T) {
	plainRunOnly(t, ".gitmodules checks in the daemon's binary")
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	d := newDaemon(t, stores[0], "--repo", "r="+repo)
	s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	_, err = d.C.WriteFile(ctx, s.ID, ".gitmodules", []byte("[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib.git\n"), client.WriteOptions{})
	require.NoError(t, err, "a valid .gitmodules is written")

	bodies := []struct{ name, body, rule string }{
		{"url option", "[submodule \"x\"]\n\tpath = x\n\turl = --upload-pack=touch$IFS/tmp/pwn\n", "gitmodulesUrl"},
		{"name escape", "[submodule \"../../evil\"]\n\tpath = evil\n\turl = https://example.com/evil.git\n", "gitmodulesName"},
		{"path option", "[submodule \"z\"]\n\tpath = -z\n\turl = https://example.com/z.git\n", "gitmodulesPath"},
		{"update command", "[submodule \"z\"]\n\tpath = z\n\tupdate = !sh\n", "gitmodulesUpdate"},
		{"unparsable", "[submodule \"z\"\n", "gitmodulesParse"},
	}
	do := func(method, path string, body []byte) (int, map[string]any) {
		t.Helper()
		r, err := http.NewRequestWithContext(ctx, method, d.URL+path, bytes.NewReader(body))
		require.NoError(t, err)
		if method == http.MethodPost {
			r.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(r)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var e struct {
			Error map[string]any `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		return resp.StatusCode, e.Error
	}
	before, err := d.C.GetSession(ctx, s.ID)
	require.NoError(t, err)
	for _, b := range bodies {
		t.Run(b.name, func(t *testing.T) {
			for _, p := range []string{".gitmodules", "vendor/.gitmodules"} {
				status, e := do("PUT", "/v1/sessions/"+s.ID+"/files/"+p, []byte(b.body))
				assert.Equal(t, 400, status, "%v", e)
				assert.Equal(t, "invalid_path", e["code"])
				assert.Equal(t, b.rule, e["rule"])
				assert.Equal(t, p, e["path"])
			}
			batch, _ := json.Marshal(map[string]any{"edits": []map[string]any{
				{"op": "write", "path": "staged.txt", "content": b.body},
				{"op": "copy", "path": "staged.txt", "to": "sub/.gitmodules"},
			}})
			status, e := do("POST", "/v1/sessions/"+s.ID+"/edits", batch)
			assert.Equal(t, 400, status, "%v", e)
			assert.Equal(t, b.rule, e["rule"])
		})
	}
	after, err := d.C.GetSession(ctx, s.ID)
	require.NoError(t, err)
	assert.Equal(t, before.Seq, after.Seq, "nothing was recorded")

	cmd := exec.Command("git", "fsck", "--strict", "--no-dangling")
	cmd.Dir, cmd.Env = repo, testrepo.Env()
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "git fsck --strict: %s", out)
	assert.NotContains(t, string(out), "gitmodules")
}
