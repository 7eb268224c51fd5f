package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memNodes is a Store and RouteStore in memory over memOwners' rows: the
// nodes as given, every lease live unless listed in expired.
type memNodes struct {
	nodes   []Node
	owners  *memOwners
	expired map[uuid.UUID]bool
}

func (m *memNodes) JoinNode(context.Context, Node, uuid.UUID, time.Duration) error { return nil }
func (m *memNodes) AgreeKey(_ context.Context, _, fp, node string) (string, string, error) {
	return fp, node, nil
}
func (m *memNodes) NodeHeartbeat(context.Context, string, uuid.UUID, Stats) error   { return nil }
func (m *memNodes) LeaveNode(context.Context, string, uuid.UUID) error              { return nil }
func (m *memNodes) ListNodes(context.Context, time.Duration) ([]Node, error)        { return m.nodes, nil }
func (m *memNodes) SetNodeDraining(_ context.Context, id string, _ uuid.UUID) error { return nil }

func (m *memNodes) SessionOwner(_ context.Context, s uuid.UUID) (Owner, bool, error) {
	m.owners.mu.Lock()
	defer m.owners.mu.Unlock()
	l, ok := m.owners.rows[s]
	if !ok {
		return Owner{}, false, nil
	}
	o := Owner{Node: l.Node, Epoch: l.Epoch, Live: !m.expired[s]}
	for _, n := range m.nodes {
		if n.ID == l.Node {
			o.URL = n.AdvertiseURL
		}
	}
	return o, true, nil
}

// expOwners takes a session whose lease memNodes holds expired.
type expOwners struct {
	*memOwners
	m *memNodes
}

func (e expOwners) TakeSession(ctx context.Context, s uuid.UUID, node string, lease time.Duration) (Lease, error) {
	e.mu.Lock()
	if e.m.expired[s] {
		l := e.rows[s]
		l.Node = ""
		e.rows[s] = l
		delete(e.m.expired, s)
	}
	e.mu.Unlock()
	return e.memOwners.TakeSession(ctx, s, node, lease)
}

func newTestRouter(t *testing.T, placement string, nodes ...Node) (*Router, *memNodes) {
	t.Helper()
	mo := &memOwners{rows: map[uuid.UUID]Lease{}}
	m := &memNodes{nodes: nodes, owners: mo, expired: map[uuid.UUID]bool{}}
	self := nodes[0].Stats // this node's own stats are its own, not its row's
	c := newCluster(Config{Store: m, ID: "a", AdvertiseURL: "http://a:1", Stats: func() Stats { return self }})
	return NewRouter(c, NewOwners(OwnersConfig{Store: expOwners{mo, m}, Node: "a", Lease: time.Hour}), m, placement), m
}

// TestRouterSession: a session is served here when this node holds it or
// nobody does; by its owner while the owner's lease lives; taken over
// here once it expired; and a draining node sends what it would take to
// another node.
func TestRouterSession(t *testing.T) {
	ctx := t.Context()
	live := func(id string, running int) Node {
		return Node{ID: id, AdvertiseURL: "http://" + id + ":1", Live: true, Stats: Stats{RunningCommands: running}}
	}
	r, m := newTestRouter(t, PlaceLocal, live("a", 0), live("b", 0), live("c", 0))
	fresh := uuid.New()
	tg, err := r.Session(ctx, fresh)
	require.NoError(t, err)
	assert.True(t, tg.Local, "no owner row: here")

	theirs := uuid.New()
	m.owners.rows[theirs] = Lease{Session: theirs, Node: "b", Epoch: 4}
	tg, err = r.Session(ctx, theirs)
	require.NoError(t, err)
	assert.Equal(t, Target{Node: "b", URL: "http://b:1", Session: theirs}, tg)

	m.expired[theirs] = true
	tg, err = r.Session(ctx, theirs)
	require.NoError(t, err)
	assert.True(t, tg.Local, "expired: taken over")
	_, held := r.owners.Epoch(theirs)
	assert.True(t, held)

	require.NoError(t, r.StartDrain(ctx))
	gone := uuid.New()
	m.owners.rows[gone] = Lease{Session: gone, Node: "b", Epoch: 1}
	m.expired[gone] = true
	tg, err = r.Session(ctx, gone)
	require.NoError(t, err)
	assert.False(t, tg.Local, "a draining node takes nothing over")
	assert.Equal(t, "b", tg.Node)
}

// TestRouterPlace: local placement stays; balanced picks the live,
// undrained node with the fewest running commands, this one on a tie;
// a draining node places elsewhere, or here when it is alone.
func TestRouterPlace(t *testing.T) {
	ctx := t.Context()
	n := func(id string, running int, live, draining bool) Node {
		return Node{ID: id, AdvertiseURL: "http://" + id + ":1", Live: live, Draining: draining, Stats: Stats{RunningCommands: running}}
	}
	for _, tc := range []struct {
		name      string
		placement string
		nodes     []Node
		want      string // "" for here
	}{
		{"local", PlaceLocal, []Node{n("a", 9, true, false), n("b", 0, true, false)}, ""},
		{"balanced tie", PlaceBalanced, []Node{n("a", 1, true, false), n("b", 1, true, false)}, ""},
		{"balanced least", PlaceBalanced, []Node{n("a", 2, true, false), n("b", 1, true, false), n("c", 0, true, false)}, "c"},
		{"dead skipped", PlaceBalanced, []Node{n("a", 2, true, false), n("b", 0, false, false)}, ""},
		{"draining skipped", PlaceBalanced, []Node{n("a", 2, true, false), n("b", 0, true, true), n("c", 1, true, false)}, "c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newTestRouter(t, tc.placement, tc.nodes...)
			tg, err := r.Place(ctx)
			require.NoError(t, err)
			assert.Equal(t, tc.want == "", tg.Local)
			assert.Equal(t, tc.want, tg.Node)
		})
	}
	r, _ := newTestRouter(t, PlaceLocal, n("a", 0, true, false), n("b", 5, true, false))
	require.NoError(t, r.StartDrain(ctx))
	tg, err := r.Place(ctx)
	require.NoError(t, err)
	assert.Equal(t, "b", tg.Node, "a draining node places elsewhere even with local placement")
	alone, _ := newTestRouter(t, PlaceBalanced, n("a", 0, true, false))
	require.NoError(t, alone.StartDrain(ctx))
	tg, err = alone.Place(ctx)
	require.NoError(t, err)
	assert.True(t, tg.Local, "alone: here")
}
