package graph_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// countEvents is an event sink that only counts.
type countEvents struct{ n int }

func (c *countEvents) Append(context.Context, events.Event) error {
	c.n++
	return nil
}

// benchBase is a writable clone of the synthetic repository, its main
// tree, and the paths of its files.
type benchBase struct {
	repo  *gitstore.Repo
	tree  gitstore.OID
	files []string
}

func openBenchBase(b *testing.B, files int) *benchBase {
	b.Helper()
	src := testrepo.CachedSynthetic(b, files)
	dst := filepath.Join(b.TempDir(), "clone.git")
	testrepo.Git(b, "", "clone", "-q", "--bare", "--local", "--", src, dst)
	repo, err := gitstore.Open(dst)
	require.NoError(b, err)
	b.Cleanup(func() { repo.Close() })
	ctx := context.Background()
	head, err := repo.ResolveRevision(ctx, "main")
	require.NoError(b, err)
	c, err := repo.Commit(ctx, head)
	require.NoError(b, err)
	bb := &benchBase{repo: repo, tree: c.Tree}
	require.NoError(b, repo.List(ctx, c.Tree, "", true, func(e gitstore.Entry) error {
		if e.Mode.IsBlob() {
			bb.files = append(bb.files, e.Path)
		}
		return nil
	}))
	return bb
}

// goVariants returns n versions of a real Go file, version i with a line
// added to function i mod (number of functions); version 0 is the file.
func goVariants(tb testing.TB, n int) []string {
	src := stdlib(tb, "bufio/scan.go")
	lines := strings.SplitAfter(src, "\n")
	var funcs []int
	for i, l := range lines {
		if strings.HasPrefix(l, "func ") && strings.HasSuffix(l, "{\n") {
			funcs = append(funcs, i)
		}
	}
	out := []string{src}
	for i := 1; i < n; i++ {
		at := funcs[i%len(funcs)] + 1
		v := strings.Join(lines[:at], "") + fmt.Sprintf("\t// edit %d\n", i) + strings.Join(lines[at:], "")
		out = append(out, v)
	}
	return out
}

// BenchmarkOverlapWrite is what overlap detection adds to one write (the
// graph's observer call: delta update, reparse of the written file,
// inverted-index lookup, a trial merge with each session that changed the
// file, event bookkeeping) with 1,000 other live sessions of 10 changed
// files each on the 100,000-file repository. shared is how many of them
// changed the written Go file.
func BenchmarkOverlapWrite(b *testing.B) {
	const live, perSession = 1000, 10
	bb := openBenchBase(b, testrepo.DefaultSyntheticFiles)
	ctx := context.Background()
	vars := goVariants(b, 200)

	// The base: the synthetic tree plus three copies of a real Go file.
	batch := bb.repo.NewBatch()
	hotPaths := map[int]string{0: "bench/cold.go", 10: "bench/warm.go", 100: "bench/hot.go"}
	var changes []gitstore.Change
	baseBlob := batch.AddBlob([]byte(vars[0]))
	for _, p := range hotPaths {
		changes = append(changes, gitstore.Change{Path: p, Mode: gitstore.ModeFile, OID: baseBlob})
	}
	tree, err := batch.BuildTree(ctx, bb.tree, changes)
	require.NoError(b, err)
	varBlobs := make([]gitstore.OID, len(vars))
	for i, v := range vars {
		varBlobs[i] = batch.AddBlob([]byte(v))
	}
	var writerBlobs []gitstore.OID
	for _, w := range []string{"// writer\n", "// writer, again\n"} {
		v := strings.Replace(vars[0], "func dropCR(data []byte) []byte {\n", "func dropCR(data []byte) []byte {\n\t"+w, 1)
		writerBlobs = append(writerBlobs, batch.AddBlob([]byte(v)))
	}
	// Each live session changes perSession files: the Go files it shares,
	// then synthetic files of its own.
	type sess struct {
		s       graph.Mutation
		changes []graph.FileChange
	}
	sessions := make([]sess, live)
	next := 0
	for i := range sessions {
		s := graph.Mutation{Session: uuid.New(), Repo: "r", AgentID: fmt.Sprintf("agent-%d", i), Git: bb.repo, BaseTree: tree, Tree: tree}
		var fc []graph.FileChange
		for _, n := range []int{10, 100} {
			if i < n {
				fc = append(fc, graph.FileChange{Path: hotPaths[n], Old: baseBlob, New: varBlobs[1+i%(len(vars)-1)]})
			}
		}
		for len(fc) < perSession {
			p := bb.files[(next*104729+17)%len(bb.files)]
			next++
			old, err := bb.repo.Lookup(ctx, bb.tree, p)
			require.NoError(b, err)
			fc = append(fc, graph.FileChange{Path: p, Old: old.OID, New: batch.AddBlob([]byte(fmt.Sprintf("session %d of %s\n", i, p)))})
		}
		sessions[i] = sess{s, fc}
	}
	require.NoError(b, batch.Flush(ctx))

	events := &countEvents{}
	g := graph.New(graph.Config{Events: events})
	defer g.Close()
	for _, s := range sessions {
		// Met with an empty view, then its changes: the incremental path.
		// The graph queues its work; Sync waits for it after each event,
		// so none is coalesced and each is measured.
		g.Mutated(ctx, s.s)
		require.NoError(b, g.Sync(ctx))
		m := s.s
		m.Seq, m.Changes = 1, s.changes
		g.Mutated(ctx, m)
		require.NoError(b, g.Sync(ctx))
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.Logf("graph of %d sessions: %.1f MB heap in use (the repository's caches included)", live, float64(ms.HeapInuse)/(1<<20))

	for _, shared := range []int{0, 10, 100} {
		b.Run(fmt.Sprintf("sessions=%d/shared=%d", live, shared), func(b *testing.B) {
			p := hotPaths[shared]
			w := graph.Mutation{Session: uuid.New(), Repo: "r", AgentID: "writer", Git: bb.repo, BaseTree: tree, Tree: tree}
			g.Mutated(ctx, w)
			require.NoError(b, g.Sync(ctx))
			// The writer alternates between two edits of one function, so
			// each write reparses, diffs and trial-merges, while the
			// finding (and so the events) stays the same.
			mine := []gitstore.OID{writerBlobs[0], writerBlobs[1]}
			cur := baseBlob
			before := events.n
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				nw := mine[i%2]
				m := w
				m.Seq, m.Changes = int64(i+1), []graph.FileChange{{Path: p, Old: cur, New: nw}}
				g.Mutated(ctx, m)
				if err := g.Sync(ctx); err != nil {
					b.Fatal(err)
				}
				cur = nw
			}
			b.StopTimer()
			b.ReportMetric(float64(events.n-before), "events")
			g.Closed(ctx, w.Repo, w.Session)
			require.NoError(b, g.Sync(ctx))
		})
	}
}

// BenchmarkBaseIndex builds the base index of the 100,000-file repository:
// the whole tree (every directory listed, every Go file read and parsed;
// the synthetic repository's .go files are not Go, so each is read and
// rejected by the parser), one directory of about 50 files, and one
// file, each in a new graph over a repository whose trees are cached.
func BenchmarkBaseIndex(b *testing.B) {
	bb := openBenchBase(b, testrepo.DefaultSyntheticFiles)
	ctx := context.Background()
	// Warm the repository's tree cache as a running daemon has it.
	_, err := graph.New(graph.Config{}).Base(bb.repo, bb.tree).Build(ctx)
	require.NoError(b, err)
	name := fmt.Sprintf("files=%d", len(bb.files))
	b.Run(name+"/scope=tree", func(b *testing.B) {
		for b.Loop() {
			g := graph.New(graph.Config{CachedFiles: 1 << 16})
			if _, err := g.Base(bb.repo, bb.tree).Build(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	dir := filepath.ToSlash(filepath.Dir(bb.files[len(bb.files)/2]))
	b.Run(name+"/scope=dir", func(b *testing.B) {
		for b.Loop() {
			g := graph.New(graph.Config{})
			if _, err := g.Base(bb.repo, bb.tree).Dir(ctx, dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	var goFile string
	for _, p := range bb.files {
		if strings.HasSuffix(p, ".go") {
			goFile = p
			break
		}
	}
	b.Run(name+"/scope=file", func(b *testing.B) {
		for b.Loop() {
			g := graph.New(graph.Config{})
			if _, err := g.Base(bb.repo, bb.tree).File(ctx, goFile); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParseGo reads the symbols of a real Go file of about 14 KB.
func BenchmarkParseGo(b *testing.B) {
	data := []byte(stdlib(b, "bufio/scan.go"))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if f := graph.ParseGo(gitstore.ZeroOID, data); f.Err != "" {
			b.Fatal(f.Err)
		}
	}
}
