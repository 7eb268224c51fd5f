package db

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/cluster"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/session"
)

func rawBlob(s string) gitstore.RawObject {
	return gitstore.RawObject{ID: gitstore.HashObject(gitstore.KindBlob, []byte(s)), Kind: gitstore.KindBlob, Data: []byte(s)}
}

func testObjects(t *testing.T, _ backend, s Store) {
	ctx := t.Context()
	mkRepo(t, s, "r")
	mkRepo(t, s, "other")
	ot, ok := s.(cluster.ObjectTx)
	require.True(t, ok, "the store keeps objects")

	empty := rawBlob("")
	a := rawBlob("a\n")
	tree := gitstore.RawObject{Kind: gitstore.KindTree, Data: gitstore.EncodeTree([]gitstore.TreeEntry{{Name: "a", Mode: gitstore.ModeFile, OID: a.ID}})}
	tree.ID = gitstore.HashObject(tree.Kind, tree.Data)
	require.NoError(t, ot.PutObjects(ctx, "r", []gitstore.RawObject{empty, a, tree}))
	// Again: kept once, no error.
	require.NoError(t, ot.PutObjects(ctx, "r", []gitstore.RawObject{a}))

	b := rawBlob("b\n")
	missing, err := ot.MissingObjects(ctx, "r", []gitstore.OID{a.ID, b.ID, empty.ID, b.ID})
	require.NoError(t, err)
	assert.Equal(t, []gitstore.OID{b.ID}, missing)
	// Per repository.
	missing, err = ot.MissingObjects(ctx, "other", []gitstore.OID{a.ID})
	require.NoError(t, err)
	assert.Equal(t, []gitstore.OID{a.ID}, missing)

	got, err := ot.GetObjects(ctx, "r", []gitstore.OID{tree.ID, b.ID, empty.ID})
	require.NoError(t, err)
	byID := map[gitstore.OID]gitstore.RawObject{}
	for _, o := range got {
		byID[o.ID] = o
	}
	require.Len(t, byID, 2)
	assert.Equal(t, tree, byID[tree.ID])
	assert.Equal(t, gitstore.KindBlob, byID[empty.ID].Kind)
	assert.Empty(t, byID[empty.ID].Data)

	// In a transaction that rolls back, nothing stays.
	boom := errors.New("boom")
	err = s.InTx(ctx, func(tx session.Tx) error {
		require.NoError(t, tx.(cluster.ObjectTx).PutObjects(ctx, "r", []gitstore.RawObject{b}))
		return boom
	})
	require.ErrorIs(t, err, boom)
	missing, err = ot.MissingObjects(ctx, "r", []gitstore.OID{b.ID})
	require.NoError(t, err)
	assert.Equal(t, []gitstore.OID{b.ID}, missing)

	// More than one statement's worth.
	many := make([]gitstore.RawObject, 1234)
	ids := make([]gitstore.OID, len(many))
	for i := range many {
		many[i] = rawBlob(fmt.Sprint(i))
		ids[i] = many[i].ID
	}
	require.NoError(t, ot.PutObjects(ctx, "r", many))
	got, err = ot.GetObjects(ctx, "r", ids)
	require.NoError(t, err)
	assert.Len(t, got, len(many))
	missing, err = ot.MissingObjects(ctx, "r", ids)
	require.NoError(t, err)
	assert.Empty(t, missing)
}
