package db

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/cluster"
	"github.com/sessiond/sessiond/events"
)

// TestSessionOwnerAndDraining: the owner row as routing reads it (with
// the owner's advertised URL and whether its lease lives), none for a
// session without one; draining marks only the incarnation's row, and a
// join starts undrained.
func TestSessionOwnerAndDraining(t *testing.T) {
	ctx := t.Context()
	p, err := OpenPostgres(ctx, freshSchema(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	hour := time.Hour
	inc := uuid.New()
	n := cluster.Node{ID: "a", AdvertiseURL: "http://10.0.0.1:7420", Version: "v1"}
	require.NoError(t, p.JoinNode(ctx, n, inc, hour))

	s := uuid.New()
	_, ok, err := p.SessionOwner(ctx, s)
	require.NoError(t, err)
	assert.False(t, ok)
	_, err = p.TakeSession(ctx, s, "a", hour)
	require.NoError(t, err)
	o, ok, err := p.SessionOwner(ctx, s)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, cluster.Owner{Node: "a", Epoch: 1, Live: true, URL: n.AdvertiseURL}, o)
	require.NoError(t, p.ReleaseSession(ctx, s, "a", 1))
	time.Sleep(time.Millisecond)
	o, _, err = p.SessionOwner(ctx, s)
	require.NoError(t, err)
	assert.False(t, o.Live, "released: expired")

	assert.ErrorIs(t, p.SetNodeDraining(ctx, "a", uuid.New()), cluster.ErrIdentityLost, "another incarnation's row is not marked")
	require.NoError(t, p.SetNodeDraining(ctx, "a", inc))
	ns, err := p.ListNodes(ctx, hour)
	require.NoError(t, err)
	assert.True(t, ns[0].Draining)
	require.NoError(t, p.LeaveNode(ctx, "a", inc))
	require.NoError(t, p.JoinNode(ctx, n, uuid.New(), hour))
	ns, err = p.ListNodes(ctx, hour)
	require.NoError(t, err)
	assert.False(t, ns[0].Draining, "joined again: undrained")
}

// TestWakerAcrossConnections: a Notify on one store's waker wakes the
// waiters of another process's waker on the same schema.
func TestWakerAcrossConnections(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	url := freshSchema(t)
	p1, err := OpenPostgres(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p1.Close() })
	p2, err := OpenPostgres(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p2.Close() })
	w1, err := p1.Waker(ctx, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	w2, err := p2.Waker(ctx, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	var _ events.Waker = w2
	wait := w2.Wait()
	w1.Notify()
	select {
	case <-wait:
	case <-time.After(20 * time.Second):
		t.Fatal("the other waker was never woken")
	}
}
