//go:build linux

package workdir

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A command's cgroup that cannot be removed when the command ends (a
// process slow to die) is removed at the next command's start, not left
// until the daemon restarts.
func TestCgroupLeftIsRemovedLater(t *testing.T) {
	c := detectCgroups("test-left-" + strconv.Itoa(os.Getpid()))
	if !c.available() {
		t.Skipf("no delegated or writable cgroup here: %s", c.why)
	}
	t.Cleanup(func() {
		for _, base := range c.bases() {
			os.Remove(base)
		}
	})
	g, _, err := c.create("slow", Limits{Pids: 10, MemoryBytes: 64 << 20}, true)
	require.NoError(t, err)
	// What holds it: a child cgroup, as a process that has not died
	// yet would.
	var holds []string
	for _, d := range g.dirs {
		h := filepath.Join(d, "held")
		require.NoError(t, os.Mkdir(h, 0o755))
		holds = append(holds, h)
	}
	c.release(g)
	for _, d := range g.dirs {
		assert.DirExists(t, d)
	}
	for _, h := range holds {
		require.NoError(t, os.Remove(h))
	}
	next, _, err := c.create("next", Limits{Pids: 10}, true)
	require.NoError(t, err)
	for _, d := range g.dirs {
		assert.NoDirExists(t, d, "removed at the next command's start")
	}
	c.release(next)
	for _, d := range next.dirs {
		assert.NoDirExists(t, d)
	}
}
