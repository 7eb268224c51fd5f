package merge_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/merge"
)

// TestUnifiedDiffAppliesWithGit: for random changes (edits, adds,
// deletes, renames, mode and type changes, binary files, missing final
// newlines) git apply accepts our unified diff and turns the old tree
// into exactly the new one.
func TestUnifiedDiffAppliesWithGit(t *testing.T) {
	dir := testrepo.InitBare(t)
	repo, err := gitstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	ctx := t.Context()
	index := filepath.Join(t.TempDir(), "index")
	run := func(stdin []byte, args ...string) (string, string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(testrepo.Env(), "GIT_INDEX_FILE="+index)
		cmd.Stdin = bytes.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return string(bytes.TrimSpace(out)), stderr.String(), err
	}
	git := func(t require.TestingT, stdin []byte, args ...string) string {
		out, stderr, err := run(stdin, args...)
		require.NoError(t, err, "git %v: %s", args, stderr)
		return out
	}
	rapid.Check(t, func(rt *rapid.T) {
		old := model{}
		for i := range rapid.IntRange(0, 10).Draw(rt, "files") {
			p := genPath(rt, "base")
			if old.canPut(p) {
				old[p] = genFile(rt, "base"+string(rune('a'+i)))
			}
		}
		cur := old.clone()
		mutate(rt, "new", cur)
		b := repo.NewBatch()
		oldTree, _ := commitModel(ctx, rt, b, old)
		newTree, _ := commitModel(ctx, rt, b, cur)
		require.NoError(rt, b.Flush(ctx))

		patch, err := merge.Diff(ctx, repo, oldTree, newTree, merge.DiffOptions{}, merge.PatchOptions{})
		require.NoError(rt, err)
		text := patch.Unified()
		git(rt, nil, "read-tree", oldTree.String())
		if len(text) > 0 {
			if _, stderr, err := run(text, "apply", "--cached", "--check", "-"); err != nil {
				// git apply cannot apply some patches git diff itself
				// writes (a file renamed to below the symlink it replaces
				// is "beyond a symbolic link"). Ours must fail only
				// where git's own diff fails the same way.
				own := git(rt, nil, "diff", "--binary", "-M", oldTree.String(), newTree.String())
				_, ownErr, err2 := run([]byte(own+"\n"), "apply", "--cached", "--check", "-")
				require.Error(rt, err2, "git apply refuses our patch but takes git's own: %s\npatch:\n%s", stderr, text)
				require.Equal(rt, ownErr, stderr, "git apply fails differently on git's own diff")
				return
			}
			git(rt, text, "apply", "--cached", "-")
		}
		require.Equal(rt, newTree.String(), git(rt, nil, "write-tree"), "patch:\n%s", text)

		// The stats agree with git's numstat.
		if oldTree != newTree {
			want := git(rt, nil, "diff", "--shortstat", "-M", oldTree.String(), newTree.String())
			require.Contains(rt, want, shortstatFiles(patch.Stats.Files))
		}
	})
}

func shortstatFiles(n int) string {
	if n == 1 {
		return "1 file changed"
	}
	return itoa(n) + " files changed"
}

func itoa(n int) string { return fmtInt(n) }

func fmtInt(n int) string { return strconv.Itoa(n) }
