package gitstore_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestIndexRoundTrip reads index files git wrote, in each version and
// with each kind of entry (executable, symlink, a long name, conflict
// stages, intent-to-add, skip-worktree, assume-unchanged), writes them
// back, and checks that git reads the same entries and stat data from
// ours (git ls-files --stage --debug) and finds it valid.
func TestIndexRoundTrip(t *testing.T) {
	plainRunOnly(t, "index files round-tripped through the git CLI")
	dir := testrepo.Init(t)
	long := strings.Repeat("d/", 1100) + "long.txt" // over the 12 bits of a name length
	for p, c := range map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n", "x.sh": "#!/bin/sh\n", long: "long\n", "é.txt": "e\n"} {
		full := filepath.Join(dir, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
	require.NoError(t, os.Chmod(filepath.Join(dir, "x.sh"), 0o755))
	require.NoError(t, os.Symlink("a.txt", filepath.Join(dir, "link")))
	testrepo.Git(t, dir, "add", "-A")
	testrepo.Git(t, dir, "commit", "-q", "-m", "x")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new.txt"), []byte("n\n"), 0o644))
	testrepo.Git(t, dir, "add", "-N", "new.txt")
	testrepo.Git(t, dir, "update-index", "--skip-worktree", "sub/b.txt")
	testrepo.Git(t, dir, "update-index", "--assume-unchanged", "a.txt")
	id := testrepo.Git(t, dir, "rev-parse", "HEAD:a.txt")
	testrepo.GitInput(t, dir, []byte("100644 "+id+" 1\tconflict.txt\n100644 "+id+" 3\tconflict.txt\n"), "update-index", "--index-info")

	index := filepath.Join(dir, ".git", "index")
	ls := func(file string) string {
		return testrepo.GitEnv(t, dir, []string{"GIT_INDEX_FILE=" + file}, nil, "ls-files", "--stage", "--debug", "-v")
	}
	for _, version := range []string{"2", "3", "4"} {
		t.Run("version "+version, func(t *testing.T) {
			testrepo.Git(t, dir, "update-index", "--index-version", version)
			want := ls(index)
			ix, err := gitstore.ReadIndex(index)
			require.NoError(t, err)
			if version != "2" { // git keeps 3 for the extended flags
				assert.Equal(t, version, fmt.Sprint(ix.Version))
			}
			var buf bytes.Buffer
			require.NoError(t, ix.Encode(&buf))
			ours := filepath.Join(t.TempDir(), "index")
			require.NoError(t, os.WriteFile(ours, buf.Bytes(), 0o644))
			assert.Equal(t, want, ls(ours))
			again, err := gitstore.ReadIndex(ours)
			require.NoError(t, err)
			again.ModTime = ix.ModTime
			assert.Equal(t, ix, again)
		})
	}
}

// TestIndexRefusesWhatItCannotWriteBack: a split index is refused, as is
// a file that is not an index or whose checksum is wrong.
func TestIndexRefusesWhatItCannotWriteBack(t *testing.T) {
	dir := testrepo.Init(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("a\n"), 0o644))
	testrepo.Git(t, dir, "add", "a")
	index := filepath.Join(dir, ".git", "index")
	data, err := os.ReadFile(index)
	require.NoError(t, err)
	data[len(data)-1] ^= 1
	bad := filepath.Join(t.TempDir(), "index")
	require.NoError(t, os.WriteFile(bad, data, 0o644))
	_, err = gitstore.ReadIndex(bad)
	assert.ErrorIs(t, err, gitstore.ErrIndexFormat)
	testrepo.Git(t, dir, "update-index", "--split-index")
	_, err = gitstore.ReadIndex(index)
	assert.ErrorIs(t, err, gitstore.ErrIndexFormat)
	assert.ErrorContains(t, err, "link")
}
