package session_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
)

// TestConflictStagesInView: after a rebase that kept a conflict, the
// view's index has the stages git rebase leaves (git ls-files -u in the
// view equals it in a clone rebased the same way), git status says both
// modified, git diff shows the combined diff, and git checkout --theirs
// takes the session's side, which resolves the conflict.
func TestConflictStagesInView(t *testing.T) {
	plainRunOnly(t, "git in the view on a conflict")
	forExecModes(t, func(t *testing.T, e *execEnv) {
		ctx := t.Context()
		base := e.oid("HEAD")
		s := e.create(session.CreateOptions{Base: "main"})
		e.write(s.ID, "src/keep.txt", "the session's keep\n")
		require.NoError(t, os.WriteFile(filepath.Join(e.repoDir, "src/keep.txt"), []byte("upstream's keep\n"), 0o644))
		e.git("commit", "-qam", "upstream")
		clone := gitRebase(t, e.env, base, map[string]string{"src/keep.txt": "the session's keep\n"})

		_, err := e.m.RebaseWith(ctx, s.ID, "main", "", session.ConflictsKeep)
		require.NoError(t, err)
		res := e.sh(s.ID, "git ls-files -u; git status --porcelain")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		want := testrepo.Git(t, clone, "ls-files", "-u")
		assert.Equal(t, want+"\nUU src/keep.txt\n", string(res.Stdout))
		res = e.sh(s.ID, "git diff")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Contains(t, string(res.Stdout), "diff --cc src/keep.txt", "git's combined diff of a conflict")

		res = e.sh(s.ID, "git checkout --theirs src/keep.txt && cat src/keep.txt")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Equal(t, "the session's keep\n", string(res.Stdout))
		list, err := e.m.Conflicts(ctx, s.ID)
		require.NoError(t, err)
		assert.Empty(t, list, "the markers are gone")
		res = e.sh(s.ID, "git ls-files -u")
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		assert.Empty(t, strings.TrimSpace(string(res.Stdout)), "no stages once resolved")
	})
}
