package testrepo_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/internal/testrepo"
)

// synthetic1000 pins Synthetic(dir, 1000, 1). If a change to the generator
// moves it, bump syntheticVersion so caches are rebuilt, then update this.
const synthetic1000 = "d5684d61e99c0095855666278b350dfa73a5ad87"

type shape struct {
	files, dirs, depth    int
	executables, symlinks int
}

func shapeOf(t *testing.T, dir string) shape {
	t.Helper()
	var s shape
	for _, line := range strings.Split(testrepo.Git(t, dir, "ls-tree", "-r", "-t", "main"), "\n") {
		meta, path, ok := strings.Cut(line, "\t")
		require.True(t, ok, "ls-tree line %q", line)
		switch strings.Fields(meta)[0] {
		case "040000":
			s.dirs++
			continue
		case "100755":
			s.executables++
		case "120000":
			s.symlinks++
		}
		s.files++
		s.depth = max(s.depth, strings.Count(path, "/"))
	}
	return s
}

func synthetic(t *testing.T, files, seed int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "synthetic.git")
	require.NoError(t, testrepo.Synthetic(dir, files, seed))
	return dir
}

func TestSynthetic(t *testing.T) {
	for _, tc := range []struct {
		files int
		want  shape
	}{
		// File 0 goes to the root; the one directory stays empty, so git has none.
		{1, shape{files: 1}},
		{1000, shape{files: 1000, dirs: 20, depth: 4, executables: 2, symlinks: 1}},
		{5000, shape{files: 5000, dirs: 100, depth: 4, executables: 10, symlinks: 5}},
	} {
		t.Run("files="+strconv.Itoa(tc.files), func(t *testing.T) {
			t.Parallel()
			dir := synthetic(t, tc.files, 1)
			testrepo.Git(t, dir, "fsck", "--strict", "--no-dangling")
			assert.Equal(t, tc.want, shapeOf(t, dir))
			assert.Equal(t, "1", testrepo.Git(t, dir, "rev-list", "--count", "main"))
			assert.Equal(t, "true", testrepo.Git(t, dir, "rev-parse", "--is-bare-repository"))
		})
	}
}

func TestSyntheticIsDeterministic(t *testing.T) {
	a := testrepo.Git(t, synthetic(t, 1000, 1), "rev-parse", "main")
	b := testrepo.Git(t, synthetic(t, 1000, 1), "rev-parse", "main")
	c := testrepo.Git(t, synthetic(t, 1000, 2), "rev-parse", "main")
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c, "the seed changes the repository")
	assert.Equal(t, synthetic1000, a)
}

func TestSyntheticRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x"), nil, 0o644))
	assert.Error(t, testrepo.Synthetic(dir, 10, 1))
}

func TestEnsureSynthetic(t *testing.T) {
	cache := t.TempDir()
	dir, err := testrepo.EnsureSynthetic(cache, 100, 1)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(cache, "synthetic-100-1"), dir)
	head := testrepo.Git(t, dir, "rev-parse", "main")

	// Reused: a file dropped into it survives the second call.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sentinel"), nil, 0o644))
	again, err := testrepo.EnsureSynthetic(cache, 100, 1)
	require.NoError(t, err)
	assert.Equal(t, dir, again)
	assert.FileExists(t, filepath.Join(dir, "sentinel"))

	// A directory without the marker (an interrupted or older build) is
	// replaced.
	require.NoError(t, os.Remove(filepath.Join(dir, "sessiond-synthetic")))
	again, err = testrepo.EnsureSynthetic(cache, 100, 1)
	require.NoError(t, err)
	assert.NoFileExists(t, filepath.Join(again, "sentinel"))
	assert.Equal(t, head, testrepo.Git(t, again, "rev-parse", "main"))

	leftovers, err := filepath.Glob(filepath.Join(cache, ".*"))
	require.NoError(t, err)
	assert.Empty(t, leftovers, "temporary directories are removed")
}

func TestCachedSynthetic(t *testing.T) {
	dir := testrepo.CachedSynthetic(t, 1000)
	assert.Equal(t, synthetic1000, testrepo.Git(t, dir, "rev-parse", "main"))
	assert.Equal(t, dir, testrepo.CachedSynthetic(t, 1000))

	clone := testrepo.CloneShared(t, dir)
	assert.Equal(t, synthetic1000, testrepo.Git(t, clone, "rev-parse", "main"))
}

// TestSyntheticFullSize builds the 100,000-file repository the performance
// targets use. It takes several seconds, so it runs only on request:
//
//	SESSIOND_SYNTHETIC_FULL=1 go test -run FullSize -v ./internal/testrepo/
func TestSyntheticFullSize(t *testing.T) {
	if os.Getenv("SESSIOND_SYNTHETIC_FULL") == "" {
		t.Skip("set SESSIOND_SYNTHETIC_FULL=1 to build 100,000 files")
	}
	start := time.Now()
	dir := synthetic(t, testrepo.DefaultSyntheticFiles, testrepo.SyntheticSeed)
	t.Logf("Synthetic(%d files): %v", testrepo.DefaultSyntheticFiles, time.Since(start))
	s := shapeOf(t, dir)
	assert.Equal(t, testrepo.DefaultSyntheticFiles, s.files)
	assert.Equal(t, 2000, s.dirs)
	assert.Equal(t, 4, s.depth)
	t.Logf("%+v", s)
}
