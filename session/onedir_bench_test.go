package session_test

// Puts into one directory: the caseCollision rule, the overlay's sorted
// keys, the tree of the changed paths and the store's delta must all
// cost what the batch adds, not what the directory already holds.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
)

// oneDirPaths are n new files in one directory, in a scrambled order (so
// that nothing is appended in order by luck).
func oneDirPaths(n int) []string {
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("gen/f%06d.txt", (i*7919)%n)
	}
	return paths
}

func writeEdits(paths []string, round int) []session.Edit {
	edits := make([]session.Edit, len(paths))
	for i, p := range paths {
		edits[i] = session.Edit{Op: session.OpWrite, Path: p, Content: fmt.Sprintf("round %d of %s\n", round, p)}
	}
	return edits
}

// BenchmarkBatchPutsOneDir: one Edits batch (POST …/edits) of files=N
// write ops, every one a new file in one new directory, on a fresh
// session each time; beside it the git CLI's route without a work tree
// for the same files (hash-object, update-index --index-info into a
// temporary index, write-tree, commit-tree).
func BenchmarkBatchPutsOneDir(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		paths := oneDirPaths(n)
		b.Run(fmt.Sprintf("files=%d/impl=sessiond", n), func(b *testing.B) {
			e := newEnv(b, "small")
			edits := writeEdits(paths, 0)
			for b.Loop() {
				s := e.create(session.CreateOptions{})
				res, err := e.m.Edits(b.Context(), s.ID, edits, false, "")
				if err != nil || len(res.Changes) != n {
					b.Fatalf("batch: %v (%d changes)", err, len(res.Changes))
				}
			}
		})
		b.Run(fmt.Sprintf("files=%d/impl=git-temp-index", n), func(b *testing.B) {
			dir := testrepo.Build(b, "small")
			head := testrepo.Git(b, dir, "rev-parse", "main")
			scratch := b.TempDir()
			for b.Loop() {
				testrepo.CommitWithIndex(b, dir, scratch, head, paths, func(p string) []byte {
					return fmt.Appendf(nil, "round 0 of %s\n", p)
				})
			}
		})
	}
}

// BenchmarkSeparatePutsOneDir: one PUT (Manager.Write, a whole durable
// mutation) of a file in a directory the session filled with files=N
// files; a run of N separate PUTs costs about N times this. Beside it
// the git CLI's route for one changed path over a commit holding the
// same directory (read-tree of the whole index included, as a script
// must).
func BenchmarkSeparatePutsOneDir(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		paths := oneDirPaths(n)
		b.Run(fmt.Sprintf("files=%d/impl=sessiond", n), func(b *testing.B) {
			e := newEnv(b, "small")
			s := e.create(session.CreateOptions{})
			_, err := e.m.Edits(b.Context(), s.ID, writeEdits(paths, 0), false, "")
			require.NoError(b, err)
			i := 0
			for b.Loop() {
				i++
				if _, _, err := e.m.Write(b.Context(), s.ID, paths[i%n], fmt.Appendf(nil, "round %d\n", i), session.WriteOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("files=%d/impl=git-temp-index", n), func(b *testing.B) {
			dir := testrepo.Build(b, "small")
			scratch := b.TempDir()
			parent := oneDirCommit(b, dir, scratch, paths)
			i := 0
			for b.Loop() {
				i++
				testrepo.CommitWithIndex(b, dir, scratch, parent, paths[i%n:i%n+1], func(string) []byte {
					return fmt.Appendf(nil, "round %d\n", i)
				})
			}
		})
	}
}

// BenchmarkBatchDeletesOneDir: one Edits batch deleting, one op each and
// in git order, every one of files=N files of a base directory: each
// delete asks whether the directory still shows a base file, and the
// last one collapses it into one whiteout.
func BenchmarkBatchDeletesOneDir(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		paths := oneDirPaths(n)
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			e := newEnv(b, "small")
			commit := oneDirCommit(b, e.repoDir, b.TempDir(), paths)
			testrepo.Git(b, e.repoDir, "update-ref", "refs/heads/main", commit)
			edits := make([]session.Edit, n)
			for i := range edits {
				edits[i] = session.Edit{Op: session.OpDelete, Path: fmt.Sprintf("gen/f%06d.txt", i)}
			}
			for b.Loop() {
				s := e.create(session.CreateOptions{})
				res, err := e.m.Edits(b.Context(), s.ID, edits, false, "")
				if err != nil || len(res.Changes) != n {
					b.Fatalf("batch: %v (%d changes)", err, len(res.Changes))
				}
			}
		})
	}
}

// oneDirCommit commits paths over main, all with one blob (only the
// tree matters to the benchmark, and one blob keeps the setup short).
func oneDirCommit(b *testing.B, dir, scratch string, paths []string) string {
	blob := testrepo.GitInput(b, dir, []byte("round 0\n"), "hash-object", "-w", "--stdin")
	var info strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&info, "100644 %s\t%s\n", blob, p)
	}
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(scratch, "index")}
	testrepo.GitEnv(b, dir, env, nil, "read-tree", "main^{tree}")
	testrepo.GitEnv(b, dir, env, []byte(info.String()), "update-index", "--index-info")
	tree := testrepo.GitEnv(b, dir, env, nil, "write-tree")
	return testrepo.GitEnv(b, dir, nil, []byte("setup\n"), "commit-tree", tree, "-p", "main")
}

// countingCtx counts how often Err is asked and, once left reaches
// zero, answers context.Canceled: a context that ends while the work is
// under way, whatever the machine's speed.
type countingCtx struct {
	context.Context
	asked, left atomic.Int64
}

func stopAfter(n int64) *countingCtx {
	c := &countingCtx{Context: context.Background()}
	c.left.Store(n)
	return c
}

func (c *countingCtx) Err() error {
	c.asked.Add(1)
	if c.left.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// A batch and a search stop when the request's context ends partway:
// the caller gets the context's error and nothing changed.
func TestWorkStopsWhenCancelled(t *testing.T) {
	e := newEnv(t, "small")
	files := 20_000
	if testing.Short() {
		// The race run: a batch of one goroutine, ended halfway all the
		// same; the plain run does the large one (minutes under the
		// detector).
		files = 2_000
	}
	edits := writeEdits(oneDirPaths(files), 0)
	t.Run("batch", func(t *testing.T) {
		// Counted once whole (twice: the second count is of a warm
		// engine, as the cancelled run sees it), then ended halfway.
		var asked int64
		for range 2 {
			s := e.create(session.CreateOptions{})
			ctx := stopAfter(1 << 40)
			_, err := e.m.Edits(ctx, s.ID, edits, false, "")
			require.NoError(t, err)
			asked = ctx.asked.Load()
		}
		s := e.create(session.CreateOptions{})
		before := e.view(s.ID)
		ctx := stopAfter(asked / 2) // halfway through the edits
		_, err := e.m.Edits(ctx, s.ID, edits, false, "")
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, before, e.view(s.ID), "a cancelled batch changes nothing")
	})
	t.Run("search", func(t *testing.T) {
		// The file is the last in git order, so the search's last looks
		// at its context are over its lines: counted on a one-line file,
		// the looks before them; a context that ends a few looks later
		// must stop the search in the lines of the large one.
		s := e.create(session.CreateOptions{})
		search := session.SearchOptions{Pattern: "no such line"}
		e.write(s.ID, "zzz.txt", bigText(1))
		var asked int64
		for range 2 {
			ctx := stopAfter(1 << 40)
			_, err := e.m.Search(ctx, s.ID, search)
			require.NoError(t, err)
			asked = ctx.asked.Load()
		}
		e.write(s.ID, "zzz.txt", bigText(50_000))
		_, err := e.m.Search(stopAfter(asked+5), s.ID, search)
		require.ErrorIs(t, err, context.Canceled)
		res, err := e.m.Search(t.Context(), s.ID, session.SearchOptions{Pattern: "^line 49999$"})
		require.NoError(t, err)
		assert.Len(t, res.Matches, 1, "and it searches to the end when the context goes on")
	})
}

func bigText(lines int) string {
	b := make([]byte, 0, lines*16)
	for i := range lines {
		b = fmt.Appendf(b, "line %d\n", i)
	}
	return string(b)
}
