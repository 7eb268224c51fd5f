package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessiond/sessiond/internal/pgtest"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/client"
)

// The end-to-end tests run the real binary, built once in TestMain, on a
// free loopback port, and drive it through package client.

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sessiond-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "sessiond")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build sessiond:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// store is one metadata store the daemon can run on.
type store struct {
	name string
	// url returns the --database-url for a fresh, empty database ("" for
	// the embedded store); it is dropped when t ends.
	url func(t testing.TB) string
}

var stores = []store{
	{name: "sqlite", url: func(testing.TB) string { return "" }},
	{name: "postgres", url: freshSchema},
}

func freshSchema(t testing.TB) string { return pgtest.FreshSchema(t) }

// daemon is one sessiond process; start and restart keep its data
// directory and database.
type daemon struct {
	t       testing.TB
	dataDir string
	dbURL   string
	args    []string // extra serve flags
	token   string   // admin token, if any

	cmd  *exec.Cmd
	done chan struct{}
	logs *lockedBuffer
	URL  string
	C    *client.Client
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newDaemon(t testing.TB, st store, args ...string) *daemon {
	t.Helper()
	d := &daemon{t: t, dataDir: t.TempDir(), dbURL: st.url(t), args: args}
	for i, a := range args {
		if a == "--admin-token" && i+1 < len(args) {
			d.token = args[i+1]
		}
	}
	d.start()
	t.Cleanup(func() {
		if d.cmd != nil {
			d.stop()
		}
		if t.Failed() {
			t.Logf("daemon logs:\n%s", d.logs.String())
		}
	})
	return d
}

func (d *daemon) start() {
	d.t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", d.dataDir, "--log-level", "warn"}, d.args...)
	if d.dbURL != "" {
		args = append(args, "--database-url", d.dbURL)
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "SESSIOND_ADMIN_TOKEN=", "SESSIOND_DATABASE_URL=")
	if d.logs == nil {
		d.logs = &lockedBuffer{}
	}
	cmd.Stderr = d.logs
	out, err := cmd.StdoutPipe()
	require.NoError(d.t, err)
	require.NoError(d.t, cmd.Start())
	d.cmd = cmd
	d.done = make(chan struct{})
	lines := bufio.NewReader(out)
	urlc := make(chan string, 1)
	go func() {
		for {
			line, err := lines.ReadString('\n')
			if u, ok := strings.CutPrefix(strings.TrimSpace(line), "sessiond: listening on "); ok {
				urlc <- u
			}
			if err != nil {
				break
			}
		}
		_ = cmd.Wait()
		close(d.done)
	}()
	select {
	case d.URL = <-urlc:
	case <-d.done:
		d.t.Fatalf("sessiond exited before listening:\n%s", d.logs.String())
	case <-time.After(30 * time.Second):
		d.t.Fatalf("sessiond did not listen in time:\n%s", d.logs.String())
	}
	d.C = client.New(d.URL, d.token)
}

// stop ends the daemon with SIGTERM (a graceful shutdown).
func (d *daemon) stop() {
	d.t.Helper()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
		d.t.Errorf("sessiond did not stop on SIGTERM")
	}
	d.cmd = nil
}

// kill ends the daemon with SIGKILL.
func (d *daemon) kill() {
	d.t.Helper()
	_ = d.cmd.Process.Kill()
	<-d.done
	d.cmd = nil
}

func (d *daemon) restart() {
	d.t.Helper()
	d.stop()
	d.start()
}

// git runs the git CLI in dir and returns its trimmed output.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
	}
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
