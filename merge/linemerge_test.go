package merge_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/merge"
)

func TestMergeLines(t *testing.T) {
	opts := merge.LineMergeOptions{OursLabel: "ours", TheirsLabel: "theirs"}
	tests := []struct {
		name, base, ours, theirs, want string
		conflicts                      int
	}{
		{"separate edits", "1\n2\n3\n4\n5\n6\n7\n", "1\nA\n3\n4\n5\n6\n7\n", "1\n2\n3\n4\n5\nB\n7\n", "1\nA\n3\n4\n5\nB\n7\n", 0},
		{"same edit", "1\n2\n", "1\nX\n", "1\nX\n", "1\nX\n", 0},
		{"overlap", "1\n2\n3\n", "1\nA\n3\n", "1\nB\n3\n", "1\n<<<<<<< ours\nA\n=======\nB\n>>>>>>> theirs\n3\n", 1},
		{"no newline at end", "a\nb", "a\nc", "a\nd", "a\n<<<<<<< ours\nc\n=======\nd\n>>>>>>> theirs\n", 1},
		{"one side only", "a\n", "a\n", "b\n", "b\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := merge.MergeLines([]byte(tt.base), []byte(tt.ours), []byte(tt.theirs), opts)
			assert.Equal(t, tt.want, string(r.Content))
			assert.Len(t, r.Conflicts, tt.conflicts)
		})
	}
	r := merge.MergeLines([]byte("a\x00"), []byte("b\x00"), []byte("c\x00"), opts)
	assert.True(t, r.Binary)
	assert.False(t, r.Clean())
}

// FuzzMergeLines: never panics, with either diff algorithm; merging a
// side with itself or with the base gives that side back, cleanly.
func FuzzMergeLines(f *testing.F) {
	f.Add([]byte("1\n2\n3\n"), []byte("1\nA\n3\n"), []byte("1\n2\nB\n"), false)
	f.Add([]byte("a\nb"), []byte("a\r\nc\r\n"), []byte(""), true)
	f.Add([]byte("x\nx\nx\n"), []byte("x\ny\nx\nx\n"), []byte("x\nx\n"), true)
	f.Fuzz(func(t *testing.T, base, ours, theirs []byte, histogram bool) {
		opts := merge.LineMergeOptions{OursLabel: "o", TheirsLabel: "t", Histogram: histogram}
		merge.MergeLines(base, ours, theirs, opts)
		if merge.IsBinary(base) || merge.IsBinary(ours) {
			return
		}
		for _, r := range []*merge.LineMergeResult{
			merge.MergeLines(base, ours, ours, opts),
			merge.MergeLines(base, ours, base, opts),
			merge.MergeLines(base, base, ours, opts),
		} {
			if !r.Clean() || !bytes.Equal(r.Content, ours) {
				t.Fatalf("identity merge changed %q into %q (clean %v)", ours, r.Content, r.Clean())
			}
		}
	})
}

// TestMergeFixture runs Merge on the merge fixture: every conflict kind
// next to clean changes, and a clean merge equal to git's.
func TestMergeFixture(t *testing.T) {
	dir := testrepo.BuildBare(t, "merge")
	repo, err := gitstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	ctx := t.Context()
	rev := func(r string) gitstore.OID {
		id, err := repo.ResolveRevision(ctx, r)
		require.NoError(t, err)
		return id
	}
	_, err = merge.Merge(ctx, repo, rev("main"), rev("ours"), rev("theirs"), merge.MergeOptions{OursLabel: "ours", TheirsLabel: "theirs", Render: true})
	var ce *merge.ConflictError
	require.ErrorAs(t, err, &ce)
	require.ErrorIs(t, err, merge.ErrConflict)
	kinds := map[string]merge.ConflictKind{}
	for _, c := range ce.Conflicts {
		kinds[c.Path] = c.Kind
	}
	assert.Equal(t, map[string]merge.ConflictKind{
		"added.txt":    merge.ConflictAddAdd,
		"conflict.txt": merge.ConflictContent,
		"fd":           merge.ConflictFileDirectory,
		"moddel.txt":   merge.ConflictModifyDelete,
	}, kinds)
	for _, c := range ce.Conflicts {
		if c.Path == "conflict.txt" {
			assert.Equal(t, "line 1\n<<<<<<< ours\nline 2 as ours wants it\n=======\nline 2 as theirs wants it\n>>>>>>> theirs\nline 3\n", string(c.Rendered))
			require.Len(t, c.Hunks, 1)
			assert.Equal(t, []string{"line 2\n"}, c.Hunks[0].BaseLines)
		}
		if c.Path == "fd" {
			assert.Equal(t, []string{"fd~ours"}, c.GitPaths)
		}
	}

	res, err := merge.Merge(ctx, repo, rev("main"), rev("ours"), rev("clean"), merge.MergeOptions{})
	require.NoError(t, err)
	assert.Equal(t, testrepo.Git(t, dir, "merge-tree", "--write-tree", "ours", "clean"), res.Tree.String())
	testrepo.Git(t, dir, "fsck", "--strict")

	// Cherry-pick of clean's commit onto ours is the same merge; revert
	// of it afterwards gives ours back.
	cp, err := merge.CherryPick(ctx, repo, rev("clean"), rev("ours"), merge.MergeOptions{})
	require.NoError(t, err)
	assert.Equal(t, res.Tree, cp.Tree)
	commit := func(tree, parent gitstore.OID) gitstore.OID {
		id, err := repo.WriteCommit(ctx, gitstore.NewCommit{Tree: tree, Parents: []gitstore.OID{parent}, Author: sig, Committer: sig, Message: "x\n"})
		require.NoError(t, err)
		return id
	}
	picked := commit(cp.Tree, rev("ours"))
	rv, err := merge.Revert(ctx, repo, picked, cp.Tree, merge.MergeOptions{})
	require.NoError(t, err)
	oursCommit, err := repo.Commit(ctx, rev("ours"))
	require.NoError(t, err)
	assert.Equal(t, oursCommit.Tree, rv.Tree)

	// Rebase of ours's changes onto clean equals the merge.
	rb, err := merge.Rebase(ctx, repo, rev("main"), rev("ours"), rev("clean"), merge.MergeOptions{})
	require.NoError(t, err)
	assert.Equal(t, res.Tree, rb.Tree)
}
