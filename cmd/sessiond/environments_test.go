package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// envRepo is a repository whose .gitignore ignores deps/, the directory
// its setup fills.
func envRepo(t *testing.T) string {
	t.Helper()
	dir := testrepo.Init(t)
	for p, c := range map[string]string{".gitignore": "deps/\n", "main.txt": "main\n", "deps.lock": "v1\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644))
	}
	testrepo.Git(t, dir, "add", "-A")
	testrepo.Git(t, dir, "commit", "-q", "-m", "base")
	return dir
}

// TestEnvironmentsOverHTTP: the configuration through PUT (bad input
// refused naming the field, or the file and position), a session created
// with prepare builds the layer, its commands and another session's run
// on it (the result names it), GET lists it and POST rebuild drops it;
// the CLI's --config names the file and position of a bad file.
func TestEnvironmentsOverHTTP(t *testing.T) {
	plainRunOnly(t, "environments built in namespaces by the daemon's binary")
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			ctx := t.Context()
			d := newDaemon(t, st, "--repo", "r="+envRepo(t))
			secret := "include-" + randHex(t)

			for _, tc := range []struct {
				name string
				req  apitypes.RepoEnvironmentRequest
				want string
			}{
				{"empty argv", apitypes.RepoEnvironmentRequest{EnvironmentConfig: apitypes.EnvironmentConfig{Setup: []apitypes.EnvironmentStep{{Argv: []string{}}}}}, "setup[0]"},
				{"bad glob", apitypes.RepoEnvironmentRequest{EnvironmentConfig: apitypes.EnvironmentConfig{Key: []string{"ok", "[x"}}}, "key[1]"},
				{"bad secret name", apitypes.RepoEnvironmentRequest{EnvironmentConfig: apitypes.EnvironmentConfig{Include: []apitypes.EnvironmentInclude{{Path: "a", Secret: "no-good"}}}}, "include[0].secret"},
				{"file", apitypes.RepoEnvironmentRequest{File: &apitypes.EnvironmentFile{Name: "environment.json", Content: "{\n  \"setup\": [\"a\",]\n}"}}, "environment.json: line 2, column 18"},
				{"yaml file", apitypes.RepoEnvironmentRequest{File: &apitypes.EnvironmentFile{Name: "environment.yaml", Content: "setup:\n  - [a\n"}}, "environment.yaml: line"},
			} {
				_, err := d.C.SetRepoEnvironment(ctx, "r", tc.req)
				require.Error(t, err, tc.name)
				assert.Equal(t, "bad_request", apiCode(err), "%s: %v", tc.name, err)
				assert.Contains(t, err.Error(), tc.want, tc.name)
			}

			e, err := d.C.SetRepoEnvironment(ctx, "r", apitypes.RepoEnvironmentRequest{
				Secrets: map[string]*string{"TOKEN": &secret},
				EnvironmentConfig: apitypes.EnvironmentConfig{
					Setup:   []apitypes.EnvironmentStep{{Command: "mkdir -p deps && cat deps.lock > deps/installed && echo installing"}},
					Key:     []string{"deps.lock"},
					Include: []apitypes.EnvironmentInclude{{Path: "deps/token", Secret: "TOKEN"}},
				}})
			require.NoError(t, err)
			require.Len(t, e.Setup, 1)
			got, err := d.C.RepoEnvironment(ctx, "r")
			require.NoError(t, err)
			assert.Equal(t, e, got)

			s1, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Prepare: true})
			require.NoError(t, err)
			require.NotNil(t, s1.Environment)
			assert.Equal(t, "ready", s1.Environment.Status, "%+v", s1.Environment)
			assert.True(t, s1.Environment.Built)
			res, err := d.C.Exec(ctx, s1.ID, apitypes.ExecRequest{Command: "cat deps/installed deps/token"}, nil)
			require.NoError(t, err)
			assert.Equal(t, "v1\n***", res.Stdout, "the include's secret is masked")
			require.NotNil(t, res.Environment)
			assert.Equal(t, s1.Environment.Key, res.Environment.Key)
			assert.False(t, res.Environment.Built)
			assert.Empty(t, res.Changes)

			s2, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r"})
			require.NoError(t, err)
			res, err = d.C.Exec(ctx, s2.ID, apitypes.ExecRequest{Command: "cat deps/installed && echo v2 > deps.lock"}, nil)
			require.NoError(t, err)
			assert.Equal(t, "v1\n", res.Stdout)
			assert.False(t, res.Environment.Built)
			res, err = d.C.Exec(ctx, s2.ID, apitypes.ExecRequest{Argv: []string{"true"}}, nil)
			require.NoError(t, err)
			assert.True(t, res.EnvironmentStale)

			// MCP run: the same exec, its result carrying the layer.
			var logs lockedBuffer
			cs := mcpClient(t, &logs, "--server", d.URL, "--token", s1.Token, "--session", s1.ID)
			text, data := toolOK(t, cs, "run", map[string]any{"command": "cat deps/installed"})
			assert.Contains(t, text, "v1")
			envOut, _ := data["environment"].(map[string]any)
			require.NotNil(t, envOut, "%v", data)
			assert.Equal(t, "ready", envOut["status"])
			assert.Equal(t, s1.Environment.Key, envOut["key"])

			ls, err := d.C.Environments(ctx, "r")
			require.NoError(t, err)
			require.Len(t, ls.Layers, 1)
			l := ls.Layers[0]
			assert.Equal(t, "ready", l.Status)
			assert.Equal(t, int64(2), l.Files)
			assert.Equal(t, res.Environment.Key, l.Key)
			assert.NotContains(t, rawGet(t, d, "/v1/repos/r/environments"), secret)

			rb, err := d.C.RebuildEnvironments(ctx, "r")
			require.NoError(t, err)
			assert.Equal(t, 1, rb.Dropped)
			res, err = d.C.Exec(ctx, s1.ID, apitypes.ExecRequest{Argv: []string{"cat", "deps/installed"}}, nil)
			require.NoError(t, err)
			assert.True(t, res.Environment.Built, "built again after rebuild")
			_, err = d.C.Environments(ctx, "nosuch")
			assert.Equal(t, "not_found", apiCode(err), "%v", err)

			// The CLI reads a file and the daemon names its position.
			clientEnv(t, d, "")
			bad := filepath.Join(t.TempDir(), "environment.yaml")
			require.NoError(t, os.WriteFile(bad, []byte("setup:\n  - make\nkey: [\n"), 0o644))
			r := runCLI(t, "", "repo", "env", "set", "r", "--config", bad)
			assert.NotEqual(t, exitOK, r.code)
			assert.Contains(t, r.stderr, "environment.yaml: line")
			r = runCLI(t, "", "session", "new", "--repo", "r", "--prepare")
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.Contains(t, r.stdout, "# environment ready ")
			r = runCLI(t, "", "repo", "env", "layers", "r")
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.Contains(t, r.stdout, "ready")
		})
	}
}
