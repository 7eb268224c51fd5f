package session_test

import (
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
	e := newExecEnv(t, "overlay")
	s := e.create(session.CreateOptions{Policy: session.Policy{Read: []string{"src/**"}, Write: []string{"src/**"}}})
	res := e.sh(s.ID, "git status")
	assert.Equal(t, 128, res.ExitCode)
	assert.Contains(t, string(res.Stderr), "not a git repository")
	assert.Contains(t, res.GitAbsent, "limits what it may read")
}
