package gitstore_test

// Benchmarks side by side with the git CLI, on the generated repository of
// SPEC section 8 (100,000 files, 2,000 directories, depth 4), built once
// and cached under .cache/. Run with `make bench`; results in
// BENCHMARKS.md. Each benchmark has an impl=sessiond and an impl=git-…
// variant measured in the same run.

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/gitstore/housekeeping"
	"github.com/sessiond/sessiond/internal/testrepo"
)

type benchRepo struct {
	dir   string
	head  gitstore.OID
	tree  gitstore.OID
	files []string // every blob path, in git order
	top   string   // the first top-level directory
}

var benchRepos = map[int]*benchRepo{}

func loadBenchRepo(b *testing.B, files int) *benchRepo {
	b.Helper()
	if br, ok := benchRepos[files]; ok {
		return br
	}
	dir := testrepo.CachedSynthetic(b, files)
	r := open(b, dir)
	br := &benchRepo{dir: dir}
	var err error
	br.head, err = r.ResolveRevision(b.Context(), "main")
	require.NoError(b, err)
	c, err := r.Commit(b.Context(), br.head)
	require.NoError(b, err)
	br.tree = c.Tree
	require.NoError(b, r.List(b.Context(), br.tree, "", true, func(e gitstore.Entry) error {
		if e.Mode.IsDir() {
			if br.top == "" {
				br.top = e.Path
			}
		} else {
			br.files = append(br.files, e.Path)
		}
		return nil
	}))
	benchRepos[files] = br
	return br
}

// BenchmarkReadBlob reads a file at a path in the base tree: warm (cached
// trees and blob), cold (a path never read before by this Repo), and
// through `git cat-file --batch` with "<commit>:<path>".
func BenchmarkReadBlob(b *testing.B) {
	br := loadBenchRepo(b, testrepo.DefaultSyntheticFiles)
	path := br.files[len(br.files)/2]
	b.Run("impl=sessiond/cache=warm", func(b *testing.B) {
		r := open(b, br.dir)
		ctx := b.Context()
		e, err := r.Lookup(ctx, br.tree, path)
		require.NoError(b, err)
		_, err = r.ReadBlob(ctx, e.OID)
		require.NoError(b, err)
		for b.Loop() {
			e, err := r.Lookup(ctx, br.tree, path)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.ReadBlob(ctx, e.OID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=sessiond/cache=cold", func(b *testing.B) {
		r := open(b, br.dir)
		ctx := b.Context()
		// Warm the pack index, as a running daemon has it.
		_, err := r.Commit(ctx, br.head)
		require.NoError(b, err)
		i := 0
		for b.Loop() {
			// A stride through the files: a path (and usually its
			// directories) this Repo has not read yet.
			p := br.files[(i*7919)%len(br.files)]
			i++
			e, err := r.Lookup(ctx, br.tree, p)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.ReadBlob(ctx, e.OID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=git-cat-file-batch", func(b *testing.B) {
		c := testrepo.StartCatFile(b, br.dir)
		rev := br.head.String() + ":" + path
		c.Read(b, rev)
		i := 0
		for b.Loop() {
			c.Read(b, br.head.String()+":"+br.files[(i*7919)%len(br.files)])
			i++
		}
	})
}

// BenchmarkList lists every entry below the first top-level directory
// (about 16,700 entries at 100,000 files); ns/10k-entries normalizes to
// the 10,000 entries of the target.
func BenchmarkList(b *testing.B) {
	br := loadBenchRepo(b, testrepo.DefaultSyntheticFiles)
	b.Run("impl=sessiond", func(b *testing.B) {
		r := open(b, br.dir)
		ctx := b.Context()
		n := 0
		_, err := r.Commit(ctx, br.head) // load the pack index first
		require.NoError(b, err)
		for b.Loop() {
			n = 0
			if err := r.List(ctx, br.tree, br.top, true, func(gitstore.Entry) error { n++; return nil }); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)*1e4/float64(n), "ns/10k-entries")
	})
	b.Run("impl=git-ls-tree", func(b *testing.B) {
		n := 0
		for b.Loop() {
			cmd := exec.Command("git", "ls-tree", "-r", "-t", "main", br.top+"/")
			cmd.Dir = br.dir
			cmd.Env = testrepo.Env()
			out, err := cmd.Output()
			if err != nil {
				b.Fatal(err)
			}
			n = bytes.Count(out, []byte{'\n'}) - 1 // without the directory itself
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)*1e4/float64(n), "ns/10k-entries")
	})
}

// changedPaths picks n existing files spread over the tree.
func changedPaths(br *benchRepo, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = br.files[(i*104729+17)%len(br.files)]
	}
	return out
}

// BenchmarkCommit builds the tree for n changed paths over the base and
// commits it, durably (fsync included), against the git CLI's temporary
// index route and git fast-import.
func BenchmarkCommit(b *testing.B) {
	for _, files := range []int{1000, testrepo.DefaultSyntheticFiles} {
		for _, n := range []int{1, 10, 100, 1000} {
			if files == 1000 && n != 10 {
				continue // the growth comparison needs only 10 paths
			}
			br := loadBenchRepo(b, files)
			paths := changedPaths(br, n)
			name := fmt.Sprintf("paths=%d/files=%d", n, files)
			b.Run(name+"/impl=sessiond", func(b *testing.B) { benchCommitSessiond(b, br, paths) })
			if files != testrepo.DefaultSyntheticFiles {
				continue
			}
			b.Run(name+"/impl=git-index", func(b *testing.B) { benchCommitGitIndex(b, br, paths) })
			b.Run(name+"/impl=git-fast-import", func(b *testing.B) { benchCommitFastImport(b, br, paths) })
		}
	}
}

func benchCommitSessiond(b *testing.B, br *benchRepo, paths []string) {
	r := open(b, testrepo.CloneLocal(b, br.dir))
	ctx := b.Context()
	sig := gitstore.Signature{Name: "bench", Email: "bench@example.com", When: time.Unix(1700000000, 0)}
	i := 0
	for b.Loop() {
		i++
		batch := r.NewBatch()
		changes := make([]gitstore.Change, len(paths))
		for j, p := range paths {
			changes[j] = gitstore.Change{Path: p, Mode: gitstore.ModeFile, OID: batch.AddBlob(fmt.Appendf(nil, "iteration %d of %s\n", i, p))}
		}
		tree, err := batch.BuildTree(ctx, br.tree, changes)
		if err != nil {
			b.Fatal(err)
		}
		batch.AddCommit(gitstore.NewCommit{Tree: tree, Parents: []gitstore.OID{br.head}, Author: sig, Message: "bench"})
		if err := batch.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// benchCommitGitIndex is the scripted route without a work tree (see
// testrepo.CommitWithIndex).
func benchCommitGitIndex(b *testing.B, br *benchRepo, paths []string) {
	dir := testrepo.CloneLocal(b, br.dir)
	scratch := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		testrepo.CommitWithIndex(b, dir, scratch, br.head.String(), paths, func(p string) []byte {
			return fmt.Appendf(nil, "iteration %d of %s\n", i, p)
		})
	}
}

// benchCommitFastImport writes the same commit through one fast-import run.
func benchCommitFastImport(b *testing.B, br *benchRepo, paths []string) {
	dir := testrepo.CloneLocal(b, br.dir)
	i := 0
	for b.Loop() {
		i++
		var s bytes.Buffer
		fmt.Fprintf(&s, "commit refs/heads/bench\ncommitter bench <bench@example.com> 1700000000 +0000\ndata 5\nbench\nfrom %s\n", br.head)
		for _, p := range paths {
			data := fmt.Sprintf("iteration %d of %s\n", i, p)
			fmt.Fprintf(&s, "M 100644 inline %s\ndata %d\n%s\n", p, len(data), data)
		}
		s.WriteString("done\n")
		testrepo.GitEnv(b, dir, nil, s.Bytes(), "fast-import", "--quiet", "--done", "--force")
	}
}

// BenchmarkReadBesideOwnPacks reads blobs of the base (git's objects, not
// cached) in a repository that also holds sessiond's own packs, which
// every such read looks in first: own-objects=0 is the cost without them,
// and git cat-file --batch reads the same blobs of the same repository.
func BenchmarkReadBesideOwnPacks(b *testing.B) {
	for _, n := range []int{0, 20000} {
		b.Run(fmt.Sprintf("own-objects=%d", n), func(b *testing.B) {
			dir := testrepo.Build(b, "small")
			r, err := gitstore.Open(dir, gitstore.Options{HousekeepInterval: -1, BlobCacheSize: 1, TreeCacheSize: 1, Housekeeping: housekeeping.HeuristicStrategy{RetireDelay: -1}})
			require.NoError(b, err)
			b.Cleanup(func() { r.Close() })
			for i := 0; i < n; i += 1000 {
				batch := r.NewBatch()
				for j := range 1000 {
					batch.AddBlob(fmt.Appendf(nil, "own %d\n", i+j))
				}
				require.NoError(b, batch.Flush(b.Context()))
			}
			if n > 0 {
				_, err = r.Housekeep(b.Context())
				require.NoError(b, err)
			}
			var ids []gitstore.OID
			for _, line := range strings.Split(strings.TrimSpace(testrepo.Git(b, dir, "ls-tree", "-r", "main")), "\n") {
				if f := strings.Fields(line); len(f) >= 3 && f[1] == "blob" {
					ids = append(ids, oid(b, f[2]))
				}
			}
			b.Run("impl=sessiond", func(b *testing.B) {
				i := 0
				for b.Loop() {
					if _, err := r.ReadBlob(b.Context(), ids[i%len(ids)]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
			b.Run("impl=git-cat-file-batch", func(b *testing.B) {
				c := testrepo.StartCatFile(b, dir)
				i := 0
				for b.Loop() {
					c.Read(b, ids[i%len(ids)].String())
					i++
				}
			})
		})
	}
}
