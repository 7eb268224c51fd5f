package gitstore

import (
	"container/heap"
	"context"
	"time"
)

// clockSlop is how much older than a commit one of its descendants may
// claim to be and still lead a walk to it (see reach).
const clockSlop = 24 * time.Hour

// reach knows which commits are reachable from the repository's shared
// refs (Scope), so that checking an id a scoped caller names costs a walk
// of history once per repository, not once per request.
//
// It keeps the commits found reachable from the shared refs' tips it
// last saw (seen) and the frontier of that walk (queue: commits of seen
// whose parents are not walked yet, newest committer date first). A query
// for commit c walks on only as far as it must: until it meets c, or
// every commit left in the frontier is older than c by more than
// clockSlop. Descendants normally carry later dates than their
// ancestors; a commit that only a descendant dated more than a day
// before it leads to is therefore refused, never wrongly shown. The walk
// is kept, so the cost of reaching back to a commit is paid once: asking
// again, or about anything younger, walks nothing.
//
// When the tips change, a tip that moved forward (its old commit found
// below the new one, within the same bound) extends the walk from the
// new commit and a new ref adds its tip; any other change (a ref deleted,
// or moved to where its old commit is not below it) drops the walk and
// starts again from the current tips, so a commit no shared ref reaches
// any more is never visible. A failed read drops the walk too.
//
// The caller's own refs (Scope.Own) are walked per query, from their
// commits and with the same bound, stopping at commits already known
// reachable from the shared refs: that covers the session's own
// checkpoints and the bases they were taken on, a handful of commits.
//
// Memory: one entry per commit walked, at most the repository's commits
// (the walk reaches back only as far as the oldest commit asked about),
// and one per shared ref.
//
// sem is held by one query at a time (waiting honours the context); it
// guards every other field.
type reach struct {
	sem   chan struct{}
	tips  map[RefName]OID // shared ref → the commit it peels to, as walked
	seen  map[OID]struct{}
	queue commitQueue
	// tipOf caches, for the values of the shared refs last seen, the
	// commit each peels to and its tree (ZeroOID commit: not a commit).
	// Objects are immutable, so an entry never changes.
	tipOf map[OID]tipInfo
}

type tipInfo struct{ commit, tree OID }

func newReach() *reach { return &reach{sem: make(chan struct{}, 1)} }

func (a *reach) lock(ctx context.Context) error {
	select {
	case a.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *reach) unlock() { <-a.sem }

// reachable reports whether commit c is reachable from the shared refs
// (name → value) or from the commits of own.
func (a *reach) reachable(ctx context.Context, r *Repo, shared map[RefName]OID, own []OID, c *Commit) (bool, error) {
	if err := a.lock(ctx); err != nil {
		return false, err
	}
	defer a.unlock()
	if err := a.sync(ctx, r, shared); err != nil {
		a.drop()
		return false, err
	}
	if _, ok := a.seen[c.OID]; ok {
		return true, nil
	}
	bound := c.Committer.When.Add(-clockSlop).Unix()
	found, err := a.walk(ctx, r, c.OID, bound)
	if err != nil {
		a.drop()
		return false, err
	}
	if found {
		return true, nil
	}
	return a.walkOwn(ctx, r, own, c.OID, bound)
}

// tipTree reports whether tree is the tree of a commit a shared ref
// names.
func (a *reach) tipTree(ctx context.Context, r *Repo, shared map[RefName]OID, tree OID) (bool, error) {
	if err := a.lock(ctx); err != nil {
		return false, err
	}
	defer a.unlock()
	if err := a.peelTips(ctx, r, shared); err != nil {
		return false, err
	}
	for _, id := range shared {
		if t := a.tipOf[id]; !t.commit.IsZero() && t.tree == tree {
			return true, nil
		}
	}
	return false, nil
}

// peelTips fills tipOf for the values of shared, keeping no others.
func (a *reach) peelTips(ctx context.Context, r *Repo, shared map[RefName]OID) error {
	next := make(map[OID]tipInfo, len(shared))
	for _, id := range shared {
		if t, ok := a.tipOf[id]; ok {
			next[id] = t
			continue
		}
		cid, kind, err := r.peel(ctx, id)
		if absent(err) {
			next[id] = tipInfo{}
			continue
		}
		if err != nil {
			return err
		}
		t := tipInfo{}
		if kind == KindCommit {
			c, err := r.Commit(ctx, cid)
			if err != nil {
				return err
			}
			t = tipInfo{commit: cid, tree: c.Tree}
		}
		next[id] = t
	}
	a.tipOf = next
	return nil
}

// sync brings the walk to the current shared refs (see reach).
func (a *reach) sync(ctx context.Context, r *Repo, shared map[RefName]OID) error {
	if err := a.peelTips(ctx, r, shared); err != nil {
		return err
	}
	tips := make(map[RefName]OID, len(shared))
	for name, id := range shared {
		if t := a.tipOf[id]; !t.commit.IsZero() {
			tips[name] = t.commit
		}
	}
	if a.tips != nil {
		var extend []OID
		keep := true
		for name, old := range a.tips {
			cur, ok := tips[name]
			if !ok {
				keep = false
				break
			}
			if cur == old {
				continue
			}
			ff, err := descends(ctx, r, cur, old)
			if err != nil {
				return err
			}
			if !ff {
				keep = false
				break
			}
			extend = append(extend, cur)
		}
		if keep {
			for name, cur := range tips {
				if _, ok := a.tips[name]; !ok {
					extend = append(extend, cur)
				}
			}
			for _, id := range extend {
				if err := a.add(ctx, r, id); err != nil {
					return err
				}
			}
			a.tips = tips
			return nil
		}
	}
	a.seen, a.queue = map[OID]struct{}{}, nil
	for _, id := range tips {
		if err := a.add(ctx, r, id); err != nil {
			return err
		}
	}
	a.tips = tips
	return nil
}

// drop forgets the walk; the next query starts it again.
func (a *reach) drop() {
	a.tips, a.seen, a.queue = nil, nil, nil
}

// add puts commit id into seen and the frontier, unless it is there.
func (a *reach) add(ctx context.Context, r *Repo, id OID) error {
	if _, ok := a.seen[id]; ok {
		return nil
	}
	c, err := r.Commit(ctx, id)
	if err != nil {
		return err
	}
	a.seen[id] = struct{}{}
	heap.Push(&a.queue, queued{id: id, when: c.Committer.When.Unix(), parents: c.Parents})
	return nil
}

// walk continues the shared walk until it meets target or the frontier
// is older than bound (Unix seconds).
func (a *reach) walk(ctx context.Context, r *Repo, target OID, bound int64) (bool, error) {
	for n := 0; a.queue.Len() > 0 && a.queue[0].when >= bound; n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		x := heap.Pop(&a.queue).(queued)
		for _, p := range x.parents {
			if _, ok := a.seen[p]; ok {
				continue
			}
			c, err := r.Commit(ctx, p)
			if absent(err) {
				continue // a shallow history ends here
			}
			if err != nil {
				return false, err
			}
			a.seen[p] = struct{}{}
			heap.Push(&a.queue, queued{id: p, when: c.Committer.When.Unix(), parents: c.Parents})
			if p == target {
				return true, nil
			}
		}
	}
	return false, nil
}

// walkOwn walks from the commits of own, not into commits the shared walk
// has seen, until it meets target or what is left is older than bound.
func (a *reach) walkOwn(ctx context.Context, r *Repo, own []OID, target OID, bound int64) (bool, error) {
	var q commitQueue
	mine := map[OID]bool{}
	push := func(id OID) error {
		if _, ok := a.seen[id]; ok || mine[id] {
			return nil
		}
		c, err := r.Commit(ctx, id)
		if err != nil {
			return err
		}
		mine[id] = true
		heap.Push(&q, queued{id: id, when: c.Committer.When.Unix(), parents: c.Parents})
		return nil
	}
	for _, id := range own {
		if err := push(id); err != nil && ctx.Err() != nil {
			return false, ctx.Err()
		} // else not a commit (the live view is a tree), or damage: not a way to target
	}
	if mine[target] {
		return true, nil
	}
	for n := 0; q.Len() > 0 && q[0].when >= bound; n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		x := heap.Pop(&q).(queued)
		for _, p := range x.parents {
			err := push(p)
			if absent(err) {
				continue
			}
			if err != nil {
				return false, err
			}
			if p == target && mine[p] {
				return true, nil
			}
		}
	}
	return false, nil
}

// descends reports whether commit old is reachable from commit from,
// walking newest first and giving up below old's date less clockSlop (a
// false answer only makes the caller start its walk again).
func descends(ctx context.Context, r *Repo, from, old OID) (bool, error) {
	oc, err := r.Commit(ctx, old)
	if absent(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	bound := oc.Committer.When.Add(-clockSlop).Unix()
	var q commitQueue
	seen := map[OID]bool{}
	push := func(id OID) error {
		if seen[id] {
			return nil
		}
		seen[id] = true
		c, err := r.Commit(ctx, id)
		if absent(err) {
			return nil
		}
		if err != nil {
			return err
		}
		heap.Push(&q, queued{id: id, when: c.Committer.When.Unix(), parents: c.Parents})
		return nil
	}
	if err := push(from); err != nil {
		return false, err
	}
	for n := 0; q.Len() > 0 && q[0].when >= bound; n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		x := heap.Pop(&q).(queued)
		if x.id == old {
			return true, nil
		}
		for _, p := range x.parents {
			if p == old {
				return true, nil
			}
			if err := push(p); err != nil {
				return false, err
			}
		}
	}
	return false, nil
}

// queued is a commit in a walk's frontier.
type queued struct {
	id      OID
	when    int64 // committer date, Unix seconds
	parents []OID
}

// commitQueue is a max-heap of commits by committer date.
type commitQueue []queued

func (q commitQueue) Len() int           { return len(q) }
func (q commitQueue) Less(i, j int) bool { return q[i].when > q[j].when }
func (q commitQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *commitQueue) Push(x any)        { *q = append(*q, x.(queued)) }
func (q *commitQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
