package workdir

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestStatCacheRacy: an entry whose mtime is within the timestamp
// granularity of the moment its stat was taken is not trusted, as git's
// racy-git rule says: the file may have changed again with the same stat.
func TestStatCacheRacy(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, []byte("one"), 0o644))
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(p, &st))

	e := statEntryOf(&st, st.Mtim.Nano())
	// A command that started in the same instant as the write: racy.
	racyStart := st.Mtim.Nano()
	// One that started a second later: the entry is settled.
	laterStart := st.Mtim.Nano() + int64(time.Second)
	assert.False(t, e.clean(&st, racyStart), "written within the clock's granularity of the command's start")
	assert.True(t, e.clean(&st, laterStart))

	// Same size, same timestamps, new content: only the racy rule can
	// tell, and it does, because the entry was racy.
	require.NoError(t, os.WriteFile(p, []byte("two"), 0o644))
	require.NoError(t, unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW))
	var st2 unix.Stat_t
	require.NoError(t, unix.Lstat(p, &st2))
	st2.Ctim = st.Ctim // what a same-tick rewrite looks like
	assert.False(t, e.clean(&st2, racyStart))
	assert.True(t, e.clean(&st2, laterStart), "a non-racy entry trusts equal stat data")

	changed := st2
	changed.Size++
	assert.False(t, e.clean(&changed, laterStart))
}
