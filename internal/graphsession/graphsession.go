// Package graphsession connects the session graph to the session engine,
// two peers that know nothing of each other: the engine's observer events
// become the graph's mutations (the graph records its own events in the
// events log it is given). The daemon's wiring and the tests that run
// both use it; it is wiring only.
//
// It holds no state; what it returns is safe for concurrent use as far as
// the graph and the store it wraps are.
package graphsession

import (
	"context"

	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/session"
)

// Observer returns the session.Observer that feeds g the engine's
// committed mutations and ended sessions. The engine calls it with the
// session's lock held; it only converts and hands over (g queues).
func Observer(g *graph.Graph) session.Observer { return observer{g} }

type observer struct{ g *graph.Graph }

func (o observer) Mutated(ctx context.Context, ev session.MutationEvent) {
	m := graph.Mutation{
		Session: ev.Session.ID, Repo: ev.Session.Repo, AgentID: ev.Session.AgentID,
		BaseCommit: ev.Session.BaseCommit, Ended: ev.Session.State.Terminal(), Seq: ev.Mutation.Seq,
		Git: ev.Repo, BaseTree: ev.BaseTree, Tree: ev.Tree,
	}
	if len(ev.Changes) > 0 {
		m.Changes = make([]graph.FileChange, len(ev.Changes))
		for i, c := range ev.Changes {
			m.Changes[i] = graph.FileChange(c)
		}
	}
	o.g.Mutated(ctx, m)
}

func (o observer) Closed(ctx context.Context, s session.Session) { o.g.Closed(ctx, s.Repo, s.ID) }
