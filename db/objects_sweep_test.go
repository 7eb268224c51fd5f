package db

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/session"
)

// TestSweepObjects: a repository's stored objects stay while one of its
// sessions lives or one of its changesets is unsettled, and go once
// neither holds; another repository's are not touched.
func TestSweepObjects(t *testing.T) {
	ctx := t.Context()
	p, err := OpenPostgres(ctx, freshSchema(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	mkRepo(t, p, "r")
	mkRepo(t, p, "kept")
	a, b := rawBlob("a\n"), rawBlob("b\n")
	require.NoError(t, p.PutObjects(ctx, "r", []gitstore.RawObject{a, b}))
	require.NoError(t, p.PutObjects(ctx, "kept", []gitstore.RawObject{a}))
	live := mkSession(t, p, "r", nil)
	mkSession(t, p, "kept", nil)
	held := func(repo string) int {
		t.Helper()
		missing, err := p.MissingObjects(ctx, repo, []gitstore.OID{a.ID, b.ID})
		require.NoError(t, err)
		return 2 - len(missing)
	}

	n, err := p.SweepObjects(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a live session keeps its repository's objects")

	// Submitted, then ended with its changeset open: still needed.
	require.NoError(t, p.SetSessionState(ctx, live.ID, session.StateActive, session.StateSubmitted, t0))
	cs := mkChangeset(t, p, live, nil)
	n, err = p.SweepObjects(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a submitted session keeps them")
	require.NoError(t, p.SetSessionState(ctx, live.ID, session.StateSubmitted, session.StateAccepted, t0))
	n, err = p.SweepObjects(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "an open changeset keeps them")
	assert.Equal(t, 2, held("r"))

	require.NoError(t, p.SetChangesetStatus(ctx, cs.ID, changeset.StatusOpen, changeset.StatusAccepted, oid(40), t0))
	n, err = p.SweepObjects(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 2, n)
	assert.Zero(t, held("r"))
	assert.Equal(t, 1, held("kept"), "another repository's live session keeps its own")
}
