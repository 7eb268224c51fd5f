package testcluster

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/internal/pgtest"
	"github.com/sessiond/sessiond/internal/testdaemon"
	"github.com/sessiond/sessiond/internal/testport"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// Origin is a bare repository served by git daemon (fetch and push) on a
// loopback port.
type Origin struct {
	// Dir is the bare repository; URL its git:// URL.
	Dir string
	URL string
	cmd *exec.Cmd
}

// NewOrigin serves a bare copy of the fixture repository (testdata/repos)
// with `git daemon --enable=receive-pack` until the test ends.
func NewOrigin(t testing.TB, fixture string) *Origin {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "app.git")
	require.NoError(t, os.Rename(testrepo.BuildBare(t, fixture), dir))
	port := testport.Free(t)
	cmd := exec.Command("git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
		"--listen=127.0.0.1", "--port="+strconv.Itoa(port), "--base-path="+base, base)
	cmd.Env = testrepo.Env()
	logs := &testdaemon.LockedBuffer{}
	cmd.Stderr = logs
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("git daemon logs:\n%s", logs.String())
		}
	})
	o := &Origin{Dir: dir, URL: fmt.Sprintf("git://127.0.0.1:%d/app.git", port), cmd: cmd}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := o.Run("ls-remote", o.URL); err == nil {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("git daemon did not serve %s:\n%s", o.URL, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Run runs git in the origin's directory.
func (o *Origin) Run(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = o.Dir
	cmd.Env = testrepo.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Head is the commit the origin's branch is at, as git ls-remote sees it
// through the daemon.
func (o *Origin) Head(t testing.TB, branch string) string {
	t.Helper()
	out, err := o.Run("ls-remote", o.URL, "refs/heads/"+branch)
	require.NoError(t, err)
	f := strings.Fields(out)
	require.NotEmpty(t, f, "origin has no branch %s", branch)
	return f[0]
}

// Cluster is N sessiond nodes on one PostgreSQL schema.
type Cluster struct {
	T     testing.TB
	DBURL string
	Nodes []*Node
	// Args are serve flags every node gets (beside its id and address).
	Args []string

	keysOnce sync.Once
	keys     [][2]string // name, content
}

// Node is one node: a daemon with its id.
type Node struct {
	*testdaemon.Daemon
	ID   string
	Port int
}

// New starts n nodes (node-1 … node-n) on a fresh schema, each with args
// (an origin to register, say: "--repo", "app="+origin.URL).
func New(t testing.TB, n int, args ...string) *Cluster {
	t.Helper()
	c := &Cluster{T: t, DBURL: pgtest.FreshSchema(t), Args: args}
	for i := 1; i <= n; i++ {
		c.Add("node-" + strconv.Itoa(i))
	}
	return c
}

// Add starts one more node with id.
func (c *Cluster) Add(id string, args ...string) *Node {
	c.T.Helper()
	nd := &Node{ID: id}
	nd.Daemon = testdaemon.NewIn(c.T, c.DataDir(), c.DBURL, c.NodeArgs(id, &nd.Port, args...)...)
	c.Nodes = append(c.Nodes, nd)
	return nd
}

// NodeArgs are the serve flags of a node with id on a free port (set in
// *port): its address, the URL it advertises, and c.Args and args.
func (c *Cluster) NodeArgs(id string, port *int, args ...string) []string {
	c.T.Helper()
	*port = testport.Free(c.T)
	addr := "127.0.0.1:" + strconv.Itoa(*port)
	out := []string{"--addr", addr, "--node-id", id, "--advertise-url", "http://" + addr}
	out = append(out, c.Args...)
	return append(out, args...)
}

// DataDir is a new node's data directory, holding the keys every node of
// the cluster shares (token.key, secrets.key: made once per cluster).
func (c *Cluster) DataDir() string {
	c.T.Helper()
	c.keysOnce.Do(func() {
		for _, name := range []string{"token.key", "secrets.key"} {
			k := make([]byte, 32)
			_, _ = rand.Read(k)
			c.keys = append(c.keys, [2]string{name, string(k)})
		}
	})
	dir := c.T.TempDir()
	for _, k := range c.keys {
		if err := os.WriteFile(filepath.Join(dir, k[0]), []byte(k[1]), 0o600); err != nil {
			c.T.Fatal(err)
		}
	}
	return dir
}

// Node returns the node with id.
func (c *Cluster) Node(id string) *Node {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	c.T.Fatalf("no node %q", id)
	return nil
}

// Refused runs `sessiond serve` with args (a fresh data directory) and
// returns its exit code and standard error, for start-ups that must fail;
// one still running after timeout is killed and the test fails.
func Refused(t testing.TB, timeout time.Duration, args ...string) (int, string) {
	t.Helper()
	return RefusedIn(t, t.TempDir(), timeout, args...)
}

// RefusedIn is Refused on the data directory dir.
func RefusedIn(t testing.TB, dir string, timeout time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	full := append([]string{"serve", "--data-dir", dir, "--log-level", "warn"}, args...)
	cmd := exec.CommandContext(ctx, testdaemon.Binary, full...)
	cmd.Env = append(os.Environ(), "SESSIOND_ADMIN_TOKEN=", "SESSIOND_DATABASE_URL=")
	var stderr testdaemon.LockedBuffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("sessiond %s: still running after %s:\n%s", strings.Join(full, " "), timeout, stderr.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run sessiond: %v", err)
	}
	return code, stderr.String()
}
