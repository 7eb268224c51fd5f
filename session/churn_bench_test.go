package session_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiond/sessiond/session"
)

// churnOne creates a session, writes one file and abandons it.
func churnOne(ctx context.Context, m *session.Manager, i int) error {
	s, err := m.Create(ctx, session.CreateOptions{Repo: "r", Base: "main", AgentID: "churn"})
	if err != nil {
		return err
	}
	if _, _, err := m.Write(ctx, s.ID, "notes/todo.md", []byte(fmt.Sprintf("session %d\n", i)), session.WriteOptions{}); err != nil {
		return err
	}
	_, err = m.Abandon(ctx, s.ID)
	return err
}

// rssBytes is the process's resident set size, from /proc.
func rssBytes(tb testing.TB) int64 {
	tb.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		tb.Skip("no /proc/self/status:", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// BenchmarkSessionChurn creates and finishes sessions one after another,
// as a daemon does over months: each session is created, writes one file
// (so it is loaded with an overlay, and its repository gets a pack) and is
// abandoned, by eight clients at once. At every tenth of the run, after
// the Go heap is collected, it reports the heap in use, resident memory,
// the sessions loaded and the packs in the repository, on stderr as it
// goes (a long run takes an hour) and in the benchmark's log; both stay
// flat because finished sessions leave memory at once and what gitstore
// holds per pack and per object is bounded. Housekeeping runs alongside,
// so one figure may catch a consolidation in progress.
//
// SESSIOND_CHURN_SESSIONS is the number of sessions (default 100,000). It
// runs on the real configuration, fsync included, in the test's temporary
// directory: with TMPDIR on a tmpfs fsync costs nothing, which makes a
// quick variant. SESSIOND_CHURN_HEAPPROFILES names a directory to write a
// heap profile into at each tenth (compare two with go tool pprof -base).
func BenchmarkSessionChurn(b *testing.B) {
	n := 100_000
	if v := os.Getenv("SESSIOND_CHURN_SESSIONS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		e := newEnv(b, "small")
		ctx := b.Context()
		var first int64
		start := time.Now()
		report := func(done int) {
			runtime.GC()
			rss := rssBytes(b)
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if done == 0 {
				first = rss
			}
			if dir := os.Getenv("SESSIOND_CHURN_HEAPPROFILES"); dir != "" {
				f, err := os.Create(filepath.Join(dir, fmt.Sprintf("heap-%07d.pprof", done)))
				if err != nil {
					b.Fatal(err)
				}
				if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
			idx, _ := filepath.Glob(filepath.Join(e.repoDir, ".git", "objects", "pack", "*.idx"))
			// go_held is what the Go runtime holds from the system (heap
			// not returned, stacks, its own structures); the rest of rss
			// is SQLite's allocator and mapped files.
			line := fmt.Sprintf("sessions=%d rss=%.1fMB heap_inuse=%.1fMB go_held=%.1fMB loaded=%d packs=%d elapsed=%s", done, float64(rss)/(1<<20),
				float64(ms.HeapInuse)/(1<<20), float64(ms.Sys-ms.HeapReleased)/(1<<20), e.m.Loaded(), len(idx), time.Since(start).Round(time.Second))
			fmt.Fprintln(os.Stderr, "churn:", line)
			b.Log(line)
			if done == n {
				b.ReportMetric(float64(rss)/(1<<20), "rss-MB")
				b.ReportMetric(float64(rss-first)/(1<<20), "rss-growth-MB")
				b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-inuse-MB")
			}
		}
		report(0)
		// Eight clients at a time, as a daemon serves them: the run is
		// bound by fsync, which they overlap.
		const clients = 8
		tenth := max(n/10, 1)
		for done := 0; done < n; {
			batch := min(tenth, n-done)
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for c := range clients {
				wg.Go(func() {
					for i := c; i < batch; i += clients {
						if err := churnOne(ctx, e.m, done+i); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			done += batch
			report(done)
		}
	}
	b.ReportMetric(float64(n), "sessions")
}
