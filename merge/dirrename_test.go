package merge_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/merge"
)

func textFiles(kv ...string) model {
	m := model{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = file{gitstore.ModeFile, []byte(kv[i+1])}
	}
	return m
}

// TestMergeDirectoryRenames: the cases directory rename detection is for,
// in each of git's modes, against git merge-tree: the merged tree when
// git merges cleanly, otherwise the conflicted paths, and the kinds the
// conflicts get.
func TestMergeDirectoryRenames(t *testing.T) {
	dir := testrepo.InitBare(t)
	repo, err := gitstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	ctx := t.Context()

	type want struct {
		kinds []merge.ConflictKind // nil: clean
		paths []string             // in the merged tree (clean) or absent from it
	}
	for _, tc := range []struct {
		name                 string
		base, ours, theirs   model
		conflict, apply, off want
	}{{
		name:     "a file added to a renamed directory follows it",
		base:     textFiles("z/b", "b\n", "z/c", "c\n"),
		ours:     textFiles("y/b", "b\n", "y/c", "c\n"),
		theirs:   textFiles("z/b", "b\n", "z/c", "c\n", "z/d", "d\n"),
		conflict: want{kinds: []merge.ConflictKind{merge.ConflictFileLocation}},
		apply:    want{paths: []string{"y/b", "y/c", "y/d"}},
		off:      want{paths: []string{"y/b", "y/c", "z/d"}},
	}, {
		name:     "renamed into the repository's root",
		base:     textFiles("z/b", "b\n", "z/c", "c\n", "top", "t\n"),
		ours:     textFiles("z/b", "b\n", "z/c", "c\n", "z/e", "e\n", "top", "t\n"),
		theirs:   textFiles("b", "b\n", "c", "c\n", "top", "t\n"),
		conflict: want{kinds: []merge.ConflictKind{merge.ConflictFileLocation}},
		apply:    want{paths: []string{"b", "c", "e"}},
		off:      want{paths: []string{"b", "c", "z/e"}},
	}, {
		// git decides where a directory went only when the other side
		// added files directly in it, so a new subdirectory stays.
		name:     "a new subdirectory of a renamed directory stays",
		base:     textFiles("z/b", "b\n", "z/c", "c\n"),
		ours:     textFiles("y/b", "b\n", "y/c", "c\n"),
		theirs:   textFiles("z/b", "b\n", "z/c", "c\n", "z/sub/e", "e\n"),
		conflict: want{paths: []string{"y/b", "y/c", "z/sub/e"}},
		apply:    want{paths: []string{"y/b", "y/c", "z/sub/e"}},
		off:      want{paths: []string{"y/b", "y/c", "z/sub/e"}},
	}, {
		name:     "no directory gets most files",
		base:     textFiles("z/b", "b\n", "z/c", "c\n"),
		ours:     textFiles("x/b", "b\n", "y/c", "c\n"),
		theirs:   textFiles("z/b", "b\n", "z/c", "c\n", "z/d", "d\n"),
		conflict: want{kinds: []merge.ConflictKind{merge.ConflictDirRenameSplit}},
		apply:    want{kinds: []merge.ConflictKind{merge.ConflictDirRenameSplit}},
		off:      want{paths: []string{"x/b", "y/c", "z/d"}},
	}, {
		name:     "two directories merged into one, each given a file of the same name",
		base:     textFiles("w/b", "b\n", "z/c", "c\n"),
		ours:     textFiles("y/b", "b\n", "y/c", "c\n"),
		theirs:   textFiles("w/b", "b\n", "w/n", "n1\n", "z/c", "c\n", "z/n", "n2\n"),
		conflict: want{kinds: []merge.ConflictKind{merge.ConflictDirRenameCollision}},
		apply:    want{kinds: []merge.ConflictKind{merge.ConflictDirRenameCollision}},
		off:      want{paths: []string{"w/n", "z/n"}},
	}, {
		name:     "a file in the way of the moved one",
		base:     textFiles("z/b", "b\n", "z/c", "c\n"),
		ours:     textFiles("y/b", "b\n", "y/c", "c\n"),
		theirs:   textFiles("z/b", "b\n", "z/c", "c\n", "z/d", "theirs\n", "y/d", "also theirs\n"),
		conflict: want{kinds: []merge.ConflictKind{merge.ConflictDirRenameCollision}},
		apply:    want{kinds: []merge.ConflictKind{merge.ConflictDirRenameCollision}},
		off:      want{paths: []string{"y/d", "z/d"}},
	}, {
		name:     "a file moved onto one the other side added",
		base:     textFiles("z/b", "b\n", "z/c", "c\n"),
		ours:     textFiles("y/b", "b\n", "y/c", "c\n", "y/d", "mine\n"),
		theirs:   textFiles("z/b", "b\n", "z/c", "c\n", "z/d", "theirs\n"),
		conflict: want{kinds: []merge.ConflictKind{merge.ConflictFileLocation}},
		apply:    want{kinds: []merge.ConflictKind{merge.ConflictAddAdd}},
		off:      want{paths: []string{"y/d", "z/d"}},
	}} {
		for _, mode := range []struct {
			name string
			mode merge.DirRenameMode
			want want
		}{{"conflict", merge.DirRenamesConflict, tc.conflict}, {"true", merge.DirRenamesApply, tc.apply}, {"false", merge.DirRenamesOff, tc.off}} {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				b := repo.NewBatch()
				_, bc := commitModel(ctx, t, b, tc.base)
				_, oc := commitModel(ctx, t, b, tc.ours, bc)
				_, tc2 := commitModel(ctx, t, b, tc.theirs, bc)
				require.NoError(t, b.Flush(ctx))
				gitTree, gitClean, gitConflicts := gitMergeTree(t, dir, mode.name, oc, tc2)
				res, err := merge.Merge(ctx, repo, bc, oc, tc2, merge.MergeOptions{DirectoryRenames: mode.mode})
				if mode.want.kinds == nil {
					require.True(t, gitClean, "git: %s", gitMergeTreeMessages(dir, mode.name, oc, tc2))
					require.NoError(t, err)
					assert.Equal(t, gitTree, res.Tree.String())
					for _, p := range mode.want.paths {
						_, err := repo.Lookup(ctx, res.Tree, p)
						assert.NoError(t, err, p)
					}
					return
				}
				require.False(t, gitClean)
				var ce *merge.ConflictError
				require.True(t, errors.As(err, &ce), "%v", err)
				var kinds []merge.ConflictKind
				for _, c := range ce.Conflicts {
					kinds = append(kinds, c.Kind)
					assert.NotEmpty(t, c.Message)
				}
				assert.Equal(t, mode.want.kinds, kinds)
				assert.Equal(t, gitConflicts, conflictPaths(ce.Conflicts))
			})
		}
	}
}
