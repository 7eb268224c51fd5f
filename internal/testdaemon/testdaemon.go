// Package testdaemon runs the real sessiond binary for end-to-end tests:
// built once per test binary (Main), started on a free loopback port of
// its own data directory (New), stopped gracefully or killed, and
// restarted on the same data directory and database.
//
// Invariants: a started Daemon has URL and C set and is listening; every
// Daemon is stopped when its test ends, and its log (standard error) is
// printed when the test failed.
package testdaemon

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/client"
)

// Binary is the sessiond binary Main built.
var Binary string

// Main builds the sessiond command at pkg (a path go build accepts, such
// as "." or "../cmd/sessiond") into a temporary directory, runs the tests
// and exits with their code.
func Main(m *testing.M, pkg string) {
	dir, err := os.MkdirTemp("", "sessiond-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	Binary = filepath.Join(dir, "sessiond")
	build := exec.Command("go", "build", "-o", Binary, pkg)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build sessiond:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Daemon is one sessiond serve process. Start and Restart keep its data
// directory and database.
type Daemon struct {
	T       testing.TB
	DataDir string
	DBURL   string   // --database-url; empty for the embedded store
	Args    []string // extra serve flags
	Token   string   // the admin token, if Args give one

	URL  string         // where it listens, once started
	C    *client.Client // a client of URL with Token
	Logs *LockedBuffer  // its standard error

	cmd  *exec.Cmd
	done chan struct{}
}

// New starts a daemon on a fresh data directory; dbURL empty means the
// embedded store. It stops when t ends.
func New(t testing.TB, dbURL string, args ...string) *Daemon {
	t.Helper()
	return NewIn(t, t.TempDir(), dbURL, args...)
}

// NewIn is New on the data directory dir, which may hold files already
// (a cluster's shared keys).
func NewIn(t testing.TB, dir, dbURL string, args ...string) *Daemon {
	t.Helper()
	d := &Daemon{T: t, DataDir: dir, DBURL: dbURL, Args: args, Logs: &LockedBuffer{}}
	for i, a := range args {
		if a == "--admin-token" && i+1 < len(args) {
			d.Token = args[i+1]
		}
	}
	d.Start()
	t.Cleanup(func() {
		if d.cmd != nil {
			d.Stop()
		}
		if t.Failed() {
			t.Logf("daemon logs:\n%s", d.Logs.String())
		}
	})
	return d
}

// Start runs the daemon and waits until it listens.
func (d *Daemon) Start() {
	d.T.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", d.DataDir, "--log-level", "warn"}, d.Args...)
	if d.DBURL != "" {
		args = append(args, "--database-url", d.DBURL)
	}
	cmd := exec.Command(Binary, args...)
	// Only the flags configure it: no setting of the caller's leaks in.
	cmd.Env = append(os.Environ(), "SESSIOND_ADMIN_TOKEN=", "SESSIOND_DATABASE_URL=")
	cmd.Stderr = d.Logs
	out, err := cmd.StdoutPipe()
	require.NoError(d.T, err)
	require.NoError(d.T, cmd.Start())
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
		d.T.Fatalf("sessiond exited before listening:\n%s", d.Logs.String())
	case <-time.After(30 * time.Second):
		d.T.Fatalf("sessiond did not listen in time:\n%s", d.Logs.String())
	}
	d.C = client.New(d.URL, d.Token)
}

// Stop ends the daemon with SIGTERM (a graceful shutdown); one that does
// not stop within 30 s is killed and the test fails.
func (d *Daemon) Stop() {
	d.T.Helper()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
		d.T.Errorf("sessiond did not stop on SIGTERM")
	}
	d.cmd = nil
}

// Kill ends the daemon with SIGKILL.
func (d *Daemon) Kill() {
	d.T.Helper()
	_ = d.cmd.Process.Kill()
	<-d.done
	d.cmd = nil
}

// Restart stops the daemon gracefully and starts it again.
func (d *Daemon) Restart() {
	d.T.Helper()
	d.Stop()
	d.Start()
}

// Pid is the running daemon's process id.
func (d *Daemon) Pid() int { return d.cmd.Process.Pid }

// LockedBuffer is a strings.Builder safe for concurrent writers.
type LockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
