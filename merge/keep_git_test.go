package merge_test

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/merge"
)

// TestKeepConflictsMatchesGitMergeTree: random merges as in
// TestMergeMatchesGitMergeTree, kept with their conflicts in git's diff3
// style. The tree must be the one git merge-tree --write-tree writes with
// merge.conflictStyle=diff3 (markers with the base's section, modified
// files a side deleted kept, files moved aside), and the conflicted paths
// git's.
func TestKeepConflictsMatchesGitMergeTree(t *testing.T) {
	dir := testrepo.InitBare(t)
	repo, err := gitstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	ctx := t.Context()
	var conflicted, skipped int
	rapid.Check(t, func(rt *rapid.T) {
		base := model{}
		for i := range rapid.IntRange(1, 10).Draw(rt, "files") {
			p := genPath(rt, fmt.Sprint("base", i))
			if base.canPut(p) {
				base[p] = genFile(rt, fmt.Sprint("base", i))
			}
		}
		ours, theirs := base.clone(), base.clone()
		mutate(rt, "ours", ours)
		mutate(rt, "theirs", theirs)
		b := repo.NewBatch()
		_, bc := commitModel(ctx, rt, b, base)
		_, oc := commitModel(ctx, rt, b, ours, bc)
		_, tc := commitModel(ctx, rt, b, theirs, bc)
		require.NoError(rt, b.Flush(ctx))
		cmd := exec.Command("git", "-c", "merge.conflictStyle=diff3", "-c", "merge.directoryRenames=false", "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", oc.String(), tc.String())
		cmd.Dir, cmd.Env = dir, testrepo.Env()
		out, gitErr := cmd.Output()
		var exit *exec.ExitError
		if gitErr != nil && !(errors.As(gitErr, &exit) && exit.ExitCode() == 1) {
			rt.Skipf("git merge-tree failed: %v", gitErr) // its assertion, see gitMergeTree
		}
		gitTree, _, _ := strings.Cut(string(out), "\x00")
		rt.Logf("base %s\nours %s\ntheirs %s", describe(base), describe(ours), describe(theirs))
		res, err := merge.Merge(ctx, repo, bc, oc, tc, merge.MergeOptions{
			OursLabel: oc.String(), TheirsLabel: tc.String(), Diff3: true, DirectoryRenames: merge.DirRenamesOff,
			BaseLabel: strings.TrimSpace(testrepo.Git(t, dir, "rev-parse", "--short", bc.String())), KeepConflicts: true,
		})
		if gitErr == nil || strings.Contains(testrepo.Git(t, dir, "ls-tree", "-r", gitTree), gitstore.ZeroOID.String()) {
			// Clean (TestMergeMatchesGitMergeTree's), or git's broken tree
			// (see there).
			return
		}
		require.NoError(rt, err)
		require.NotEmpty(rt, res.Conflicts)
		if gitTree != res.Tree.String() {
			if strings.Contains(gitMergeTreeMessages(dir, "false", oc, tc), "000000 "+gitstore.ZeroOID.String()) {
				skipped++
				return
			}
			rt.Logf("conflicts: %+v", res.Conflicts)
			rt.Logf("git vs ours:\n%s", testrepo.Git(t, dir, "diff-tree", "-r", "-p", gitTree, res.Tree.String()))
		}
		require.Equal(rt, gitTree, res.Tree.String())
		conflicted++
	})
	t.Logf("%d conflicted merges kept as git keeps them, %d where git writes a broken tree", conflicted, skipped)
}
