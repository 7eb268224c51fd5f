package worktree_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/worktree"
)

// BenchmarkWorkTree: on a checkout of the generated 100,000-file
// repository, the check that the work tree and index are clean (what an
// accept onto the checked-out branch pays before anything else) and a
// whole update to a commit with 10 changed files and back, against what
// git's push-to-checkout runs for the same (update-index --refresh,
// diff-files, diff-index --cached, then read-tree -u -m).
func BenchmarkWorkTree(b *testing.B) {
	ctx := b.Context()
	files := testrepo.DefaultSyntheticFiles
	dir := filepath.Join(b.TempDir(), "checkout")
	testrepo.Git(b, "", "clone", "-q", "--shared", testrepo.CachedSynthetic(b, files), dir)
	r, err := gitstore.Open(dir)
	require.NoError(b, err)
	b.Cleanup(func() { r.Close() })
	a, err := r.ResolveRevision(ctx, "HEAD")
	require.NoError(b, err)
	ac, err := r.Commit(ctx, a)
	require.NoError(b, err)
	var paths []string
	require.NoError(b, r.List(ctx, ac.Tree, "", true, func(e gitstore.Entry) error {
		if e.Mode == gitstore.ModeFile && len(paths) < 10 && len(e.Path)%7 == 0 {
			paths = append(paths, e.Path)
		}
		return nil
	}))
	batch := r.NewBatch()
	var changes []gitstore.Change
	for _, p := range paths {
		changes = append(changes, gitstore.Change{Path: p, Mode: gitstore.ModeFile, OID: batch.AddBlob([]byte("changed " + p + "\n"))})
	}
	bt, err := batch.BuildTree(ctx, ac.Tree, changes)
	require.NoError(b, err)
	sig := gitstore.Signature{Name: "b", Email: "b@example.com"}
	bcommit := batch.AddCommit(gitstore.NewCommit{Tree: bt, Parents: []gitstore.OID{a}, Author: sig, Committer: sig, Message: "b\n"})
	require.NoError(b, batch.Flush(ctx))
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, testrepo.Env()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatal(err, string(out))
		}
	}
	gitCheck := func(head gitstore.OID) {
		git("update-index", "-q", "--ignore-submodules", "--refresh")
		git("diff-files", "--quiet", "--ignore-submodules", "--")
		git("diff-index", "--quiet", "--cached", "--ignore-submodules", head.String(), "--")
	}
	git("update-index", "-q", "--refresh") // a warm index, as a checkout in use has

	name := fmt.Sprintf("files=%d", files)
	b.Run("check/"+name+"/impl=sessiond", func(b *testing.B) {
		for b.Loop() {
			u, err := worktree.Begin(ctx, r, a, a)
			if err != nil {
				b.Fatal(err)
			}
			if err := u.Abort(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check/"+name+"/impl=git", func(b *testing.B) {
		for b.Loop() {
			gitCheck(a)
		}
	})
	move := func(from, to gitstore.OID) {
		u, err := worktree.Begin(ctx, r, from, to)
		if err != nil {
			b.Fatal(err)
		}
		if err := u.Apply(ctx); err != nil {
			b.Fatal(err)
		}
		if err := u.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("update-and-back/changed=10/"+name+"/impl=sessiond", func(b *testing.B) {
		for b.Loop() {
			move(a, bcommit)
			move(bcommit, a)
		}
	})
	b.Run("update-and-back/changed=10/"+name+"/impl=git", func(b *testing.B) {
		for b.Loop() {
			gitCheck(a)
			git("read-tree", "-u", "-m", a.String(), bcommit.String())
			gitCheck(bcommit)
			git("read-tree", "-u", "-m", bcommit.String(), a.String())
		}
	})
}
