package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/internal/pgtest"
	"github.com/sessiond/sessiond/internal/testdaemon"
)

// The end-to-end tests run the real binary, built once in TestMain, on a
// free loopback port, and drive it through package client.

func TestMain(m *testing.M) { testdaemon.Main(m, ".") }

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

// daemon is one sessiond process; Start and Restart keep its data
// directory and database.
type daemon = testdaemon.Daemon

type lockedBuffer = testdaemon.LockedBuffer

func newDaemon(t testing.TB, st store, args ...string) *daemon {
	t.Helper()
	return testdaemon.New(t, st.url(t), args...)
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

// plainRunOnly skips t in make test's race detector run (-short): what
// says what t runs, all of which the plain run covers, with no goroutines
// of the daemon's own against each other for the detector to watch (the
// daemon's binary is built without it).
func plainRunOnly(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what + ": the plain run covers it; nothing of the daemon's races here")
	}
}
