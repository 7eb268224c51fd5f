package merge_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/merge"
)

type benchMerge struct {
	dir                string
	repo               *gitstore.Repo
	base, ours, theirs gitstore.OID // commits
	oursTree, newTree  gitstore.OID
}

// setupBenchMerge clones the cached synthetic repository and commits two
// sides on its main: n edited files each (disjoint, spread over the
// tree), so the merge is clean, as git merge-tree measures it. It also
// makes a tree with 1,000 changed paths for the diff benchmark.
func setupBenchMerge(b *testing.B, files, n int) *benchMerge {
	b.Helper()
	ctx := b.Context()
	dir := filepath.Join(b.TempDir(), "clone.git")
	testrepo.Git(b, "", "clone", "-q", "--bare", "--local", "--", testrepo.CachedSynthetic(b, files), dir)
	repo, err := gitstore.Open(dir)
	require.NoError(b, err)
	b.Cleanup(func() { repo.Close() })
	base, err := repo.ResolveRevision(ctx, "main")
	require.NoError(b, err)
	bc, err := repo.Commit(ctx, base)
	require.NoError(b, err)
	var all []string
	require.NoError(b, repo.List(ctx, bc.Tree, "", true, func(e gitstore.Entry) error {
		if !e.Mode.IsDir() {
			all = append(all, e.Path)
		}
		return nil
	}))
	pick := func(k, offset int) []string {
		out := make([]string, k)
		for i := range out {
			out[i] = all[(i*104729+offset)%len(all)]
		}
		return out
	}
	batch := repo.NewBatch()
	side := func(paths []string, tag string) (gitstore.OID, gitstore.OID) {
		var changes []gitstore.Change
		for _, p := range paths {
			e, err := repo.Lookup(ctx, bc.Tree, p)
			require.NoError(b, err)
			data, err := repo.ReadBlob(ctx, e.OID)
			require.NoError(b, err)
			nd := append(append([]byte{}, data...), "edited by "+tag+"\n"...)
			changes = append(changes, gitstore.Change{Path: p, Mode: e.Mode, OID: batch.AddBlob(nd)})
		}
		tree, err := batch.BuildTree(ctx, bc.Tree, changes)
		require.NoError(b, err)
		return tree, batch.AddCommit(gitstore.NewCommit{Tree: tree, Parents: []gitstore.OID{base}, Author: sig, Committer: sig, Message: tag + "\n"})
	}
	ot, oc := side(pick(n, 17), "ours")
	_, tc := side(pick(n, 53), "theirs")
	nt, _ := side(pick(1000, 91), "diff")
	require.NoError(b, batch.Flush(ctx))
	return &benchMerge{dir: dir, repo: repo, base: base, ours: oc, theirs: tc, oursTree: ot, newTree: nt}
}

// BenchmarkMerge: a clean three-way merge of 100 + 100 changed files, in
// process against git merge-tree --write-tree, at 1,000 and 100,000 files.
func BenchmarkMerge(b *testing.B) {
	for _, files := range []int{1000, testrepo.DefaultSyntheticFiles} {
		bm := setupBenchMerge(b, files, 100)
		name := fmt.Sprintf("changes=100+100/files=%d", files)
		b.Run(name+"/impl=sessiond", func(b *testing.B) {
			ctx := b.Context()
			for b.Loop() {
				_, err := merge.Merge(ctx, bm.repo, bm.base, bm.ours, bm.theirs, merge.MergeOptions{})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/impl=git-merge-tree", func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("git", "merge-tree", "--write-tree", bm.ours.String(), bm.theirs.String())
				cmd.Dir, cmd.Env = bm.dir, testrepo.Env()
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatal(err, string(out))
				}
			}
		})
	}
}

// BenchmarkDiff: the diff of 1,000 changed paths (with rename detection)
// against git diff-tree -r.
func BenchmarkDiff(b *testing.B) {
	bm := setupBenchMerge(b, testrepo.DefaultSyntheticFiles, 1)
	bc, err := bm.repo.Commit(b.Context(), bm.base)
	require.NoError(b, err)
	name := fmt.Sprintf("paths=1000/files=%d", testrepo.DefaultSyntheticFiles)
	b.Run(name+"/impl=sessiond", func(b *testing.B) {
		ctx := b.Context()
		for b.Loop() {
			cs, err := merge.DiffTrees(ctx, bm.repo, bc.Tree, bm.newTree, merge.DiffOptions{})
			if err != nil || len(cs) != 1000 {
				b.Fatal(err, len(cs))
			}
		}
	})
	b.Run(name+"/impl=git-diff-tree", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("git", "diff-tree", "-r", bc.Tree.String(), bm.newTree.String())
			cmd.Dir, cmd.Env = bm.dir, testrepo.Env()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatal(err, string(out))
			}
		}
	})
}

// BenchmarkPatch: the patch of 1,000 changed files — hunks with their
// function context, each file's diff attribute looked up in the new
// tree's .gitattributes files — against git diff of the same commits,
// without and with a root .gitattributes naming built-in drivers.
func BenchmarkPatch(b *testing.B) {
	bm := setupBenchMerge(b, testrepo.DefaultSyntheticFiles, 1)
	ctx := b.Context()
	bc, err := bm.repo.Commit(ctx, bm.base)
	require.NoError(b, err)
	batch := bm.repo.NewBatch()
	attrs := batch.AddBlob([]byte("*.go diff=golang\n*.py diff=python\n*.md diff=markdown\n*.sh diff=bash\n"))
	withAttrs, err := batch.BuildTree(ctx, bm.newTree, []gitstore.Change{{Path: ".gitattributes", Mode: gitstore.ModeFile, OID: attrs}})
	require.NoError(b, err)
	require.NoError(b, batch.Flush(ctx))
	name := fmt.Sprintf("paths=1000/files=%d", testrepo.DefaultSyntheticFiles)
	for _, v := range []struct {
		attrs string
		tree  gitstore.OID
	}{{"none", bm.newTree}, {"drivers", withAttrs}} {
		b.Run(name+"/attrs="+v.attrs+"/impl=sessiond", func(b *testing.B) {
			for b.Loop() {
				p, err := merge.Diff(ctx, bm.repo, bc.Tree, v.tree, merge.DiffOptions{}, merge.PatchOptions{})
				if err != nil || len(p.Files) < 1000 {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run(name+"/attrs=none/impl=git-diff", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("git", "diff", bc.Tree.String(), bm.newTree.String())
			cmd.Dir, cmd.Env = bm.dir, testrepo.Env()
			if out, err := cmd.Output(); err != nil || len(out) == 0 {
				b.Fatal(err)
			}
		}
	})
}
