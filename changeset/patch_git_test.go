package changeset_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
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
	git := func(t require.TestingT, stdin []byte, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(testrepo.Env(), "GIT_INDEX_FILE="+index)
		cmd.Stdin = bytes.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "git %v: %s", args, stderr.String())
		return string(bytes.TrimSpace(out))
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

		patch, err := changeset.Diff(ctx, repo, oldTree, newTree, changeset.DiffOptions{}, changeset.PatchOptions{})
		require.NoError(rt, err)
		text := patch.Unified()
		git(rt, nil, "read-tree", oldTree.String())
		if len(text) > 0 {
			git(rt, text, "apply", "--cached", "--check", "-")
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
