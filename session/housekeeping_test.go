package session_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/session"
)

// TestRestartsKeepPacksBounded: 20 restarts of the engine with 25 writes
// each (every write its own pack) leave at most 50 packs, git's
// gc.autoPackLimit, because housekeeping merges the packs of every earlier
// process too; every file reads back and git fsck --strict is clean.
func TestRestartsKeepPacksBounded(t *testing.T) {
	e := newEnv(t, "small")
	s := e.create(session.CreateOptions{})
	want := map[string]string{}
	for restart := range 20 {
		for i := range 25 {
			p := fmt.Sprintf("r%02d/f%02d.txt", restart, i)
			want[p] = fmt.Sprintf("restart %d write %d\n", restart, i)
			e.write(s.ID, p, want[p])
		}
		e.restart()
	}
	idx, _ := filepath.Glob(filepath.Join(e.repoDir, ".git", "objects", "pack", "pack-*.idx"))
	assert.LessOrEqual(t, len(idx), 50, "packs after 20 restarts × 25 writes")
	for p, content := range want {
		assert.Equal(t, content, e.read(s.ID, p), p)
	}
	require.NoError(t, e.en.Close())
	out := e.git("fsck", "--strict")
	for _, line := range strings.Split(out, "\n") {
		assert.True(t, line == "" || strings.HasPrefix(line, "dangling "), "git fsck: %s", line)
	}
	t.Logf("%d packs", len(idx))
}
