package gitstore_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestIgnoreMatchesCheckIgnore compares Ignore with `git check-ignore` on
// the same .gitignore files, for paths whose parents are not ignored (the
// caller skips ignored directories, as git does).
func TestIgnoreMatchesCheckIgnore(t *testing.T) {
	ignores := map[string]string{
		"":        "# comment\n*.log\n/build/\nnode_modules\n!keep.log\ndoc/*.txt\n**/gen/*.go\ntmp?\n[ab].o\n\\#hash\n",
		"src":     "*.tmp\n!important.tmp\n/local\nout/\n",
		"src/lib": "*\n!*.go\n!*/\n",
	}
	paths := []struct {
		p   string
		dir bool
	}{
		{"a.log", false}, {"keep.log", false}, {"x/a.log", false}, {"build", true}, {"src/build", true},
		{"node_modules", true}, {"src/node_modules", true}, {"doc/a.txt", false}, {"doc/sub/a.txt", false},
		{"gen/x.go", false}, {"a/gen/x.go", false}, {"tmp1", false}, {"tmp12", false}, {"a.o", false},
		{"c.o", false}, {"#hash", false}, {"src/x.tmp", false}, {"src/important.tmp", false},
		{"src/local", false}, {"src/sub/local", false}, {"src/out", true},
		{"src/lib/a.c", false}, {"src/lib/a.go", false}, {"src/lib/d", true}, {"readme.md", false},
		{"src/a.log", false}, {"src/keep.log", false},
	}
	dir := testrepo.Init(t)
	var ig gitstore.Ignore
	for _, d := range []string{"", "src", "src/lib"} {
		full := filepath.Join(dir, d)
		require.NoError(t, os.MkdirAll(full, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(full, ".gitignore"), []byte(ignores[d]), 0o644))
		ig.AddFile(d, []byte(ignores[d]))
	}
	for _, c := range paths {
		arg := c.p
		if c.dir {
			// git knows a directory only by finding one.
			require.NoError(t, os.MkdirAll(filepath.Join(dir, c.p), 0o755))
		}
		cmd := exec.Command("git", "check-ignore", "-q", "--no-index", arg)
		cmd.Dir, cmd.Env = dir, testrepo.Env()
		err := cmd.Run()
		want := err == nil
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
			t.Fatalf("git check-ignore %s: %v", arg, err)
		}
		assert.Equal(t, want, ig.Match(c.p, c.dir), "%s (dir %v)", strings.TrimSpace(c.p), c.dir)
	}
}
