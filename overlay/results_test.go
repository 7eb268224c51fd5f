package overlay_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/overlay"
)

// TestEmptySymlinkTarget: a symlink needs a target (rule symlinkTarget),
// and a refused write changes nothing (issue 13, wrong results 8).
func TestEmptySymlinkTarget(t *testing.T) {
	ctx := t.Context()
	f := openFixture(t, "small")
	o := overlay.New(f.view, overlay.Options{})
	empty := f.blob(t, "")
	for _, p := range []string{"new-link", "link", "README.md"} {
		err := o.Put(ctx, p, empty, gitstore.ModeSymlink)
		var pe *overlay.PathError
		require.True(t, errors.As(err, &pe), "%s: %v", p, err)
		assert.Equal(t, overlay.RuleSymlinkTarget, pe.Rule)
		assert.Equal(t, p, pe.Path)
	}
	assert.Equal(t, 0, o.Len())
	require.NoError(t, o.Put(ctx, "new-link", f.blob(t, "README.md"), gitstore.ModeSymlink))
	// An empty regular file is fine.
	require.NoError(t, o.Put(ctx, "empty.txt", empty, gitstore.ModeFile))
	assert.NoError(t, overlay.ValidateSymlinkTarget("x", gitstore.ModeFile, empty))
}
