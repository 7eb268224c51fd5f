package workdir_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/workdir"
)

// BenchmarkSecondSessionGoTest: a fresh session's first go test ./... of
// a module (one dependency, from a module proxy directory) after another
// session ran it, with the repository's shared tool caches, beside, in
// the same run, git worktree add plus go test ./... with a warm cache (a
// new worktree's path misses the package results, as a new session's
// would without one path for every view) and a warm worktree's second
// go test ./....
func BenchmarkSecondSessionGoTest(b *testing.B) {
	g := newGoModule(b)
	m := newCacheManager(b, workdir.ModeAuto, false, 0)
	shared := workdir.Caches{Repo: "mod"}
	goTest := "go test ./... 2>&1"
	first := g.run(b, m, "warm", shared, goTest, "GOPROXY=file://"+g.proxy)
	require.Equal(b, 0, first.ExitCode, "%s", first.Stdout)

	b.Run("session=second", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			res := g.run(b, m, fmt.Sprintf("second-%d", i), shared, goTest, "GOPROXY=off")
			require.Equal(b, 0, res.ExitCode, "%s", res.Stdout)
			if m.Isolated() {
				require.Contains(b, string(res.Stdout), "(cached)")
			}
		}
	})

	// The worktree side: its own warm caches.
	cacheEnv := append(os.Environ(), "GOCACHE="+b.TempDir(), "GOMODCACHE="+b.TempDir(), "GOFLAGS=-modcacherw",
		"GOPROXY=file://"+g.proxy, "GOSUMDB=off", "GOTOOLCHAIN=local")
	wts := b.TempDir()
	goTestIn := func(dir string) {
		cmd := exec.Command("go", "test", "./...")
		cmd.Dir, cmd.Env = dir, cacheEnv
		out, err := cmd.CombinedOutput()
		require.NoError(b, err, string(out))
	}
	warm := filepath.Join(wts, "warm")
	testrepo.Git(b, g.dir, "worktree", "add", "-q", "--detach", warm)
	goTestIn(warm)
	b.Run("worktree=add+test", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			wt := filepath.Join(wts, fmt.Sprintf("wt-%d", i))
			testrepo.Git(b, g.dir, "worktree", "add", "-q", "--detach", wt)
			goTestIn(wt)
		}
	})
	b.Run("worktree=second-run", func(b *testing.B) {
		for b.Loop() {
			goTestIn(warm)
		}
	})
}
