package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestSecretsOverHTTP: a repository's secrets reach commands as variables
// and leave sessiond nowhere: masked in exec output (the result, the SSE
// stream, a value split across two writes, MCP run), refused in a file
// written through the API or by a command, absent from every answer, the
// daemon's log, the event stream and the database file. Plain variables
// are shown and reach commands, a request's own winning; bad names and
// values are refused and change nothing.
func TestSecretsOverHTTP(t *testing.T) {
	plainRunOnly(t, "commands in namespaces with secrets in the daemon's binary")
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			ctx := t.Context()
			repo := testrepo.Build(t, "small")
			d := newDaemon(t, st, "--repo", "r="+repo, "--log-level", "debug")
			value := "s3cr3t-" + randHex(t)

			e, err := d.C.SetRepoEnvironment(ctx, "r", apitypes.RepoEnvironmentRequest{
				Env: map[string]string{"GREETING": "hello", "SHARED": "repo"}, Secrets: map[string]*string{"API_TOKEN": &value}})
			require.NoError(t, err)
			assert.Equal(t, apitypes.RepoEnvironment{Env: map[string]string{"GREETING": "hello", "SHARED": "repo"}, Secrets: []string{"API_TOKEN"}}, e)
			body := rawGet(t, d, "/v1/repos/r/environment")
			assert.NotContains(t, body, value)
			assert.Contains(t, body, `"API_TOKEN"`)

			// Bad input: 400 naming the field, 413 over 64 KiB; nothing changes.
			big := strings.Repeat("x", 64<<10+1)
			for _, tc := range []struct {
				name string
				req  apitypes.RepoEnvironmentRequest
				code string
				want string
			}{
				{"secret name", apitypes.RepoEnvironmentRequest{Secrets: map[string]*string{"1BAD": &value}}, "bad_request", "secrets"},
				{"secret name with a dash", apitypes.RepoEnvironmentRequest{Secrets: map[string]*string{"A-B": &value}}, "bad_request", "secrets"},
				{"env name", apitypes.RepoEnvironmentRequest{Env: map[string]string{"A=B": "x"}}, "bad_request", "env"},
				{"secret too large", apitypes.RepoEnvironmentRequest{Secrets: map[string]*string{"BIG": &big}}, "too_large", "secrets.BIG"},
			} {
				_, err := d.C.SetRepoEnvironment(ctx, "r", tc.req)
				require.Error(t, err, tc.name)
				assert.Equal(t, tc.code, apiCode(err), "%s: %v", tc.name, err)
				assert.Contains(t, err.Error(), tc.want, tc.name)
				assert.NotContains(t, err.Error(), value, tc.name)
			}
			_, err = d.C.SetRepoEnvironment(ctx, "nosuch", apitypes.RepoEnvironmentRequest{})
			assert.Equal(t, "not_found", apiCode(err), "%v", err)
			got, err := d.C.RepoEnvironment(ctx, "r")
			require.NoError(t, err)
			assert.Equal(t, e, got, "refused input changed the environment")

			s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", Env: map[string]string{"SESSION_VAR": "sv", "SHARED": "session"}})
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"SESSION_VAR": "sv", "SHARED": "session"}, s.Env)
			_, err = d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Env: map[string]string{"no good": "x"}})
			assert.Equal(t, "bad_request", apiCode(err), "%v", err)

			// Variables reach the command; the secret is masked in the
			// result and the stream, also when written in two pieces.
			var streamed strings.Builder
			res, err := d.C.Exec(ctx, s.ID, apitypes.ExecRequest{
				Command: `echo "$GREETING $SESSION_VAR $SHARED"; echo "token=$API_TOKEN"; echo "$API_TOKEN" >&2
head=${API_TOKEN%????}; printf '%s' "$head"; sleep 0.3; printf '%s\n' "${API_TOKEN#"$head"}"; echo "${#API_TOKEN}"`,
			}, func(stream string, p []byte) {
				if stream == "stdout" {
					streamed.Write(p)
				}
			})
			require.NoError(t, err)
			require.Equal(t, 0, res.ExitCode, res.Stderr)
			want := "hello sv session\ntoken=***\n***\n" + strconv.Itoa(len(value)) + "\n"
			assert.Equal(t, want, res.Stdout)
			assert.Equal(t, want, streamed.String())
			assert.Equal(t, "***\n", res.Stderr)

			// A request's own variables win.
			res, err = d.C.Exec(ctx, s.ID, apitypes.ExecRequest{Argv: []string{"sh", "-c", `echo "$GREETING"`}, Env: map[string]string{"GREETING": "request"}}, nil)
			require.NoError(t, err)
			assert.Equal(t, "request\n", res.Stdout)
			// A value in argv is masked in what is recorded and returned.
			res, err = d.C.Exec(ctx, s.ID, apitypes.ExecRequest{Argv: []string{"echo", value}}, nil)
			require.NoError(t, err)
			assert.Equal(t, "***\n", res.Stdout)

			// Written into a file: refused through the API and by a command.
			_, err = d.C.WriteFile(ctx, s.ID, "leak.txt", []byte("key = "+value+"\n"), client.WriteOptions{})
			require.Error(t, err)
			var ce *client.Error
			require.True(t, errors.As(err, &ce), "%v", err)
			assert.Equal(t, "secret", ce.Details["rule"])
			assert.NotContains(t, err.Error(), value)
			res, err = d.C.Exec(ctx, s.ID, apitypes.ExecRequest{Command: `echo "key=$API_TOKEN" > leak.txt; echo fine > fine.txt`}, nil)
			require.NoError(t, err)
			require.Len(t, res.Rejected, 1)
			assert.Equal(t, "leak.txt", res.Rejected[0].Path)
			assert.Equal(t, "secret", res.Rejected[0].Rule)
			assert.NotContains(t, res.Rejected[0].Message, value)
			_, _, err = d.C.ReadFile(ctx, s.ID, "leak.txt")
			assert.Equal(t, "not_found", apiCode(err), "%v", err)
			data, _, err := d.C.ReadFile(ctx, s.ID, "fine.txt")
			require.NoError(t, err)
			assert.Equal(t, "fine\n", string(data))

			// MCP run, on the session's own token.
			var logs lockedBuffer
			cs := mcpClient(t, &logs, "--server", d.URL, "--token", s.Token, "--session", s.ID)
			text, _ := toolOK(t, cs, "run", map[string]any{"command": `echo "mcp $API_TOKEN"`})
			assert.Contains(t, text, "mcp ***")
			assert.NotContains(t, text, value)

			// Nowhere else: answers, events, the daemon's log, the store.
			for _, p := range []string{"/v1/sessions/" + s.ID, "/v1/sessions/" + s.ID + "/mutations", "/v1/sessions/" + s.ID + "/diff", "/v1/repos/r/environment"} {
				assert.NotContains(t, rawGet(t, d, p), value, p)
			}
			d.Stop()
			assert.NotContains(t, d.Logs.String(), value, "the daemon's log")
			assert.NotContains(t, logs.String(), value, "the MCP client's log")
			if st.name == "sqlite" {
				require.FileExists(t, filepath.Join(d.DataDir, "sessiond.db"))
			}
			grepTree(t, d.DataDir, value)
			assert.Contains(t, d.Logs.String(), "level=", "the log was captured")
		})
	}
}

// TestRepoEnvCLI: sessiond repo env set takes secrets from standard input
// or a file, never argv; show names them without their values.
func TestRepoEnvCLI(t *testing.T) {
	plainRunOnly(t, "the CLI's variables against the daemon's binary")
	repo := testrepo.Build(t, "small")
	d := newDaemon(t, stores[0], "--repo", "r="+repo)
	clientEnv(t, d, "")
	value := "cli-" + randHex(t)
	r := runCLI(t, value+"\n", "repo", "env", "set", "r", "--env", "A=1", "--secret", "TOKEN")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.NotContains(t, r.stdout, value)
	file := filepath.Join(t.TempDir(), "secrets.env")
	require.NoError(t, os.WriteFile(file, []byte("# comment\nOTHER="+value+"-2\n"), 0o600))
	r = runCLI(t, "", "repo", "env", "set", "r", "--secrets-file", file, "--env", "B=2")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runCLI(t, "", "repo", "env", "show", "r")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, "A=1\nB=2\nOTHER=*** (secret)\nTOKEN=*** (secret)\n", r.stdout)

	s, err := d.C.CreateSession(t.Context(), apitypes.CreateSessionRequest{Repo: "r"})
	require.NoError(t, err)
	res, err := d.C.Exec(t.Context(), s.ID, apitypes.ExecRequest{Command: `test "$TOKEN" = "` + value + `" && test "$OTHER" = "` + value + `-2" && echo same`}, nil)
	require.NoError(t, err)
	assert.Equal(t, "same\n", res.Stdout, res.Stderr)

	r = runCLI(t, "", "repo", "env", "set", "r", "--unset-secret", "OTHER", "--unset", "B")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, "A=1\nTOKEN=*** (secret)\n", r.stdout)
	r = runCLI(t, "", "repo", "env", "set", "r")
	assert.Equal(t, exitUsage, r.code, "nothing to change is a usage error")
	r = runCLI(t, "x", "repo", "env", "set", "r", "--secret", "1BAD")
	assert.NotEqual(t, exitOK, r.code)
	assert.Contains(t, r.stderr, "secrets")
}

func randHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// rawGet returns the body of a GET as the daemon sent it.
func rawGet(t *testing.T, d *daemon, path string) string {
	t.Helper()
	resp, err := http.Get(d.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, b)
	return string(b)
}

// grepTree asserts no file under dir holds value: the database file and
// its journal, the repositories, the view directories.
func grepTree(t *testing.T, dir, value string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || !de.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		assert.False(t, bytes.Contains(b, []byte(value)), "%s holds the secret", p)
		return nil
	})
	require.NoError(t, err)
	assert.NotZero(t, files)
}
