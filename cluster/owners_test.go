package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memOwners is an OwnerStore in memory whose renewals can be made to
// fail, for the rules Owners keeps by itself (the store's SQL is tested
// in package db on PostgreSQL).
type memOwners struct {
	mu       sync.Mutex
	rows     map[uuid.UUID]Lease
	renewErr error
}

func (m *memOwners) TakeSession(_ context.Context, s uuid.UUID, node string, _ time.Duration) (Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.rows[s]
	if l.Node != "" && l.Node != node {
		return Lease{}, &OwnedError{Node: l.Node, Epoch: l.Epoch}
	}
	l = Lease{Session: s, Node: node, Epoch: l.Epoch + 1}
	m.rows[s] = l
	return l, nil
}

func (m *memOwners) RenewSession(_ context.Context, s uuid.UUID, node string, epoch int64, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.renewErr != nil {
		return m.renewErr
	}
	if l := m.rows[s]; l.Node != node || l.Epoch != epoch {
		return ErrFenced
	}
	return nil
}

func (m *memOwners) ReleaseSession(_ context.Context, s uuid.UUID, node string, epoch int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.rows[s]; l.Node == node && l.Epoch == epoch {
		delete(m.rows, s)
	}
	return nil
}

// TestOwnersDeadline: a lease is trusted until its own monotonic deadline
// (lease minus margin from before the take or renewal was sent); a
// renewal pushes it on; past it without one, or fenced, the session is
// dropped and reported lost.
func TestOwnersDeadline(t *testing.T) {
	ctx := t.Context()
	store := &memOwners{rows: map[uuid.UUID]Lease{}}
	var lost []uuid.UUID
	o := NewOwners(OwnersConfig{Store: store, Node: "a", Lease: 10 * time.Second, Margin: 2 * time.Second,
		Lost: func(id uuid.UUID) { lost = append(lost, id) }})
	clock := time.Unix(1000, 0)
	o.now = func() time.Time { return clock }

	s1, s2 := uuid.New(), uuid.New()
	e, err := o.Take(ctx, s1)
	require.NoError(t, err)
	assert.Equal(t, int64(1), e)
	e, err = o.Take(ctx, s1)
	require.NoError(t, err)
	assert.Equal(t, int64(1), e, "a lease held and trusted is not taken again")
	_, err = o.Take(ctx, s2)
	require.NoError(t, err)

	clock = clock.Add(7 * time.Second)
	_, ok := o.Epoch(s1)
	assert.True(t, ok, "before lease - margin")
	o.RenewAll(ctx)
	clock = clock.Add(7 * time.Second) // 14 s after the take, 7 after the renewal
	_, ok = o.Epoch(s1)
	assert.True(t, ok, "renewed")
	assert.Empty(t, lost)

	// The store unreachable: still trusted until the deadline, then lost.
	store.renewErr = errors.New("connection refused")
	o.RenewAll(ctx)
	assert.Empty(t, lost, "a failed renewal before the deadline keeps the lease")
	clock = clock.Add(time.Second) // 8 s after the last renewal
	_, ok = o.Epoch(s1)
	assert.False(t, ok, "not trusted past lease - margin")
	o.RenewAll(ctx)
	assert.ElementsMatch(t, []uuid.UUID{s1, s2}, lost)
	assert.Equal(t, 0, o.Held())

	// Fenced: another node took it.
	store.renewErr = nil
	lost = nil
	_, err = o.Take(ctx, s1)
	require.NoError(t, err)
	store.rows[s1] = Lease{Session: s1, Node: "b", Epoch: 9}
	o.RenewAll(ctx)
	assert.Equal(t, []uuid.UUID{s1}, lost)
	_, err = o.Take(ctx, s1)
	var oe *OwnedError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "b", oe.Node)

	// Released: the row is gone and another node may take it.
	s3 := uuid.New()
	_, err = o.Take(ctx, s3)
	require.NoError(t, err)
	require.NoError(t, o.Release(ctx, s3))
	_, ok = store.rows[s3]
	assert.False(t, ok)
}
