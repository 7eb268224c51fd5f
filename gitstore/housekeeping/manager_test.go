package housekeeping_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/gitstore/housekeeping"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// failures reads sessiond_housekeeping_failures_total as a registry
// gathers it.
func failures(t *testing.T) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(housekeeping.Collectors()...)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "sessiond_housekeeping_failures_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no sessiond_housekeeping_failures_total")
	return 0
}

// TestFailedRunIsLoggedAndCounted: a run that cannot list the object
// directory returns its error, logs it naming the repository, and counts
// it; the next run, once the directory is whole again, succeeds and
// counts nothing.
func TestFailedRunIsLoggedAndCounted(t *testing.T) {
	dir := testrepo.Build(t, "small")
	var logged bytes.Buffer
	r, err := gitstore.Open(dir, gitstore.Options{HousekeepInterval: -1,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	packDir := filepath.Join(dir, ".git", "objects", "pack")
	aside := packDir + ".aside"
	require.NoError(t, os.Rename(packDir, aside))
	require.NoError(t, os.WriteFile(packDir, []byte("not a directory"), 0o644))

	before := failures(t)
	_, err = r.Housekeep(t.Context())
	require.Error(t, err)
	assert.Equal(t, before+1, failures(t), "the failure is counted")
	assert.Contains(t, logged.String(), "housekeeping failed")
	assert.Contains(t, logged.String(), filepath.Join(dir, ".git"), "the log names the repository")

	require.NoError(t, os.Remove(packDir))
	require.NoError(t, os.Rename(aside, packDir))
	logged.Reset()
	_, err = r.Housekeep(t.Context())
	require.NoError(t, err)
	assert.Equal(t, before+1, failures(t), "a run that succeeds counts nothing")
	assert.Empty(t, logged.String())
}
