package workdir_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/workdir"
)

// Limits: each row runs a command past one limit; it must fail inside
// as the limit says, the result must name the limit where the kernel
// can tell, and the session must run its next command as before.
func TestLimits(t *testing.T) {
	rows := []struct {
		name   string
		limits workdir.Limits
		script string
		// want is in the output; exceeded in the result where counted
		// (cgroups for memory and pids; always for tmp and scratch).
		want     []string
		exceeded string
	}{
		{"fork bomb", workdir.Limits{Pids: 64},
			`i=0; while [ $i -lt 300 ]; do sleep 3 & i=$((i+1)); done; echo TRIED`,
			[]string{"fork"}, workdir.LimitPids},
		{"memory hog", workdir.Limits{MemoryBytes: 64 << 20},
			`awk 'BEGIN { s = "x"; while (1) s = s s }'; echo TRIED $?`,
			[]string{"TRIED"}, workdir.LimitMemory},
		{"fill /tmp", workdir.Limits{TmpBytes: 8 << 20},
			`head -c 20000000 /dev/zero > /tmp/big; echo TRIED`,
			[]string{"TRIED", "No space left on device"}, workdir.LimitTmp},
		{"fill the scratch", workdir.Limits{ScratchBytes: 16 << 20},
			`mkdir -p build && head -c 12000000 /dev/zero > build/a && head -c 12000000 /dev/zero > build/b; sleep 2; echo TRIED`,
			nil, workdir.LimitScratch},
	}
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		for _, r := range rows {
			t.Run(r.name, func(t *testing.T) {
				if !m.Isolated() && r.exceeded == workdir.LimitTmp {
					t.Skip("unisolated commands share the host's /tmp")
				}
				counted := r.exceeded == workdir.LimitTmp || r.exceeded == workdir.LimitScratch || m.Cgroups() != ""
				if !counted && !m.Isolated() {
					t.Skip("unisolated and without cgroups, only rlimits of the daemon's user bound this")
				}
				s, err := m.Prepare(t.Context(), f.view())
				require.NoError(t, err)
				res, err := s.Run(t.Context(), workdir.Command{Argv: []string{"/bin/sh", "-c", r.script}, Limits: r.limits, Timeout: 20 * time.Second})
				require.NoError(t, err)
				out := string(res.Stdout) + string(res.Stderr)
				for _, w := range r.want {
					assert.Contains(t, strings.ToLower(out), strings.ToLower(w))
				}
				if counted {
					assert.Contains(t, res.Exceeded, r.exceeded, "limits: %+v, output: %s", res.Limits, out)
				} else {
					t.Logf("no cgroups here: %s is an rlimit, which the result cannot count", r.exceeded)
				}
				assert.NotEmpty(t, res.Limits)
				cs, err := s.Capture(t.Context(), f.view(), 0)
				require.NoError(t, err)
				require.NoError(t, s.Settle(t.Context(), f.view(), paths(cs)))

				// The session goes on, and what outgrew the scratch is gone.
				res, cs, s = f.runSh(m, "test ! -e build/a && echo fine")
				require.NoError(t, s.Settle(t.Context(), f.view(), paths(cs)))
				assert.Equal(t, "fine\n", string(res.Stdout), string(res.Stderr))
				assert.Empty(t, res.Exceeded)
			})
		}
	})
}

// Which limits applied is in the result: cgroups where the daemon has
// them (the skip says so where it has none), else rlimits.
func TestLimitsApplied(t *testing.T) {
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

// A double-forked grandchild dies with the command: on a timeout the
// call returns at once (nothing holds its output open), and the
// grandchild never writes.
func TestTimeoutEndsGrandchildren(t *testing.T) {
	forModes(t, func(t *testing.T, m *workdir.Manager) {
		f := newFixture(t)
		s, err := m.Prepare(t.Context(), f.view())
		require.NoError(t, err)
		start := time.Now()
		res, err := s.Run(t.Context(), workdir.Command{
			Argv:    []string{"/bin/sh", "-c", `(setsid sh -c 'sleep 2; echo late > late.txt' &); setsid sleep 8 & sleep 30`},
			Timeout: 500 * time.Millisecond,
		})
		require.NoError(t, err)
		assert.True(t, res.TimedOut)
		assert.Less(t, time.Since(start), 5*time.Second, "the call waited for a process that held its output")
		time.Sleep(3 * time.Second)
		cs, err := s.Capture(t.Context(), f.view(), 0)
		require.NoError(t, err)
		assert.NotContains(t, paths(cs), "late.txt", "the grandchild outlived the command")
		require.NoError(t, s.Settle(t.Context(), f.view(), paths(cs)))
	})
}

// The scratch is its owner's alone, and so is the data directory.
func TestScratchIsPrivate(t *testing.T) {
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
