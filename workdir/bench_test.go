package workdir_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/workdir"
)

// The view directory benchmarks, beside git worktree add and git status
// in the same run, on the generated 100,000-file repository.

const benchFiles = 100_000

type benchRepo struct {
	dir   string
	repo  *gitstore.Repo
	tree  gitstore.OID
	files []string
}

var benchRepoCache *benchRepo

func loadBench(b *testing.B) *benchRepo {
	b.Helper()
	if benchRepoCache != nil {
		return benchRepoCache
	}
	dir := testrepo.CachedSynthetic(b, benchFiles)
	r, err := gitstore.Open(dir)
	require.NoError(b, err)
	ctx := context.Background()
	id, err := r.ResolveRevision(ctx, "main")
	require.NoError(b, err)
	tree, err := r.TreeOf(ctx, id)
	require.NoError(b, err)
	br := &benchRepo{dir: dir, repo: r, tree: tree}
	require.NoError(b, r.List(ctx, tree, "", true, func(e gitstore.Entry) error {
		if e.Mode == gitstore.ModeFile {
			br.files = append(br.files, e.Path)
		}
		return nil
	}))
	benchRepoCache = br
	return br
}

func (br *benchRepo) view(session string) workdir.View {
	return workdir.View{
		Session: session, Repo: br.repo, BaseTree: br.tree, Overlay: overlay.New(br.repo.View(br.tree), overlay.Options{}),
		Changed: func(context.Context, int64) ([]string, bool, error) { return nil, false, nil },
	}
}

// spread picks n files spread over the tree.
func (br *benchRepo) spread(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = br.files[(i*104729+17)%len(br.files)]
	}
	return out
}

func benchManager(b *testing.B, mode workdir.Mode, dir string) *workdir.Manager {
	b.Helper()
	m, err := workdir.New(workdir.Config{Dir: dir, Mode: mode})
	if err != nil {
		b.Skipf("mode %s: %v", mode, err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}

// BenchmarkBaseCheckout builds the shared base checkout of the 100,000
// file tree into an empty cache, and in each iteration also runs git's
// reference, `git worktree add` of the same commit, right after it (the
// machine is shared, so only a comparison made at the same moment is
// fair): git-s and ratio are git's time and ours over git's.
func BenchmarkBaseCheckout(b *testing.B) {
	br := loadBench(b)
	b.Run(fmt.Sprintf("files=%d", benchFiles), func(b *testing.B) {
		clone := testrepo.CloneShared(b, br.dir)
		var ours, git time.Duration
		b.ResetTimer()
		for i := range b.N {
			b.StopTimer()
			dir := filepath.Join(b.TempDir(), "bases")
			c, err := workdir.OpenCache(dir, 0)
			require.NoError(b, err)
			start := time.Now()
			b.StartTimer()
			_, release, err := c.Acquire(context.Background(), br.repo, br.tree)
			b.StopTimer()
			ours += time.Since(start)
			require.NoError(b, err)
			release()
			b.ReportMetric(float64(c.Bytes())/1e6, "MB")
			require.NoError(b, os.RemoveAll(dir))

			wt := filepath.Join(b.TempDir(), fmt.Sprintf("wt%d", i))
			start = time.Now()
			testrepo.Git(b, clone, "worktree", "add", "-q", "--detach", wt, "main")
			git += time.Since(start)
			b.ReportMetric(float64(duBytes(b, wt))/1e6, "git-MB")
			testrepo.Git(b, clone, "worktree", "remove", "--force", wt)
			b.StartTimer()
		}
		b.ReportMetric(git.Seconds()/float64(b.N), "git-s")
		b.ReportMetric(ours.Seconds()/git.Seconds(), "ratio")
	})
}

// BenchmarkCapture finds what a command changed: 10 files rewritten in a
// session's view of the 100,000-file tree, per mode; BenchmarkGitStatus is
// git's reference in a worktree with the same 10 changes.
func BenchmarkCapture(b *testing.B) {
	br := loadBench(b)
	for _, mode := range []workdir.Mode{workdir.ModeOverlay, workdir.ModeCopy} {
		// Kept across the rounds of b.N: the base checkout is built once.
		dir := b.TempDir()
		b.Run(fmt.Sprintf("mode=%s/changed=10/files=%d", mode, benchFiles), func(b *testing.B) {
			ctx := context.Background()
			m := benchManager(b, mode, dir)
			v := br.view("bench")
			s, err := m.Prepare(ctx, v)
			require.NoError(b, err)
			defer s.Abort()
			paths := br.spread(10)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				script := ""
				for _, p := range paths {
					script += fmt.Sprintf("echo %d >> %s\n", i, p)
				}
				res, err := s.Run(ctx, workdir.Command{Argv: []string{"/bin/sh", "-c", script}, Network: true})
				require.NoError(b, err)
				require.Equal(b, 0, res.ExitCode, string(res.Stderr))
				b.StartTimer()
				cs, err := s.Capture(ctx, v, 64<<20)
				b.StopTimer()
				require.NoError(b, err)
				require.Len(b, cs, 10)
				b.StartTimer()
			}
		})
	}
}

func BenchmarkGitStatus(b *testing.B) {
	br := loadBench(b)
	b.Run(fmt.Sprintf("changed=10/files=%d", benchFiles), func(b *testing.B) {
		clone := testrepo.CloneShared(b, br.dir)
		wt := filepath.Join(b.TempDir(), "wt")
		testrepo.Git(b, clone, "worktree", "add", "-q", "--detach", wt, "main")
		testrepo.Git(b, wt, "status", "--porcelain") // the index is fresh
		b.ResetTimer()
		for i := range b.N {
			b.StopTimer()
			for _, p := range br.spread(10) {
				f, err := os.OpenFile(filepath.Join(wt, p), os.O_APPEND|os.O_WRONLY, 0)
				require.NoError(b, err)
				fmt.Fprintln(f, i)
				f.Close()
			}
			b.StartTimer()
			out := testrepo.Git(b, wt, "status", "--porcelain")
			b.StopTimer()
			require.Equal(b, 10, strings.Count(out, "\n")+1, out)
			b.StartTimer()
		}
	})
}

// duBytes is the disk space below dir (allocated blocks, as du counts).
func duBytes(tb testing.TB, dir string) int64 {
	tb.Helper()
	out, err := exec.Command("du", "-sb", "--apparent-size", dir).Output()
	require.NoError(tb, err)
	var n int64
	fmt.Sscan(string(out), &n)
	return n
}
