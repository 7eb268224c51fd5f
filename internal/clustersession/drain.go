package clustersession

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/cluster"
	"github.com/sessiond/sessiond/session"
)

// Drainer hands a node's sessions to the other nodes before a shutdown
// (sessiond node drain): the node stops taking sessions (placement skips
// it, requests for sessions it does not hold go elsewhere), waits for its
// running commands, then unloads each session it holds and releases its
// lease at once, so the next request for it, at any node, is served by a
// node that takes it over without waiting for the lease to expire.
type Drainer struct {
	Router  *cluster.Router
	Manager *session.Manager
	Exec    *session.Executor
	// Poll is how often the drain looks again at what is busy (100 ms
	// when 0).
	Poll time.Duration
}

// Drain drains the node, waiting up to timeout for running commands and
// busy sessions; a session still busy then is kept (the node releases it
// when it stops).
func (d *Drainer) Drain(ctx context.Context, timeout time.Duration) (cluster.DrainReport, error) {
	poll := d.Poll
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	start := time.Now()
	if err := d.Router.StartDrain(ctx); err != nil {
		return cluster.DrainReport{}, err
	}
	deadline := start.Add(timeout)
	for d.Exec != nil && d.Exec.Running() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		sleep(ctx, poll)
	}
	rep := cluster.DrainReport{HandedOff: []uuid.UUID{}, Kept: []uuid.UUID{}}
	pending := d.Router.Held()
	for len(pending) > 0 {
		var busy []uuid.UUID
		for _, id := range pending {
			fctx, cancel := context.WithTimeout(ctx, poll)
			ok := d.Manager.Forget(fctx, id)
			cancel()
			if !ok {
				busy = append(busy, id)
				continue
			}
			if err := d.Router.Release(ctx, id); err != nil {
				return rep, err
			}
			rep.HandedOff = append(rep.HandedOff, id)
		}
		pending = busy
		if len(pending) == 0 || !time.Now().Before(deadline) || ctx.Err() != nil {
			break
		}
		sleep(ctx, poll)
	}
	rep.Kept = append(rep.Kept, pending...)
	rep.Waited = time.Since(start)
	return rep, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
