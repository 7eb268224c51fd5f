package overlay_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/overlay"
)

// A frozen overlay is a snapshot: readers share it (run with -race: no
// read writes it, the lazily merged sorted keys included), a change
// panics, and a clone of it is writable and leaves it as it was.
func TestFrozenOverlayIsAnImmutableSnapshot(t *testing.T) {
	f := openFixture(t, "small")
	ctx := context.Background()
	o := overlay.New(f.view, overlay.Options{})
	for i := range 50 {
		// Unsorted puts: the sorted keys are left to merge lazily.
		require.NoError(t, o.Put(ctx, fmt.Sprintf("gen/f%02d.txt", 49-i), f.blob(t, fmt.Sprint(i)), gitstore.ModeFile))
	}
	want := listAll(t, o, overlay.ListOptions{Recursive: true})
	require.Same(t, o, o.Freeze())
	assert.True(t, o.Frozen())

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			assert.Equal(t, want, listAll(t, o, overlay.ListOptions{Recursive: true}))
			_, err := o.Stat(ctx, "gen/f07.txt")
			assert.NoError(t, err)
			assert.Len(t, o.Entries(), 50)
			c := o.Clone() // cloning only reads
			assert.False(t, c.Frozen())
		})
	}
	wg.Wait()

	assert.Panics(t, func() { _ = o.Put(ctx, "gen/new.txt", f.blob(t, "x"), gitstore.ModeFile) })
	assert.Panics(t, func() { _ = o.Delete(ctx, "gen/f01.txt") })
	c := o.Clone()
	require.NoError(t, c.Delete(ctx, "gen"))
	assert.Equal(t, want, listAll(t, o, overlay.ListOptions{Recursive: true}), "the frozen original is unchanged")
	_, err := c.Stat(ctx, "gen/f01.txt")
	assert.ErrorIs(t, err, overlay.ErrNotFound)
}
