package session_test

// Benchmarks of the session engine side by side with the git CLI, on the
// generated repository of SPEC section 8 (100,000 files, about 2,000
// directories, depth 4), built once and cached under .cache/. Run with
// `make bench`; results in BENCHMARKS.md. Every engine here runs over the
// embedded SQLite store (WAL, synchronous=FULL), so each mutation and
// each checkpoint is durable when it returns.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
)

// benchRepo is a synthetic repository and the paths of its files.
type benchRepo struct {
	dir   string   // the cached repository: read only
	head  string   // main's commit id
	files []string // every file path, in git order
}

var benchRepos = map[int]*benchRepo{}

func loadBenchRepo(b *testing.B, files int) *benchRepo {
	b.Helper()
	if br, ok := benchRepos[files]; ok {
		return br
	}
	dir := testrepo.CachedSynthetic(b, files)
	br := &benchRepo{dir: dir, head: testrepo.Git(b, dir, "rev-parse", "main")}
	for _, p := range bytes.Split(testrepo.GitRaw(b, dir, nil, "ls-tree", "-r", "-z", "--name-only", "main"), []byte{0}) {
		if len(p) > 0 {
			br.files = append(br.files, string(p))
		}
	}
	benchRepos[files] = br
	return br
}

// spread picks n existing files spread over the tree, starting at the
// k-th pick, so that different k give different files.
func (br *benchRepo) spread(n, k int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = br.files[((k+i)*104729+17)%len(br.files)]
	}
	return out
}

// benchEngine is a Manager over a fresh SQLite store and a writable clone
// of a synthetic repository registered as "r".
type benchEngine struct {
	m    *session.Manager
	repo string // the clone
}

func newBenchEngine(b *testing.B, br *benchRepo) *benchEngine {
	b.Helper()
	ctx := context.Background()
	e := &benchEngine{repo: testrepo.CloneLocal(b, br.dir)}
	st, err := db.OpenSQLite(ctx, filepath.Join(b.TempDir(), "sessiond.db"))
	require.NoError(b, err)
	en := testengine.New(st, b.TempDir(), session.Config{})
	e.m = en.Sessions
	b.Cleanup(func() { en.Close(); st.Close() })
	_, err = en.Repos.Register(ctx, "r", e.repo)
	require.NoError(b, err)
	return e
}

func (e *benchEngine) create(b *testing.B) uuid.UUID {
	b.Helper()
	s, err := e.m.Create(b.Context(), session.CreateOptions{Repo: "r", Base: "main", AgentID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return s.ID
}

// writeBatch writes every path in one Edits batch: one mutation.
func (e *benchEngine) writeBatch(b *testing.B, id uuid.UUID, paths []string, round int) {
	b.Helper()
	edits := make([]session.Edit, len(paths))
	for i, p := range paths {
		edits[i] = session.Edit{Op: "write", Path: p, Content: fmt.Sprintf("round %d of %s\n", round, p)}
	}
	if _, err := e.m.Edits(b.Context(), id, edits, false, ""); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCreate starts an isolated copy of the repository: a session
// (its database row and its base ref) against `git worktree add`, which
// checks out every file. The worktree is removed outside the timer.
func BenchmarkCreate(b *testing.B) {
	br := loadBenchRepo(b, testrepo.DefaultSyntheticFiles)
	name := fmt.Sprintf("files=%d", len(br.files))
	b.Run(name+"/impl=sessiond", func(b *testing.B) {
		e := newBenchEngine(b, br)
		e.create(b) // open the repository and the store first
		for b.Loop() {
			e.create(b)
		}
	})
	b.Run(name+"/impl=git-worktree-add", func(b *testing.B) {
		repo := testrepo.CloneLocal(b, br.dir)
		tmp := b.TempDir()
		i := 0
		var bytesOnDisk int64
		for b.Loop() {
			i++
			wt := filepath.Join(tmp, "wt"+strconv.Itoa(i))
			testrepo.Git(b, repo, "worktree", "add", "-q", "--detach", wt, "main")
			b.StopTimer()
			bytesOnDisk = diskUsage(b, wt)
			testrepo.Git(b, repo, "worktree", "remove", "--force", wt)
			b.StartTimer()
		}
		b.ReportMetric(float64(bytesOnDisk)/1e6, "disk-MB")
	})
}

// diskUsage is the space dir's files take, in bytes (allocated blocks).
func diskUsage(b *testing.B, dir string) int64 {
	b.Helper()
	raw, err := exec.Command("du", "-s", "-B1", dir).Output()
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.Fields(string(raw))[0], 10, 64)
	return n
}

// BenchmarkSessionRead reads one file through a session's view: a file
// the session wrote (overlay hit), a base file read before (warm), and
// base files this engine has not read yet (cold: a stride through the
// files; after the first ~2,000 reads most directories are cached, so
// cold mostly means the blob and its leaf tree). The git reference is one
// `git cat-file --batch` process: the written blob by id for the overlay
// case, "<commit>:<path>" for the base cases.
func BenchmarkSessionRead(b *testing.B) {
	br := loadBenchRepo(b, testrepo.DefaultSyntheticFiles)
	e := newBenchEngine(b, br)
	id := e.create(b)
	written := br.spread(10, 0)
	e.writeBatch(b, id, written, 1)
	warm := br.files[len(br.files)/2]
	ctx := context.Background()
	read := func(b *testing.B, p string) {
		if _, _, err := e.m.Read(ctx, id, p, 0, -1); err != nil {
			b.Fatal(err)
		}
	}
	read(b, written[0])
	read(b, warm)
	stride := 0 // shared by the cold runs, so no path is read twice
	cold := func() string {
		stride++
		return br.files[(stride*7919+1)%len(br.files)]
	}
	files := fmt.Sprintf("files=%d", len(br.files))

	b.Run("source=overlay/"+files+"/impl=sessiond", func(b *testing.B) {
		for b.Loop() {
			read(b, written[0])
		}
	})
	b.Run("source=base-warm/"+files+"/impl=sessiond", func(b *testing.B) {
		for b.Loop() {
			read(b, warm)
		}
	})
	b.Run("source=base-cold/"+files+"/impl=sessiond", func(b *testing.B) {
		for b.Loop() {
			read(b, cold())
		}
	})

	c := testrepo.StartCatFile(b, e.repo)
	blob := testrepo.Git(b, e.repo, "rev-parse", "refs/sessions/"+id.String()+"/live:"+written[0])
	b.Run("source=overlay/"+files+"/impl=git-cat-file-batch", func(b *testing.B) {
		c.Read(b, blob)
		for b.Loop() {
			c.Read(b, blob)
		}
	})
	b.Run("source=base-warm/"+files+"/impl=git-cat-file-batch", func(b *testing.B) {
		rev := br.head + ":" + warm
		c.Read(b, rev)
		for b.Loop() {
			c.Read(b, rev)
		}
	})
	b.Run("source=base-cold/"+files+"/impl=git-cat-file-batch", func(b *testing.B) {
		for b.Loop() {
			c.Read(b, br.head+":"+cold())
		}
	})
}

// BenchmarkCheckpoint commits a session with paths changed files. The
// engine's work is split as it happens: the writes (each a durable
// mutation that also rebuilds the session's tree), then the checkpoint
// (a commit of the already built tree, its refs and its row).
//
//   - step=write-each: paths Write calls, one mutation each;
//   - step=write-batch: one Edits batch of paths writes, one mutation;
//   - step=checkpoint: Checkpoint alone, the paths changes already made;
//   - step=batch+checkpoint: both, the end-to-end equivalent of the git
//     route, which hashes the blobs, reads the base into a temporary
//     index, updates it, writes the tree and the commit.
//
// files=1000 repeats 10 paths for the growth ratio of SPEC section 8.
func BenchmarkCheckpoint(b *testing.B) {
	for _, files := range []int{1000, testrepo.DefaultSyntheticFiles} {
		for _, n := range []int{10, 1000} {
			if files == 1000 && n != 10 {
				continue
			}
			br := loadBenchRepo(b, files)
			paths := br.spread(n, 0)
			name := fmt.Sprintf("paths=%d/files=%d", n, files)
			b.Run(name+"/impl=sessiond/step=write-each", func(b *testing.B) {
				e := newBenchEngine(b, br)
				id := e.create(b)
				ctx := context.Background()
				round := 0
				for b.Loop() {
					round++
					for _, p := range paths {
						data := fmt.Appendf(nil, "round %d of %s\n", round, p)
						if _, _, err := e.m.Write(ctx, id, p, data, session.WriteOptions{}); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
			b.Run(name+"/impl=sessiond/step=write-batch", func(b *testing.B) {
				e := newBenchEngine(b, br)
				id := e.create(b)
				round := 0
				for b.Loop() {
					round++
					e.writeBatch(b, id, paths, round)
				}
			})
			b.Run(name+"/impl=sessiond/step=checkpoint", func(b *testing.B) {
				e := newBenchEngine(b, br)
				id := e.create(b)
				e.writeBatch(b, id, paths, 1)
				ctx := context.Background()
				for b.Loop() {
					if _, err := e.m.Checkpoint(ctx, id, "", ""); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/impl=sessiond/step=batch+checkpoint", func(b *testing.B) {
				e := newBenchEngine(b, br)
				id := e.create(b)
				ctx := context.Background()
				round := 0
				for b.Loop() {
					round++
					e.writeBatch(b, id, paths, round)
					if _, err := e.m.Checkpoint(ctx, id, "", ""); err != nil {
						b.Fatal(err)
					}
				}
			})
			if files == testrepo.DefaultSyntheticFiles {
				b.Run(name+"/impl=git-index", func(b *testing.B) { benchGitIndex(b, br, paths) })
			}
		}
	}
}

// benchGitIndex is the git CLI's route without a work tree (see
// testrepo.CommitWithIndex).
func benchGitIndex(b *testing.B, br *benchRepo, paths []string) {
	dir := testrepo.CloneLocal(b, br.dir)
	scratch := b.TempDir()
	round := 0
	for b.Loop() {
		round++
		testrepo.CommitWithIndex(b, dir, scratch, br.head, paths, func(p string) []byte {
			return fmt.Appendf(nil, "round %d of %s\n", round, p)
		})
	}
}

// BenchmarkLiveSessions measures memory with many live sessions in one
// process: it creates sessions sessions, writes changed files into each
// (one Edits batch each), and reports the process's resident set
// (VmRSS), the Go heap in use after a GC, and their growth over the
// engine before the sessions. The timed loop then reads a changed file
// from one session after another, as a busy daemon would.
func BenchmarkLiveSessions(b *testing.B) {
	const sessions, changed = 1000, 10
	br := loadBenchRepo(b, testrepo.DefaultSyntheticFiles)
	// The setup runs once per count, on the outer b so that its cleanups
	// wait for the end: b.Run may call the body more than once (a probe
	// with b.N = 1, then the measured run).
	var (
		e                            *benchEngine
		ids                          []uuid.UUID
		paths                        [][]string
		rss, heap, rssGrow, heapGrow float64
	)
	setup := func(b *testing.B) {
		e = newBenchEngine(b, br)
		// Open the repository and the store, and warm the base, before
		// the baseline.
		warm := e.create(b)
		e.writeBatch(b, warm, br.spread(changed, 0), 0)
		rss0, heap0 := memory(b)
		ids = make([]uuid.UUID, sessions)
		paths = make([][]string, sessions)
		for i := range ids {
			ids[i] = e.create(b)
			paths[i] = br.spread(changed, (i+1)*changed)
			e.writeBatch(b, ids[i], paths[i], 1)
		}
		rss, heap = memory(b)
		rssGrow, heapGrow = rss-rss0, heap-heap0
	}
	setup(b)
	b.Run(fmt.Sprintf("sessions=%d/changed=%d/files=%d", sessions, changed, len(br.files)), func(b *testing.B) {
		ctx := context.Background()
		i := 0
		for b.Loop() {
			s := i % sessions
			if _, _, err := e.m.Read(ctx, ids[s], paths[s][i%changed], 0, -1); err != nil {
				b.Fatal(err)
			}
			i++
		}
		// After the loop: b.Loop's first call resets the timer and, with
		// it, the metrics reported so far.
		b.ReportMetric(rss, "rss-MB")
		b.ReportMetric(heap, "heap-MB")
		b.ReportMetric(rssGrow, "rss-growth-MB")
		b.ReportMetric(heapGrow, "heap-growth-MB")
	})
}

// memory returns the resident set and the heap in use after a GC, in MB.
func memory(b *testing.B) (rss, heap float64) {
	b.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			require.NoError(b, err)
			rss = kb / 1024
		}
	}
	return rss, float64(ms.HeapInuse) / (1 << 20)
}

// BenchmarkFsync is the floor under every durable write here: writing
// 4 KiB into a file and fsyncing it, on the file system the benchmarks'
// repositories and databases live on. A mutation or a checkpoint costs
// several of these (see BENCHMARKS.md).
func BenchmarkFsync(b *testing.B) {
	for _, sync := range []string{"file", "dir"} {
		b.Run("sync="+sync+"/size=4KiB", func(b *testing.B) {
			dir := b.TempDir()
			f, err := os.Create(filepath.Join(dir, "f"))
			require.NoError(b, err)
			defer f.Close()
			d, err := os.Open(dir)
			require.NoError(b, err)
			defer d.Close()
			buf := bytes.Repeat([]byte{'x'}, 4096)
			i := 0
			for b.Loop() {
				i++
				buf[0] = byte(i)
				if _, err := f.WriteAt(buf, 0); err != nil {
					b.Fatal(err)
				}
				target := f
				if sync == "dir" {
					// A rename, then the directory's fsync: what durable
					// ref and object writes pay on top of the file's.
					nf := filepath.Join(dir, "g"+strconv.Itoa(i%2))
					if err := os.WriteFile(nf, buf[:41], 0o644); err != nil {
						b.Fatal(err)
					}
					if err := os.Rename(nf, filepath.Join(dir, "ref")); err != nil {
						b.Fatal(err)
					}
					target = d
				}
				if err := target.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
