package db

import (
	"context"
	"fmt"
)

// unsettledChangesets are the statuses of a changeset that may still be
// accepted: its session's objects are still needed.
const unsettledChangesets = `('open', 'approved', 'changes_requested')`

// SweepObjects deletes the stored objects (repo_objects) of every
// repository no live session and no unsettled changeset needs, and
// returns how many it deleted. What an accepted changeset wrote is on
// the origin by then; a node fetches what its clone lacks from there.
//
// The sweep takes a SHARE lock of sessions: every transaction that
// stores objects also updates its live session's row, so none runs
// while the sweep decides, and one after it stores what it needs again.
func (p *Postgres) SweepObjects(ctx context.Context) (int64, error) {
	var n int64
	err := p.atomic(ctx, func(s *store) error {
		if _, err := s.r.exec(ctx, `LOCK TABLE sessions IN SHARE MODE`); err != nil {
			return err
		}
		var err error
		n, err = s.r.exec(ctx, `DELETE FROM repo_objects o
			WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.repo = o.repo AND s.state IN `+liveStates+`)
			AND NOT EXISTS (SELECT 1 FROM changesets c WHERE c.repo = o.repo AND c.status IN `+unsettledChangesets+`)`)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sweep the stored objects: %w", err)
	}
	return n, nil
}
