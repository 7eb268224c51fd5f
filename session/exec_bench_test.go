package session_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
	"github.com/sessiond/sessiond/workdir"
)

// execBench is an engine with view directories over a clone of the
// 100,000-file repository, its base checkout already built.
type execBench struct {
	m       *session.Executor
	dataDir string
}

// execBenches keeps one engine per mode across the rounds of b.N.
var execBenches = map[workdir.Mode]*execBench{}

func newExecBench(b *testing.B, mode workdir.Mode) *execBench {
	b.Helper()
	if e := execBenches[mode]; e != nil {
		return e
	}
	ctx := context.Background()
	br := loadBenchRepo(b, 100_000)
	// Outlives this round of b.N; the process's end removes nothing, so
	// the directories are under the module's .cache.
	root, err := testrepo.ModuleRoot()
	require.NoError(b, err)
	if len(execBenches) == 0 {
		old, _ := filepath.Glob(filepath.Join(root, ".cache", "exec-bench-*"))
		for _, d := range old {
			_ = os.RemoveAll(d)
		}
	}
	data, err := os.MkdirTemp(filepath.Join(root, ".cache"), "exec-bench-")
	require.NoError(b, err)
	repo := filepath.Join(data, "repo.git")
	testrepo.Git(b, "", "clone", "-q", "--bare", "--local", "--", br.dir, repo)
	st, err := db.OpenSQLite(ctx, filepath.Join(data, "sessiond.db"))
	require.NoError(b, err)
	wd, err := workdir.New(workdir.Config{Dir: filepath.Join(data, "workdir"), Mode: mode})
	if err != nil {
		b.Skipf("mode %s: %v", mode, err)
	}
	en := testengine.New(st, data, session.Config{Workdirs: wd})
	_, err = en.Repos.Register(ctx, "r", repo)
	require.NoError(b, err)
	e := &execBench{m: en.Exec, dataDir: data}
	e.exec(b, e.create(b), "true") // builds the shared base checkout
	execBenches[mode] = e
	return e
}

func (e *execBench) create(b *testing.B) session.Session {
	s, err := e.m.Create(context.Background(), session.CreateOptions{Repo: "r", Base: "main", AgentID: "bench"})
	require.NoError(b, err)
	return s
}

func (e *execBench) exec(b *testing.B, s session.Session, script string) session.ExecResult {
	res, err := e.m.Exec(context.Background(), s.ID, session.ExecOptions{Argv: []string{"/bin/sh", "-c", script}})
	require.NoError(b, err)
	require.Equal(b, 0, res.ExitCode, string(res.Stderr))
	return res
}

// BenchmarkExecFresh is a fresh session's first command, `echo x > f`,
// recorded as a mutation: the whole engine call (prepare the scratch,
// start the command in its namespaces, capture, record durably, settle).
// to-start-ms is the part from the call to the command's start, split
// into prepare-ms, spawn-ms, init-ms and mounts-ms.
func BenchmarkExecFresh(b *testing.B) {
	for _, mode := range []workdir.Mode{workdir.ModeOverlay, workdir.ModeCopy} {
		b.Run(fmt.Sprintf("mode=%s/files=100000", mode), func(b *testing.B) {
			e := newExecBench(b, mode)
			var toStart, prepare, spawn, init, mounts time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				s := e.create(b)
				b.StartTimer()
				res := e.exec(b, s, "echo x > f")
				b.StopTimer()
				require.NotNil(b, res.Mutation)
				toStart += res.ToStart
				prepare += res.Prepare
				spawn += res.Setup.Spawn
				init += res.Setup.Init
				mounts += res.Setup.Mounts
				b.StartTimer()
			}
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(ms(toStart), "to-start-ms")
			// Where it went: the scratch, starting the helper, the
			// helper's runtime and initializers, its mounts.
			b.ReportMetric(ms(prepare), "prepare-ms")
			b.ReportMetric(ms(spawn), "spawn-ms")
			b.ReportMetric(ms(init), "init-ms")
			b.ReportMetric(ms(mounts), "mounts-ms")
		})
	}
}

// BenchmarkExecDisk reports the disk sessions take after each ran a
// command that changes a file and leaves an ignored build output, beside
// the one shared base checkout: ten sessions in overlay mode, three in
// copy mode (each costs a full copy, tens of seconds here).
func BenchmarkExecDisk(b *testing.B) {
	for _, mode := range []workdir.Mode{workdir.ModeOverlay, workdir.ModeCopy} {
		n := 10
		if mode == workdir.ModeCopy {
			n = 3
		}
		b.Run(fmt.Sprintf("mode=%s/sessions=%d/files=100000", mode, n), func(b *testing.B) {
			e := newExecBench(b, mode)
			var perSession, bases int64
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				before := diskBytes(b, filepath.Join(e.dataDir, "workdir", "sessions"))
				b.StartTimer()
				for range n {
					e.exec(b, e.create(b), "echo x > f && mkdir -p build && echo out > build/o.txt")
				}
				b.StopTimer()
				perSession = (diskBytes(b, filepath.Join(e.dataDir, "workdir", "sessions")) - before) / int64(n)
				bases = diskBytes(b, filepath.Join(e.dataDir, "workdir", "bases"))
				b.StartTimer()
			}
			b.ReportMetric(float64(perSession), "bytes/session")
			b.ReportMetric(float64(bases)/1e6, "base-MB")
		})
	}
}

// diskBytes is the disk du counts below dir (allocated blocks).
func diskBytes(b *testing.B, dir string) int64 {
	out, err := exec.Command("du", "-sk", dir).Output()
	require.NoError(b, err)
	var kb int64
	fmt.Sscan(string(out), &kb)
	return kb * 1024
}
