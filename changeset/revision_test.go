package changeset_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/record"
)

// TestExpectedHeadRevision: an accept's expected_head takes git's revision
// syntax, resolved as `git rev-parse` does (issue 13, wrong results 1).
func TestExpectedHeadRevision(t *testing.T) {
	e := newChangesetEnv(t)
	ctx := t.Context()
	s := e.session(map[string]string{"new.txt": "new\n"})
	c := e.submit(s, "new file")
	_, err := e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{ExpectedHeadRev: "main~1"})
	var ce *record.ConflictError
	require.ErrorAs(t, err, &ce, "main is not at main~1")
	_, err = e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{ExpectedHeadRev: "main~x"})
	assert.ErrorIs(t, err, record.ErrNotFound, "a revision that names nothing")
	_, err = e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{ExpectedHeadRev: "main^{tree}"})
	assert.ErrorIs(t, err, record.ErrInvalid, "a revision that names a tree")
	res, err := e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{ExpectedHeadRev: "refs/heads/main^{commit}"})
	require.NoError(t, err)
	assert.Equal(t, e.bgit("rev-parse", "main"), res.Commit.String())
}
