package graph

import (
	"context"
	"sync"

	"github.com/google/uuid"
)

// job is a repository's pending work for one session: its latest
// committed mutation, or its end.
type job struct {
	ev     Mutation
	closed bool
	// full: mutations were coalesced, so the delta is rebuilt from the
	// event's trees rather than from its changes.
	full bool
}

// queue is one repository's pending work, done in order by at most one
// worker goroutine. It holds at most one job per session: a mutation that
// arrives while the session's previous one still waits replaces it (the
// delta is then rebuilt from the trees), so the queue is bounded by the
// repository's live sessions and the engine never waits for the graph.
type queue struct {
	mu      sync.Mutex // guards every field below
	jobs    map[uuid.UUID]*job
	order   []uuid.UUID   // sessions with a job, oldest first
	running bool          // a worker is on it
	idle    chan struct{} // closed when that worker stops
}

// enqueue adds j for session id to rs's queue and starts its worker.
// Nothing is queued once the graph is closed.
func (g *Graph) enqueue(rs *repoState, id uuid.UUID, j job) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	q := &rs.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if prev, ok := q.jobs[id]; ok {
		if !j.closed {
			j.full = true
		}
		*prev = j
	} else {
		if q.jobs == nil {
			q.jobs = map[uuid.UUID]*job{}
		}
		q.jobs[id] = &j
		q.order = append(q.order, id)
	}
	if !q.running {
		q.running, q.idle = true, make(chan struct{})
		g.wg.Go(func() { g.work(rs) })
	}
}

// work does rs's jobs in order until the queue is empty.
func (g *Graph) work(rs *repoState) {
	q := &rs.q
	for {
		q.mu.Lock()
		if len(q.order) == 0 {
			q.running = false
			close(q.idle)
			q.mu.Unlock()
			return
		}
		id := q.order[0]
		q.order = q.order[1:]
		j := q.jobs[id]
		delete(q.jobs, id)
		q.mu.Unlock()
		if g.beforeJob != nil {
			g.beforeJob()
		}
		if g.ctx.Err() != nil {
			continue // closing: the graph is in memory only
		}
		if j.closed {
			g.forget(rs, id)
			continue
		}
		overlaps, err := g.apply(g.ctx, rs, j.ev, j.full)
		if err != nil {
			g.cfg.Logger.Warn("session graph: update", "session", id, "error", err)
			continue
		}
		g.report(g.ctx, rs, j.ev, overlaps)
	}
}

// Sync waits until the graph has done all the work queued before it was
// called (and whatever was queued meanwhile), or ctx ends.
func (g *Graph) Sync(ctx context.Context) error {
	for {
		g.mu.Lock()
		var waits []chan struct{}
		for _, rs := range g.repos {
			rs.q.mu.Lock()
			if rs.q.running {
				waits = append(waits, rs.q.idle)
			}
			rs.q.mu.Unlock()
		}
		g.mu.Unlock()
		if len(waits) == 0 {
			return nil
		}
		for _, w := range waits {
			select {
			case <-w:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

// Close stops the graph's workers, dropping the work still queued (the
// graph is in memory only), and waits for them. Observer calls after it
// do nothing.
func (g *Graph) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.cancel()
	g.wg.Wait()
}
