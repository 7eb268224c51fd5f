package session_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/session"
)

// TestReplaceSkipsBinaryAndSymlinks: a replace by glob leaves binary files
// and symlink targets alone and says so; named explicitly, it rewrites
// them (issue 13, wrong results 3).
func TestReplaceSkipsBinaryAndSymlinks(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	e.write(s.ID, "bin.dat", "e\x00e")
	_, _, err := e.m.Write(ctx, s.ID, "elink", []byte("/etc/passwd"), session.WriteOptions{Mode: gitstore.ModeSymlink})
	require.NoError(t, err)
	e.write(s.ID, "text.txt", "hello\n")

	res, err := e.m.Edits(ctx, s.ID, []session.Edit{{Op: "replace", Glob: "**", Old: "e", New: "E"}}, false, "")
	require.NoError(t, err)
	r := res.Results[0]
	assert.Contains(t, r.Paths, "text.txt")
	assert.NotContains(t, r.Paths, "bin.dat")
	assert.NotContains(t, r.Paths, "elink")
	assert.Contains(t, r.Skipped, session.Skipped{Path: "bin.dat", Reason: "binary"})
	assert.Contains(t, r.Skipped, session.Skipped{Path: "elink", Reason: "symlink"})
	assert.Contains(t, r.Skipped, session.Skipped{Path: "link", Reason: "symlink"})
	assert.Equal(t, "e\x00e", e.read(s.ID, "bin.dat"))
	assert.Equal(t, "/etc/passwd", e.read(s.ID, "elink"))
	assert.Equal(t, "hEllo\n", e.read(s.ID, "text.txt"))

	// Named explicitly, they are rewritten (the link stays a link).
	res, err = e.m.Edits(ctx, s.ID, []session.Edit{
		{Op: "replace", Path: "bin.dat", Old: "e", New: "E"},
		{Op: "replace", Path: "elink", Old: "/etc", New: "/Etc"},
	}, false, "")
	require.NoError(t, err)
	assert.Empty(t, res.Results[0].Skipped)
	assert.Equal(t, "E\x00E", e.read(s.ID, "bin.dat"))
	fi, err := e.m.Stat(ctx, s.ID, "elink")
	require.NoError(t, err)
	assert.Equal(t, gitstore.ModeSymlink, fi.Mode)
	assert.Equal(t, "/Etc/passwd", e.read(s.ID, "elink"))
}
