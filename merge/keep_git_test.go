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
		switch keepBesideGit(t, rt, dir, repo, base, ours, theirs) {
		case keptConflicts:
			conflicted++
		case gitBroken:
			skipped++
		}
	})
	t.Logf("%d conflicted merges kept as git keeps them, %d where git writes a broken tree", conflicted, skipped)
}

// A conflict kept at a path below which the clean part of the merge
// deletes: theirs renamed h.txt to b, changing it where ours changed it,
// and deleted the directory b. The kept file b replaces that directory
// (the merge once refused: "b is written as a file and has changes
// below it").
func TestKeepConflictOverDeletedDirectory(t *testing.T) {
	dir := testrepo.InitBare(t)
	repo, err := gitstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	text := func(first string) file {
		return file{gitstore.ModeFile, []byte(first + "\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")}
	}
	base := model{"h.txt": text("1"), "b/f3": {gitstore.ModeFile, []byte("f3\n")}, "keep.txt": {gitstore.ModeFile, []byte("k\n")}}
	ours := base.clone()
	ours["h.txt"] = text("ours")
	theirs := model{"b": text("theirs"), "keep.txt": base["keep.txt"]}
	require.Equal(t, keptConflicts, keepBesideGit(t, t, dir, repo, base, ours, theirs))
}

// How keepBesideGit found a merge.
type keepOutcome int

const (
	cleanMerge    keepOutcome = iota // clean in git: TestMergeMatchesGitMergeTree's
	keptConflicts                    // conflicted, and kept with git's tree
	gitBroken                        // conflicted, and git wrote a broken tree
)

// keepBesideGit commits base and the two sides, merges them keeping the
// conflicts in git's diff3 style, and requires git merge-tree's tree.
func keepBesideGit(t *testing.T, rt interface {
	require.TestingT
	Logf(string, ...any)
	Skipf(string, ...any)
}, dir string, repo *gitstore.Repo, base, ours, theirs model) keepOutcome {
	ctx := t.Context()
	bc, oc, tc := commitThree(ctx, rt, repo, base, ours, theirs)
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
		return cleanMerge
	}
	require.NoError(rt, err)
	require.NotEmpty(rt, res.Conflicts)
	if gitTree != res.Tree.String() {
		if strings.Contains(gitMergeTreeMessages(dir, "false", oc, tc), "000000 "+gitstore.ZeroOID.String()) {
			return gitBroken
		}
		rt.Logf("conflicts: %+v", res.Conflicts)
		rt.Logf("git vs ours:\n%s", testrepo.Git(t, dir, "diff-tree", "-r", "-p", gitTree, res.Tree.String()))
	}
	require.Equal(rt, gitTree, res.Tree.String())
	return keptConflicts
}
