package merge_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/merge"
)

// TestRerereKeyMatchesGit: git rerere's id and preimage of a conflicted
// file (diff3 style, two hunks, sides in either order) are RerereKey's.
func TestRerereKeyMatchesGit(t *testing.T) {
	for _, style := range []string{"merge", "diff3"} {
		t.Run(style, func(t *testing.T) {
			dir := testrepo.Init(t)
			git := func(args ...string) string { return testrepo.Git(t, dir, args...) }
			write := func(s string) { require.NoError(t, os.WriteFile(filepath.Join(dir, "f.txt"), []byte(s), 0o644)) }
			git("config", "rerere.enabled", "true")
			git("config", "merge.conflictStyle", style)
			write("a\nb\nc\nd\ne\nf\ng\nh\n")
			git("add", "f.txt")
			git("commit", "-qm", "base")
			git("branch", "other")
			write("a\nB1\nc\nd\ne\nf\nG1\nh\n")
			git("commit", "-qam", "ours")
			git("checkout", "-q", "other")
			write("a\nB2\nc\nd\ne\nf\nA0\nh\n")
			git("commit", "-qam", "theirs")
			git("checkout", "-q", "-")
			cmd := exec.Command("git", "merge", "other")
			cmd.Dir, cmd.Env = dir, testrepo.Env()
			require.Error(t, cmd.Run(), "the merge conflicts")
			ids, err := os.ReadDir(filepath.Join(dir, ".git", "rr-cache"))
			require.NoError(t, err)
			require.Len(t, ids, 1)
			pre, err := os.ReadFile(filepath.Join(dir, ".git", "rr-cache", ids[0].Name(), "preimage"))
			require.NoError(t, err)
			content, err := os.ReadFile(filepath.Join(dir, "f.txt"))
			require.NoError(t, err)
			require.True(t, strings.Contains(string(content), "<<<<<<<"))
			id, got, ok := merge.RerereKey(content, 0)
			require.True(t, ok)
			require.Equal(t, ids[0].Name(), id)
			require.Equal(t, string(pre), string(got))
		})
	}
}
