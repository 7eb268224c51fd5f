package merge

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// countingCtx counts how often Err is asked and answers
// context.Canceled once it has been asked left times: a context that
// ends while the work is under way.
type countingCtx struct {
	context.Context
	asked, left atomic.Int64
}

func (c *countingCtx) Err() error {
	c.asked.Add(1)
	if c.left.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// A patch of one large file with changes all over it stops inside the
// line diff when the request's context ends. Counted on a file with one
// change, the looks at the context outside the line diff (before the
// file, the reads, after the diff); a context that ends three looks
// later ends only if the diff looks as it searches.
func TestBuildPatchStopsInTheLineDiff(t *testing.T) {
	ctx := context.Background()
	repo, err := gitstore.Open(testrepo.Init(t))
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	// Lines swapped in pairs all over the file: every line has its match
	// on the other side, so the Myers search does the work.
	var old, new strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&old, "line %d\n", i)
		j := i
		switch i % 7 {
		case 3:
			j = i + 1
		case 4:
			j = i - 1
		}
		fmt.Fprintf(&new, "line %d\n", j)
	}
	a, err := repo.WriteBlob(ctx, []byte(old.String()))
	require.NoError(t, err)
	b, err := repo.WriteBlob(ctx, []byte(new.String()))
	require.NoError(t, err)
	change := func(a, b gitstore.OID) []FileChange {
		return []FileChange{{Status: StatusModified, OldPath: "f.txt", NewPath: "f.txt",
			OldMode: gitstore.ModeFile, NewMode: gitstore.ModeFile, OldOID: a, NewOID: b}}
	}
	small1, err := repo.WriteBlob(ctx, []byte("a\nb\nc\n"))
	require.NoError(t, err)
	small2, err := repo.WriteBlob(ctx, []byte("a\nB\nc\n"))
	require.NoError(t, err)
	counting := &countingCtx{Context: ctx}
	counting.left.Store(1 << 40)
	_, err = BuildPatch(counting, repo, change(small1, small2), PatchOptions{})
	require.NoError(t, err)

	changes := change(a, b)
	stopping := &countingCtx{Context: ctx}
	stopping.left.Store(counting.asked.Load() + 3)
	_, err = BuildPatch(stopping, repo, changes, PatchOptions{})
	require.ErrorIs(t, err, context.Canceled)

	p, err := BuildPatch(ctx, repo, changes, PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, 20_000/7, p.Stats.Insertions, "and the whole diff when the context goes on")
	assert.Equal(t, p.Stats.Insertions, p.Stats.Deletions)
}
