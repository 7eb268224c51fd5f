package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

func apiCode(err error) string {
	var ce *client.Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ""
}

// TestExecOverHTTP runs commands through the API in both modes: streamed
// output, the recorded mutation, API writes between commands, busy
// writes, bad input and read-only sessions.
func TestExecOverHTTP(t *testing.T) {
	plainRunOnly(t, "commands in namespaces in the daemon's binary")
	for _, mode := range []string{"overlay", "copy", "unisolated"} {
		t.Run(mode, func(t *testing.T) {
			ctx := t.Context()
			repo := testrepo.Build(t, "small")
			flags := []string{"--workdir-mode", mode}
			if mode == "unisolated" {
				// As where the kernel refuses namespaces.
				flags = []string{"--workdir-no-namespaces"}
			}
			d := newDaemon(t, stores[0], append([]string{"--repo", "r=" + repo}, flags...)...)
			s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
			require.NoError(t, err)
			_, err = d.C.WriteFile(ctx, s.ID, "api.txt", []byte("from the api\n"), client.WriteOptions{})
			require.NoError(t, err)

			var streamed strings.Builder
			res, err := d.C.Exec(ctx, s.ID, apitypes.ExecRequest{Command: "cat api.txt; echo made > made.txt; echo oops >&2"}, func(stream string, p []byte) {
				if stream == "stdout" {
					streamed.Write(p)
				}
			})
			require.NoError(t, err)
			assert.Equal(t, 0, res.ExitCode)
			assert.Equal(t, "from the api\n", res.Stdout)
			assert.Equal(t, "from the api\n", streamed.String())
			assert.Equal(t, "oops\n", res.Stderr)
			assert.Equal(t, mode != "unisolated", res.Isolated)
			require.NotNil(t, res.Mutation)
			assert.Equal(t, "exec", res.Mutation.Op)
			require.NotNil(t, res.Mutation.Exec)
			assert.Equal(t, []apitypes.ExecChange{{Path: "made.txt", Status: "added", Mode: "100644"}}, res.Changes)
			data, _, err := d.C.ReadFile(ctx, s.ID, "made.txt")
			require.NoError(t, err)
			assert.Equal(t, "made\n", string(data))
			ms, err := d.C.Mutations(ctx, s.ID, 0, 0)
			require.NoError(t, err)
			require.Len(t, ms, 2)
			assert.Equal(t, "exec", ms[1].Op)
			assert.Equal(t, []string{"/bin/sh", "-c", "cat api.txt; echo made > made.txt; echo oops >&2"}, ms[1].Exec.Argv)

			// Busy while a command runs; reads still answer.
			var wg sync.WaitGroup
			started := make(chan struct{})
			wg.Go(func() {
				var once sync.Once
				_, err := d.C.Exec(ctx, s.ID, apitypes.ExecRequest{Command: "echo go; sleep 1"}, func(string, []byte) { once.Do(func() { close(started) }) })
				assert.NoError(t, err)
			})
			<-started
			_, err = d.C.WriteFile(ctx, s.ID, "x.txt", []byte("x"), client.WriteOptions{})
			assert.Equal(t, "session_busy", apiCode(err), "%v", err)
			_, _, err = d.C.ReadFile(ctx, s.ID, "made.txt")
			assert.NoError(t, err)
			wg.Wait()

			// Bad input: 400 and nothing run.
			for name, req := range map[string]apitypes.ExecRequest{
				"empty":   {},
				"cwd":     {Argv: []string{"true"}, Cwd: "../etc"},
				"timeout": {Argv: []string{"true"}, TimeoutSeconds: 1e6},
			} {
				_, err := d.C.Exec(ctx, s.ID, req, nil)
				var ce *client.Error
				require.ErrorAs(t, err, &ce, name)
				assert.Equal(t, 400, ce.Status, name)
			}
			ms2, err := d.C.Mutations(ctx, s.ID, 0, 0)
			require.NoError(t, err)
			assert.Len(t, ms2, len(ms))

			// A read-only session runs, records nothing, and says so.
			ro, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", Mode: "read_only"})
			require.NoError(t, err)
			res, err = d.C.Exec(ctx, ro.ID, apitypes.ExecRequest{Argv: []string{"sh", "-c", "echo x > x.txt"}}, nil)
			require.NoError(t, err)
			assert.False(t, res.Recorded)
			assert.Nil(t, res.Mutation)
			assert.NotEmpty(t, res.NotRecorded)
		})
	}
}

// TestExecDaemonKilledDuringCommand: kill -9 of the daemon while a
// command runs records nothing of it, leaves no process of it (and so no
// mount, which lives in its namespace), and the next command sees the
// record.
func TestExecDaemonKilledDuringCommand(t *testing.T) {
	plainRunOnly(t, "the daemon's binary killed during a command")
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	d := newDaemon(t, stores[0], "--repo", "r="+repo)
	s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	started := make(chan struct{})
	go func() {
		var once sync.Once
		_, _ = d.C.Exec(ctx, s.ID, apitypes.ExecRequest{Command: "echo partial > partial.txt; echo started; exec sleep 61.75"},
			func(string, []byte) { once.Do(func() { close(started) }) })
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not start")
	}
	d.Kill()
	// The helper dies with its parent and its PID namespace with it.
	require.Eventually(t, func() bool { return !processWithArg("61.75") }, 10*time.Second, 50*time.Millisecond)
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.NotContains(t, string(mounts), filepath.Join(d.DataDir, "workdir"))

	d.Start()
	ms, err := d.C.Mutations(ctx, s.ID, 0, 0)
	require.NoError(t, err)
	assert.Empty(t, ms)
	res, err := d.C.Exec(ctx, s.ID, apitypes.ExecRequest{Command: "test ! -e partial.txt && echo clean"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "clean\n", res.Stdout, res.Stderr)
	assert.Nil(t, res.Mutation)
}

// processWithArg reports whether any process has arg on its command line.
func processWithArg(arg string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(b), "\x00") {
			if a == arg {
				return true
			}
		}
	}
	return false
}

// TestExecCLI: `sessiond exec` streams the output, lists what it recorded
// on standard error and exits with the command's code; `sessiond
// checkout` writes the view into a new directory, as git would check out
// the same tree.
func TestExecCLI(t *testing.T) {
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	d := newDaemon(t, stores[0], "--repo", "r="+repo)
	s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	clientEnv(t, d, s.ID)

	r := runCLI(t, "", "exec", "--", "sh", "-c", "echo hi; echo x > made.txt; chmod +x made.txt; exit 4")
	assert.Equal(t, 4, r.code, r.stderr)
	assert.Equal(t, "hi\n", r.stdout)
	assert.Contains(t, r.stderr, "recorded as mutation 1")
	assert.Contains(t, r.stderr, "A made.txt")

	r = runCLI(t, "", "exec", "--no-network", "-e", "GREETING=a,b", "--", "sh", "-c", `echo "$GREETING"`)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "a,b\n", r.stdout)
	assert.Contains(t, r.stderr, "no changes")

	r = runCLI(t, "", "exec", "--cwd", "nope", "--", "true")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "bad_request")
	r = runCLI(t, "", "exec")
	assert.Equal(t, exitUsage, r.code)

	dir := filepath.Join(t.TempDir(), "view")
	r = runCLI(t, "", "checkout", dir)
	require.Equal(t, exitOK, r.code, r.stderr)
	st, err := os.Stat(filepath.Join(dir, "made.txt"))
	require.NoError(t, err)
	assert.True(t, st.Mode()&0o100 != 0)
	// The same tree as the session's checkpoint, by git's own reckoning.
	cp, err := d.C.Checkpoint(ctx, s.ID, "", "")
	require.NoError(t, err)
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	assert.Equal(t, cp.Tree, git(t, dir, "write-tree"))
	r = runCLI(t, "", "checkout", dir)
	assert.Equal(t, exitUsage, r.code, "not into a directory that is not empty")
}

// TestExecCLIOutputCut: output over the API's cap (1 MiB a stream) is
// cut in the answer only: the CLI streams all of it and says nothing of
// a cut; with --json the answer says output_truncated.
func TestExecCLIOutputCut(t *testing.T) {
	plainRunOnly(t, "commands in namespaces in the daemon's binary, their output cut")
	ctx := t.Context()
	d := newDaemon(t, stores[0], "--repo", "r="+testrepo.Build(t, "small"))
	s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	clientEnv(t, d, s.ID)
	const n = 1<<20 + 200_000
	script := fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a; echo; echo end", n)
	r := runCLI(t, "", "exec", "--", "sh", "-c", script)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, n+len("\nend\n"), len(r.stdout), "all of the output was streamed")
	assert.True(t, strings.HasSuffix(r.stdout, "\nend\n"))
	assert.NotContains(t, r.stderr, "cut")
	assert.NotContains(t, r.stderr, "tail")

	r = runCLI(t, "", "--json", "exec", "--", "sh", "-c", script)
	require.Equal(t, exitOK, r.code, r.stderr)
	var res apitypes.ExecResponse
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	assert.True(t, res.OutputTruncated, "the answer kept only the tail")
	assert.Equal(t, 1<<20, len(res.Stdout))
}
