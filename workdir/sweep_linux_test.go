//go:build linux

package workdir

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The scratch's sweep runs while a command may change the tree under it:
// a symlink or a directory swapped in for a setuid file must never lead
// it to change a file outside the scratch, and a directory the command
// made unreadable still counts.
func TestSweepFollowsNoLink(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("host"), 0o755))
	require.NoError(t, os.Chmod(victim, os.ModeSetuid|0o755))
	victimDir := filepath.Join(outside, "dir")
	require.NoError(t, os.Mkdir(victimDir, 0o755))
	inDir := filepath.Join(victimDir, "f")
	require.NoError(t, os.WriteFile(inDir, []byte("host"), 0o755))
	require.NoError(t, os.Chmod(inDir, os.ModeSetuid|os.ModeSetgid|0o755))

	scratch := t.TempDir()
	own := filepath.Join(scratch, "own")
	require.NoError(t, os.WriteFile(own, []byte("x"), 0o755))
	require.NoError(t, os.Chmod(own, os.ModeSetuid|0o755))
	require.NoError(t, os.Symlink(victim, filepath.Join(scratch, "link")))
	require.NoError(t, os.Symlink(victimDir, filepath.Join(scratch, "dirlink")))
	hidden := filepath.Join(scratch, "hidden")
	require.NoError(t, os.Mkdir(hidden, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(hidden, "big"), make([]byte, 1<<20), 0o644))
	require.NoError(t, os.Chmod(hidden, 0))

	usage := sweep(scratch)
	assert.GreaterOrEqual(t, usage, int64(1<<20), "the unreadable directory's file counts")
	st, err := os.Stat(own)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), st.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid), "the scratch's own setuid bit goes")

	// A command swapping setuid files for links and directories for
	// links, atomically and without pause, while the sweep runs.
	x, xAlt := filepath.Join(scratch, "x"), filepath.Join(scratch, "x-alt")
	y, yAlt := filepath.Join(scratch, "y"), filepath.Join(scratch, "y-alt")
	require.NoError(t, os.WriteFile(x, []byte("x"), 0o755))
	require.NoError(t, os.Symlink(victim, xAlt))
	require.NoError(t, os.Mkdir(y, 0o755))
	for i := range 64 {
		f := filepath.Join(y, fmt.Sprint("f", i))
		require.NoError(t, os.WriteFile(f, []byte("x"), 0o755))
	}
	require.NoError(t, os.Symlink(victimDir, yAlt))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.Chmod(filepath.Join(y, "f0"), os.ModeSetuid|0o755)
			_ = unix.Renameat2(unix.AT_FDCWD, x, unix.AT_FDCWD, xAlt, unix.RENAME_EXCHANGE)
			_ = unix.Renameat2(unix.AT_FDCWD, y, unix.AT_FDCWD, yAlt, unix.RENAME_EXCHANGE)
		}
	}()
	for i := 0; i < 2000; i++ {
		if i%2 == 0 {
			// Each round the command makes its file setuid again.
			if fi, err := os.Lstat(x); err == nil && fi.Mode().IsRegular() {
				_ = os.Chmod(x, os.ModeSetuid|0o755)
			}
		}
		sweep(scratch)
	}
	close(stop)
	wg.Wait()
	for _, p := range []string{victim, inDir} {
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.NotZero(t, st.Mode()&os.ModeSetuid, "%s outside the scratch keeps its mode", p)
	}
}
