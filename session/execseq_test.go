package session_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/session"
)

// TestExecSeq: a command's result names the session's latest mutation
// when it finished (its own exec mutation, or the one it ran on), which
// the checks of changesets compare with a revision's.
func TestExecSeq(t *testing.T) {
	plainRunOnly(t, "commands in namespaces and the sequence they name")
	forExecModes(t, func(t *testing.T, e *execEnv) {
		s := e.create(session.CreateOptions{})
		res := e.sh(s.ID, "true")
		assert.Nil(t, res.Mutation)
		assert.Zero(t, res.Seq, "nothing recorded yet")

		res = e.sh(s.ID, "echo one > one.txt")
		require.NotNil(t, res.Mutation)
		assert.Equal(t, res.Mutation.Seq, res.Seq)
		changed := res.Seq

		res = e.sh(s.ID, "cat one.txt; exit 4")
		assert.Equal(t, 4, res.ExitCode)
		assert.Nil(t, res.Mutation)
		assert.Equal(t, changed, res.Seq, "ran on the files of that mutation")
		got, err := e.m.Get(t.Context(), s.ID)
		require.NoError(t, err)
		assert.Equal(t, got.Seq, res.Seq)
	})
}
