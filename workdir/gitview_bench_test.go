package workdir_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/workdir"
)

// BenchmarkGitInView: git status and git diff in a fresh session's view
// of the 100,000-file tree with 10 files changed (the first git status of
// the session, then a second), the same in a git worktree with a warm
// index in the same run, and what the view's .git adds to a command's
// start (start-git-ms: a fresh session's first command, which copies the
// shared index; start-git-again-ms: its next). Times of git are taken
// inside the command (git's own run), in ms.
func BenchmarkGitInView(b *testing.B) {
	br := loadBench(b)
	ctx := context.Background()
	m := benchManager(b, workdir.ModeOverlay, b.TempDir())
	head := mustRevB(b, br, "main")
	g := &workdir.Git{Branch: "sessiond/bench", Head: head, HeadTree: br.tree, BaseRef: "main", BaseCommit: head,
		UserName: "bench", UserEmail: "bench@sessiond", RepoGitDir: br.dir, RepoName: "bench",
		Branches: []workdir.GitRef{{Name: "main", OID: head}}}
	paths := br.spread(10)
	edit := ""
	for _, p := range paths {
		edit += fmt.Sprintf("echo changed >> %s\n", p)
	}
	const timed = `t() { s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $(( (e-s)/1000 )); }
`
	ms := func(s string) float64 {
		n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		require.NoError(b, err, s)
		return n / 1000
	}

	clone := testrepo.CloneShared(b, br.dir)
	wt := filepath.Join(b.TempDir(), "wt")
	testrepo.Git(b, clone, "worktree", "add", "-q", "--detach", wt, "main")
	testrepo.Git(b, wt, "status", "--porcelain")
	for _, p := range paths {
		f, err := os.OpenFile(filepath.Join(wt, p), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(b, err)
		fmt.Fprintln(f, "changed")
		f.Close()
	}
	testrepo.Git(b, wt, "status", "--porcelain") // warm: the index is fresh

	run := func(s *workdir.Scratch, script string, git *workdir.Git) (workdir.Result, time.Duration) {
		start := time.Now()
		res, err := s.Run(ctx, workdir.Command{Argv: []string{"/bin/sh", "-c", script}, Git: git})
		require.NoError(b, err)
		require.Equal(b, 0, res.ExitCode, string(res.Stderr))
		return res, res.Started.Sub(start)
	}
	// Warm up: the public objects and the base index are built once per
	// repository and base.
	s, err := m.Prepare(ctx, br.view("warm"))
	require.NoError(b, err)
	run(s, "true", g)
	s.Abort()

	var first, second, diff, coStatus, coDiff, withGit, warm, without float64
	b.ResetTimer()
	for i := range b.N {
		s, err := m.Prepare(ctx, br.view(fmt.Sprintf("s%d", i)))
		require.NoError(b, err)
		_, d0 := run(s, "true", nil)
		_, d1 := run(s, "true", g)
		_, d2 := run(s, "true", g)
		without += d0.Seconds() * 1000
		withGit += d1.Seconds() * 1000
		warm += d2.Seconds() * 1000
		res, _ := run(s, edit+timed+"t git status --porcelain; t git status --porcelain; t git diff", g)
		out := strings.Fields(string(res.Stdout))
		require.Len(b, out, 3, string(res.Stdout))
		first += ms(out[0])
		second += ms(out[1])
		diff += ms(out[2])
		s.Abort()

		start := time.Now()
		testrepo.Git(b, wt, "status", "--porcelain")
		coStatus += time.Since(start).Seconds() * 1000
		start = time.Now()
		testrepo.Git(b, wt, "diff")
		coDiff += time.Since(start).Seconds() * 1000
	}
	n := float64(b.N)
	b.ReportMetric(first/n, "status-first-ms")
	b.ReportMetric(second/n, "status-ms")
	b.ReportMetric(diff/n, "diff-ms")
	b.ReportMetric(coStatus/n, "checkout-status-ms")
	b.ReportMetric(coDiff/n, "checkout-diff-ms")
	b.ReportMetric(first/coStatus, "status-ratio")
	b.ReportMetric(withGit/n, "start-git-ms")
	b.ReportMetric(warm/n, "start-git-again-ms")
	b.ReportMetric(without/n, "start-nogit-ms")
}

func mustRevB(b *testing.B, br *benchRepo, rev string) gitstore.OID {
	id, err := br.repo.ResolveRevision(context.Background(), rev)
	require.NoError(b, err)
	return id
}
