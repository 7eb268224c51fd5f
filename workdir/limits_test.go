package workdir_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/workdir"
)

// Which limits applied is in the result: cgroups where the daemon has
// them (the skip says so where it has none), else rlimits.
func TestLimitsApplied(t *testing.T) {
	plainRunOnly(t, "commands in namespaces under limits")
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		res, cs, s := f.runSh(m, "true")
		require.NoError(t, s.Settle(t.Context(), f.view(), paths(cs)))
		via := map[string]string{}
		for _, l := range res.Limits {
			via[l.Name] = l.Via
		}
		assert.Equal(t, workdir.ViaWatch, via[workdir.LimitScratch])
		if m.Isolated() {
			assert.Equal(t, workdir.ViaTmpfs, via[workdir.LimitTmp])
		}
		if m.Cgroups() == "" {
			assert.Equal(t, workdir.ViaRlimit, via[workdir.LimitMemory])
			t.Skip("no delegated or writable cgroup here: memory by rlimit, per process")
		}
		for _, name := range []string{workdir.LimitMemory, workdir.LimitPids} {
			assert.Equal(t, m.Cgroups(), via[name], name)
		}
	})
}

// The scratch is its owner's alone, and so is the data directory.
func TestScratchIsPrivate(t *testing.T) {
	plainRunOnly(t, "commands in namespaces")
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		_, cs, s := f.runSh(m, "touch made.txt")
		require.NoError(t, s.Settle(t.Context(), f.view(), paths(cs)))
		for _, d := range []string{s.Dir(), filepath.Dir(filepath.Dir(s.Dir()))} {
			st, err := os.Stat(d)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), st.Mode().Perm(), d)
		}
	})
}
