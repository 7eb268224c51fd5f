package session_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/session"
)

// TestIfExists: HTTP's If-Match: * is the engine's, checked in the
// mutation itself: a write or delete of a missing file is a
// *PreconditionError and changes nothing, of any version of a file it
// goes through, and a directory has no version.
func TestIfExists(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	var pe *session.PreconditionError

	_, _, err := e.m.Write(ctx, s.ID, "missing.txt", []byte("x\n"), session.WriteOptions{IfExists: true})
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "missing.txt", pe.Path)
	_, err = e.m.Remove(ctx, s.ID, "missing.txt", session.DeleteOptions{IfExists: true})
	require.ErrorAs(t, err, &pe)
	ms, err := e.m.Mutations(ctx, s.ID, 0, 0)
	require.NoError(t, err)
	assert.Empty(t, ms, "nothing refused was recorded")

	_, mu, err := e.m.Write(ctx, s.ID, "a.txt", []byte("new\n"), session.WriteOptions{IfExists: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"a.txt"}, mu.Paths)
	assert.False(t, mu.Old[0].IsZero(), "it replaced a file")
	_, err = e.m.Remove(ctx, s.ID, "a/b", session.DeleteOptions{IfExists: true, Recursive: true})
	assert.ErrorIs(t, err, record.ErrInvalid, "a directory has no version")
	mu, err = e.m.Remove(ctx, s.ID, "a.txt", session.DeleteOptions{IfExists: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"a.txt"}, mu.Paths)

	// A new file's mutation has no old version: how the API tells 201.
	_, mu, err = e.m.Write(ctx, s.ID, "fresh.txt", []byte("x\n"), session.WriteOptions{})
	require.NoError(t, err)
	assert.True(t, mu.Old[0].IsZero())
}
