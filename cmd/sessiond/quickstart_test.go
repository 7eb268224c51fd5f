package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/internal/testdaemon"
)

// TestQuickstartPasteLines runs `make run`'s daemon on a port of its own
// (not the default) and the lines it says to paste, in a shell, as a
// newcomer would: they must work as printed (the server's address is
// exported before the session is created with it).
func TestQuickstartPasteLines(t *testing.T) {
	plainRunOnly(t, "the quickstart command's binary")
	fixture, err := filepath.Abs("../../testdata/repos/small.fi")
	require.NoError(t, err)
	cmd := exec.Command(testdaemon.Binary, "quickstart", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--fixture", fixture)
	cmd.Dir = t.TempDir()
	cmd.Env = cleanEnv()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	var paste []string
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	timeout := time.After(2 * time.Minute)
	for inBlock, done := false, false; !done; {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "quickstart ended before printing its lines")
			switch {
			case strings.HasPrefix(l, "Paste these"):
				inBlock = true
			case inBlock && strings.TrimSpace(l) == "" && len(paste) > 0:
				done = true
			case inBlock && strings.TrimSpace(l) != "":
				paste = append(paste, strings.TrimSpace(l))
			}
		case <-timeout:
			t.Fatal("quickstart printed no lines to paste")
		}
	}
	go func() {
		for range lines {
		}
	}()
	require.NotEmpty(t, paste)
	assert.NotContains(t, strings.Join(paste, "\n"), ":7420", "the lines name the daemon's own address")

	sh := exec.Command("bash", "-e", "-c", strings.Join(paste, "\n"))
	sh.Dir = cmd.Dir
	sh.Env = append(cleanEnv(), "PATH="+filepath.Dir(testdaemon.Binary)+":"+os.Getenv("PATH"))
	got, err := sh.CombinedOutput()
	require.NoError(t, err, "the pasted lines:\n%s\n%s", strings.Join(paste, "\n"), got)
	assert.Contains(t, string(got), "+hello from my session")
}

// cleanEnv is the test's environment without sessiond's own variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SESSIOND_") {
			env = append(env, kv)
		}
	}
	return env
}
