package session_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
)

// Commits made in the view become checkpoints, in order, holding exactly
// what each commit held; what was not committed stays a change of the
// session.
func TestGitCommitsBecomeCheckpoints(t *testing.T) {
	plainRunOnly(t, "git in the view")
	forExecModes(t, func(t *testing.T, e *execEnv) {
		s := e.create(session.CreateOptions{AgentName: "Ada"})
		res := e.sh(s.ID, `set -e
echo one > one.txt
echo two > two.txt
git add one.txt
git commit -q -m "first step"
echo changed > src/keep.txt
git commit -q -am "second step

with a body"
git status --porcelain`)
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "?? two.txt\n", string(res.Stdout))
		assert.Empty(t, res.GitNote)
		require.Len(t, res.Checkpoints, 2)
		assert.Equal(t, "first step", res.Checkpoints[0].Label)
		assert.Equal(t, "second step", res.Checkpoints[1].Label)

		// The first holds one.txt alone; the second adds src/keep.txt;
		// two.txt stays a change of the session.
		ls := func(c string) string {
			return testrepo.Git(t, e.repoDir, "ls-tree", "-r", "--name-only", c)
		}
		assert.Contains(t, ls(res.Checkpoints[0].Commit.String()), "one.txt")
		assert.NotContains(t, ls(res.Checkpoints[0].Commit.String()), "two.txt")
		assert.Equal(t, "changed", testrepo.Git(t, e.repoDir, "show", res.Checkpoints[1].Commit.String()+":src/keep.txt"))
		assert.NotContains(t, ls(res.Checkpoints[1].Commit.String()), "two.txt")
		assert.Equal(t, res.Checkpoints[0].Commit, res.Checkpoints[1].Parent)
		assert.Contains(t, testrepo.Git(t, e.repoDir, "log", "-1", "--format=%an %B", res.Checkpoints[1].Commit.String()), "second step\n\nwith a body")
		assert.Equal(t, "two\n", e.read(s.ID, "two.txt"))
		testrepo.Git(t, e.repoDir, "fsck", "--strict", "--no-dangling")
		// Objects written inside reach the repository only as
		// sessiond's checkpoints: the view's commits are not there.
		viewCommit := e.sh(s.ID, "git reflog --format=%H | head -1")
		require.Equal(t, 0, viewCommit.ExitCode, string(viewCommit.Stderr))
		err := exec.Command("git", "-C", e.repoDir, "cat-file", "-e", strings.TrimSpace(string(viewCommit.Stdout))).Run()
		assert.Error(t, err, "the view's own commit is not in the repository")

		// The view's branch now names sessiond's checkpoint; the work
		// tree and the index agree with it.
		res = e.sh(s.ID, "git rev-parse HEAD; git status --porcelain; git log --format=%s")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, res.Checkpoints, []session.Checkpoint(nil))
		assert.Equal(t, "", res.GitNote)
		lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
		cps, err := e.m.Checkpoints(t.Context(), s.ID)
		require.NoError(t, err)
		require.Len(t, cps, 2)
		assert.Equal(t, cps[1].Commit.String(), lines[0])
		assert.Equal(t, []string{"?? two.txt", "second step", "first step", "module"}, lines[1:])

		// An amend rewrites nothing recorded; the working tree change is.
		res = e.sh(s.ID, "echo amended > one.txt && git commit -q -a --amend -m rewritten")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Empty(t, res.Checkpoints)
		assert.Contains(t, res.GitNote, "history is not rewritten")
		assert.Equal(t, "amended\n", e.read(s.ID, "one.txt"))
		cps, err = e.m.Checkpoints(t.Context(), s.ID)
		require.NoError(t, err)
		assert.Len(t, cps, 2)
	})
}

func TestGitReadLimitedHasNone(t *testing.T) {
	plainRunOnly(t, "git in the view")
	e := newExecEnv(t, "overlay")
	s := e.create(session.CreateOptions{Policy: session.Policy{Read: []string{"src/**"}, Write: []string{"src/**"}}})
	res := e.sh(s.ID, "git status")
	assert.Equal(t, 128, res.ExitCode)
	assert.Contains(t, string(res.Stderr), "not a git repository")
	assert.Contains(t, res.GitAbsent, "limits what it may read")
}

// git's everyday flows in the view behave as in a checkout and come back
// as the right checkpoints and changes.
func TestGitFlowsInView(t *testing.T) {
	plainRunOnly(t, "git in the view")
	forExecModes(t, func(t *testing.T, e *execEnv) {
		s := e.create(session.CreateOptions{})
		res := e.sh(s.ID, `set -e
echo broken > add.go
git restore add.go
echo broken > docs/read.txt
git checkout -- docs/read.txt
echo wip > src/keep.txt
git stash -q
test "$(cat src/keep.txt)" = keep
git stash pop -q
git switch -q -c feature
git commit -q -am "on feature"
git rev-parse --abbrev-ref HEAD
git status --porcelain`)
		require.Equal(t, 0, res.ExitCode, string(res.Stdout)+string(res.Stderr))
		assert.Equal(t, "feature\n", string(res.Stdout))
		require.Len(t, res.Checkpoints, 1)
		assert.Equal(t, "on feature", res.Checkpoints[0].Label)
		assert.Equal(t, "wip\n", e.read(s.ID, "src/keep.txt"))
		assert.Equal(t, "package m\n\nfunc Add(a, b int) int { return a + b }\n", e.read(s.ID, "add.go"))
		if res.Mutation != nil {
			for _, c := range res.Changes {
				assert.Equal(t, "src/keep.txt", c.Path)
			}
		}

		// The local branch and the stash list persist; reset --soft of a
		// recorded commit rewrites nothing and says so.
		res = e.sh(s.ID, `set -e
git branch --list feature
git stash list | wc -l
git reset -q --soft HEAD~1
git commit -q -m "redone"`)
		require.Equal(t, 0, res.ExitCode, string(res.Stdout)+string(res.Stderr))
		assert.Equal(t, "* feature\n0\n", string(res.Stdout))
		assert.Empty(t, res.Checkpoints)
		assert.Contains(t, res.GitNote, "history is not rewritten")

		// The next commit builds on the session's newest checkpoint.
		res = e.sh(s.ID, `echo next > next.txt && git add next.txt && git commit -q -m next`)
		require.Equal(t, 0, res.ExitCode, string(res.Stdout)+string(res.Stderr))
		require.Len(t, res.Checkpoints, 1, res.GitNote)
		cps, err := e.m.Checkpoints(t.Context(), s.ID)
		require.NoError(t, err)
		require.Len(t, cps, 2)
		assert.Equal(t, cps[0].Commit, cps[1].Parent)
		assert.Contains(t, testrepo.Git(t, e.repoDir, "ls-tree", "-r", "--name-only", cps[1].Commit.String()), "next.txt")
		// A stash entry persists between commands too.
		res = e.sh(s.ID, `echo stashed >> add.go && git stash -q`)
		require.Equal(t, 0, res.ExitCode, string(res.Stdout)+string(res.Stderr))
		res = e.sh(s.ID, `git stash list | wc -l`)
		assert.Equal(t, "1\n", string(res.Stdout))
	})
}

// go build stamps VCS information from the view's .git.
func TestGitGoBuildStampsVCS(t *testing.T) {
	plainRunOnly(t, "git in the view")
	forExecModes(t, testGoBuildStamps)
}

func testGoBuildStamps(t *testing.T, e *execEnv) {
	s := e.create(session.CreateOptions{})
	e.write(s.ID, "cmd/m/main.go", "package main\n\nfunc main() {}\n")
	env := goEnv(t)
	env["GOFLAGS"] = "-mod=mod -buildvcs=true"
	res, err := e.en.Exec.Exec(t.Context(), s.ID, session.ExecOptions{Command: "go build -o /tmp/m ./cmd/m && go version -m /tmp/m", Env: env})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, string(res.Stdout)+string(res.Stderr))
	assert.Contains(t, string(res.Stdout), "vcs=git")
	assert.Contains(t, string(res.Stdout), "vcs.revision="+s.BaseCommit.String())
	assert.Contains(t, string(res.Stdout), "vcs.modified=true")
}

// Another session's uncheckpointed file and checkpoints are neither
// listed nor readable from a view, also after the repository's packs
// were consolidated.
func TestGitViewHidesOtherSessions(t *testing.T) {
	plainRunOnly(t, "git in the view")
	e := newExecEnv(t, "overlay")
	other := e.create(session.CreateOptions{})
	e.write(other.ID, "secret.txt", "the other session's own words\n")
	cp, err := e.m.Checkpoint(t.Context(), other.ID, "theirs", "")
	require.NoError(t, err)
	e.write(other.ID, "later.txt", "not checkpointed either\n")
	later := strings.TrimSpace(hashOf(t, "not checkpointed either\n"))
	s := e.create(session.CreateOptions{})
	for _, step := range []string{"before", "after repack"} {
		res := e.sh(s.ID, "git cat-file --batch-all-objects --batch-check='%(objectname)'; echo ---; git cat-file -p "+later+"; git cat-file -p "+cp.Commit.String()+"; git log --all --format=%H")
		require.Equal(t, 0, res.ExitCode, step+": "+string(res.Stderr))
		out := string(res.Stdout)
		assert.NotContains(t, out, later, step)
		assert.NotContains(t, out, cp.Commit.String(), step)
		assert.NotContains(t, out, cp.Tree.String(), step)
		assert.NotContains(t, out, "not checkpointed", step)
		testrepo.Git(t, e.repoDir, "repack", "-a", "-d", "-q")
	}
}

func hashOf(t *testing.T, content string) string {
	t.Helper()
	cmd := exec.Command("git", "hash-object", "--stdin")
	cmd.Stdin = strings.NewReader(content)
	out, err := cmd.Output()
	require.NoError(t, err)
	return string(out)
}

// A commit naming another session's blob, with alternates and a link
// planted to lead the daemon into the repository's objects, becomes no
// checkpoint: the daemon reads the view's objects alone.
func TestGitCommitCannotBorrowObjects(t *testing.T) {
	plainRunOnly(t, "git in the view")
	e := newExecEnv(t, "overlay")
	other := e.create(session.CreateOptions{})
	e.write(other.ID, "secret.txt", "the other session's own words\n")
	secret := strings.TrimSpace(hashOf(t, "the other session's own words\n"))
	s := e.create(session.CreateOptions{})
	objects := e.repoDir + "/.git/objects"
	res := e.sh(s.ID, `set -e
echo `+objects+` >> .git/objects/info/alternates
rm -rf .git/objects/pack && ln -s `+objects+`/pack .git/objects/pack
git update-index --add --cacheinfo 100644,`+secret+`,stolen.txt
tree=$(git write-tree --missing-ok)
commit=$(echo steal | git commit-tree $tree -p HEAD)
git update-ref HEAD $commit`)
	require.Equal(t, 0, res.ExitCode, string(res.Stdout)+string(res.Stderr))
	assert.Empty(t, res.Checkpoints)
	assert.Contains(t, res.GitNote, "not readable in the view")
	cps, err := e.m.Checkpoints(t.Context(), s.ID)
	require.NoError(t, err)
	assert.Empty(t, cps)
	// The next command gets a working .git again.
	res = e.sh(s.ID, "git status --porcelain >/dev/null && git cat-file -e "+s.BaseCommit.String()+" && echo fine")
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	assert.Equal(t, "fine\n", string(res.Stdout))
}

// What a command staged beyond the commits it made stays staged: the
// head's move to sessiond's checkpoint of those commits keeps the index.
func TestGitStagedWorkSurvivesCheckpoints(t *testing.T) {
	plainRunOnly(t, "git in the view")
	forExecModes(t, func(t *testing.T, e *execEnv) {
		s := e.create(session.CreateOptions{AgentName: "Ada"})
		res := e.sh(s.ID, `set -e
echo a > a.txt
echo b > b.txt
git add a.txt b.txt
git commit -q -m "only a" a.txt`)
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		require.Len(t, res.Checkpoints, 1)
		res = e.sh(s.ID, "git status --porcelain; git diff --cached --name-only")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "A  b.txt\nb.txt\n", string(res.Stdout))

		// A checkpoint made through the API moves the head to a tree the
		// view's HEAD never had: the index follows it.
		_, err := e.m.Checkpoint(t.Context(), s.ID, "by the api", "")
		require.NoError(t, err)
		res = e.sh(s.ID, "git status --porcelain")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "", string(res.Stdout))
	})
}
