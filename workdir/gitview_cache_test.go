package workdir_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/workdir"
)

// A fresh session's first git status reads only the directories the
// fsmonitor hook names (here the root, for a.txt): the shared base index
// carries git's untracked cache of the base, built for the view's
// location. Without it git opens every directory of the tree (dir,
// dir/sub, gone and the root).
func TestGitUntrackedCacheShared(t *testing.T) {
	plainRunOnly(t, "git in the view")
	m := newManager(t, workdir.ModeOverlay)
	f := newFixture(t)
	res, _, s := f.runGit(m, f.gitFor(t), `echo changed > a.txt
GIT_TRACE2_PERF=/tmp/trace git status --porcelain; grep -o 'opendir:[0-9]*' /tmp/trace | tail -1`)
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	assert.Contains(t, string(res.Stdout), " M a.txt\n")
	m1 := regexp.MustCompile(`opendir:([0-9]+)`).FindStringSubmatch(string(res.Stdout))
	require.NotNil(t, m1, string(res.Stdout))
	n, _ := strconv.Atoi(m1[1])
	assert.Equal(t, 1, n, "directories git opened")
	s.Abort()
}

// A base checkout's shared index goes with the checkout, a removed
// repository's public objects with it.
func TestGitSharedStateCleaned(t *testing.T) {
	plainRunOnly(t, "git in the view, then its shared state removed")
	data := t.TempDir()
	m := newManagerIn(t, data, workdir.ModeOverlay, func(c *workdir.Config) { c.CacheBytes = 1 })
	f := newFixture(t)
	res, _, s := f.runGit(m, f.gitFor(t), "git status --porcelain")
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	index := filepath.Join(data, "workdir", "gitbase", f.tree.String()+".index")
	assert.FileExists(t, index)
	objects, err := filepath.Glob(filepath.Join(data, "workdir", "gitobjects", "*"))
	require.NoError(t, err)
	require.Len(t, objects, 1)

	// Released, the checkout is beyond the budget of 1 byte: evicted,
	// and its index with it.
	s.Abort()
	assert.NoFileExists(t, filepath.Join(data, "workdir", "bases", f.tree.String()))
	assert.NoFileExists(t, index)

	require.NoError(t, m.PruneGitObjects([]string{"r"}))
	assert.DirExists(t, objects[0])
	require.NoError(t, m.PruneGitObjects([]string{"other"}))
	_, err = os.Stat(objects[0])
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// A fresh session's index is the shared base index itself, which no
// command can write in place; git, which replaces the index by a rename,
// works as with its own copy, and the shared file stays as it was.
func TestGitSharedIndexReadOnly(t *testing.T) {
	plainRunOnly(t, "git in the view")
	if os.Geteuid() != 0 {
		t.Skip("only a daemon running as root shares the base index")
	}
	data := t.TempDir()
	m := newManagerIn(t, data, workdir.ModeOverlay, nil)
	f := newFixture(t)
	res, _, s := f.runGit(m, f.gitFor(t), `stat -c %h .git/index
echo garbage >> .git/index && echo wrote
chmod u+w .git/index && echo chmod
echo changed > a.txt && git add a.txt && git diff --cached --name-only && stat -c %h .git/index`)
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	assert.Equal(t, "2\na.txt\n1\n", string(res.Stdout))
	assert.Contains(t, string(res.Stderr), "Permission denied")
	s.Abort()
	// The shared index is unharmed (its checksum holds) and still lists
	// the base's a.txt.
	ix, err := gitstore.ReadIndex(filepath.Join(data, "workdir", "gitbase", f.tree.String()+".index"))
	require.NoError(t, err)
	assert.Len(t, ix.Entries, len(baseFiles)+1) // and the link
}
