package workdir

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTrimCachesLeastRecentlyUsed: a trim removes the least recently
// used entries first, a file at a time, a cache trimmed whole (the module
// cache) as one entry dated by its newest file, and stops once what is
// left fits.
func TestTrimCachesLeastRecentlyUsed(t *testing.T) {
	old := time.Now().Add(-48 * time.Hour)
	files := []struct {
		path string
		age  time.Duration // before now-48h: larger is older
	}{
		{"go-build/aa/oldest-d", 40 * time.Hour},
		{"go-mod/example.com/dep@v1.0.0/dep.go", 30 * time.Hour},
		{"go-mod/cache/download/example.com/dep/@v/v1.0.0.zip", 10 * time.Hour}, // the module cache's newest
		{"go-build/bb/older-d", 20 * time.Hour},
		{"npm/content-v2/x", 5 * time.Hour},
		{"go-build/cc/newest-d", 0},
	}
	for _, tc := range []struct {
		name   string
		budget int64
		gone   []string
	}{
		{"within budget", 6 << 10, nil},
		{"one file", 5 << 10, []string{"go-build/aa/oldest-d"}},
		// The module cache is dated by its newest file (10 h), so the
		// 20 h file goes before it, and then both of its files at once.
		{"whole module cache", 2 << 10, []string{"go-build/aa/oldest-d", "go-build/bb/older-d", "go-mod"}},
		{"all", 0, []string{"go-build/aa/oldest-d", "go-build/bb/older-d", "go-mod", "npm/content-v2/x", "go-build/cc/newest-d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range files {
				p := filepath.Join(dir, f.path)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, make([]byte, 1<<10), 0o444))
				at := old.Add(-f.age)
				require.NoError(t, os.Chtimes(p, at, at))
			}
			left, err := trimCaches(dir, tc.budget)
			require.NoError(t, err)
			assert.LessOrEqual(t, left, tc.budget)
			gone := map[string]bool{}
			for _, g := range tc.gone {
				gone[g] = true
			}
			for _, f := range files {
				key := f.path
				if filepath.Dir(filepath.Dir(key)) != "." && key[:6] == "go-mod" {
					key = "go-mod"
				}
				_, err := os.Stat(filepath.Join(dir, f.path))
				if gone[key] {
					assert.ErrorIs(t, err, os.ErrNotExist, f.path)
				} else {
					assert.NoError(t, err, f.path)
				}
			}
		})
	}
}

// TestCacheRepoName: a repository name that is not one path element is
// refused before anything is made.
func TestCacheRepoName(t *testing.T) {
	dir := t.TempDir()
	tc := newToolCaches(dir, 0)
	for _, name := range []string{"..", ".", "a/b", "a\x00"} {
		_, err := tc.use(&Scratch{dir: t.TempDir()}, Caches{Repo: name}, true, &helperSpec{})
		assert.ErrorIs(t, err, ErrInvalid, name)
	}
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, ents)
}

// TestTrimFollowsNoSymlink: a command may leave symlinks in a shared
// cache; a trim removes the link, never what it points to.
func TestTrimFollowsNoSymlink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "keep"), make([]byte, 4<<10), 0o644))
	for _, c := range []string{"go-build", "go-mod"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, c), 0o755))
		require.NoError(t, os.Symlink(outside, filepath.Join(dir, c, "link")))
		require.NoError(t, os.WriteFile(filepath.Join(dir, c, "entry"), make([]byte, 1<<10), 0o644))
	}
	left, err := trimCaches(dir, 0)
	require.NoError(t, err)
	assert.Zero(t, left)
	_, err = os.Stat(filepath.Join(outside, "keep"))
	assert.NoError(t, err, "a trim followed a symlink out of the cache")
	_, err = os.Lstat(filepath.Join(dir, "go-mod"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
