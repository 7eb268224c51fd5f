package session_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/session"
)

// TestEditsPatch checks a batch's patch: a dry run's (whose contents were
// never written) and a real run's are the same text, and the same as the
// session's diff against its base, which is then that batch alone.
func TestEditsPatch(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	batch := []session.Edit{
		{Op: session.OpWrite, Path: "a.txt", Content: "changed\nlines\n"},
		{Op: session.OpWrite, Path: "n/new.txt", Content: "one\ntwo\n"},
		{Op: session.OpAppend, Path: "n/new.txt", Content: "three\n"},
		{Op: session.OpDelete, Path: "a0"},
		{Op: session.OpWrite, Path: "bin.dat", Content: "\x00\x01binary"},
	}
	s := e.create(session.CreateOptions{})
	dry, err := e.m.Edits(ctx, s.ID, batch, true, "")
	require.NoError(t, err)
	dp, err := dry.Patch(ctx)
	require.NoError(t, err)
	var paths []string
	for _, f := range dp.Files {
		paths = append(paths, f.Path())
	}
	assert.ElementsMatch(t, []string{"a.txt", "n/new.txt", "a0", "bin.dat"}, paths)
	assert.Contains(t, string(dp.Unified()), "+++ b/n/new.txt\n@@ -0,0 +1,3 @@\n+one\n+two\n+three\n")
	assert.Contains(t, string(dp.Unified()), "diff --git a/bin.dat b/bin.dat\nnew file mode 100644\n")
	base, err := e.m.Diff(ctx, s.ID, "base")
	require.NoError(t, err)
	assert.Empty(t, base.Patch.Files, "a dry run changes nothing")

	real, err := e.m.Edits(ctx, s.ID, batch, false, "")
	require.NoError(t, err)
	rp, err := real.Patch(ctx)
	require.NoError(t, err)
	assert.Equal(t, string(dp.Unified()), string(rp.Unified()))
	base, err = e.m.Diff(ctx, s.ID, "base")
	require.NoError(t, err)
	assert.Equal(t, string(base.Patch.Unified()), string(rp.Unified()), "the batch's patch is the session's diff of those files")

	// A batch that changes nothing has an empty patch.
	same, err := e.m.Edits(ctx, s.ID, []session.Edit{{Op: session.OpWrite, Path: "a.txt", Content: "changed\nlines\n"}}, false, "")
	require.NoError(t, err)
	sp, err := same.Patch(ctx)
	require.NoError(t, err)
	assert.Empty(t, sp.Files)
}
