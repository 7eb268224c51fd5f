package changeset

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/record"
)

// Settled is what settling one branch found in flight and did with it.
type Settled struct {
	Repo   string
	Branch string
	// Accepts are the accepts in flight that had moved the branch, now
	// recorded (each Recovered).
	Accepts []AcceptResult
	// Undo is the undo in flight that had moved the branch, now recorded;
	// nil for none.
	Undo *UndoResult
	// Dropped are the changesets whose accept or undo in flight had not
	// moved the branch: they are as they were before it.
	Dropped []uuid.UUID
}

// Reconcile settles every accept and undo that a crash left in flight
// (recorded as about to move a branch, never recorded as done), so that
// each is all or nothing: when the branch carries the commit recorded for
// it, the accept (the changeset accepted, its layer, its session, the
// events) or the undo is recorded now; when it does not, the flight is
// forgotten and the changeset is as it was before. The daemon calls it at
// start, before it serves; Accept, Undo and Submit settle their branch the
// same way first, so a branch that cannot be settled here (its repository
// unavailable) is settled at its next touch. Errors of single branches are
// joined; the others are settled regardless.
//
// It relies on the flight's writer being gone: in this process the lock of
// the branch ensures that, and across the processes sharing the store (the
// nodes of a cluster) the shared lock of Config.BranchLocks does.
func (s *Service) Reconcile(ctx context.Context) ([]Settled, error) {
	branches, err := s.store.InFlight(ctx)
	if err != nil {
		return nil, fmt.Errorf("reconcile: %w", err)
	}
	var (
		out  []Settled
		errs []error
	)
	for _, b := range branches {
		st, err := s.reconcile(ctx, b)
		if err != nil {
			errs = append(errs, fmt.Errorf("reconcile %s %s: %w", b.Repo, b.Branch, err))
			continue
		}
		out = append(out, st)
	}
	return out, errors.Join(errs...)
}

// reconcile settles one branch under its lock.
func (s *Service) reconcile(ctx context.Context, b BranchName) (Settled, error) {
	r, err := s.repos.Open(ctx, b.Repo)
	if err != nil {
		return Settled{}, err
	}
	release, err := s.lockBranch(ctx, b.Repo, b.Branch)
	if err != nil {
		return Settled{}, err
	}
	defer release()
	return s.reconcileBranch(ctx, r, b.Repo, b.Branch)
}

// settleSession settles the branch of the session's changeset with an
// accept in flight, before the session is submitted again: a new revision
// must never start over an accept that already put the old one on the
// branch (the session is then accepted, and the submit refused).
func (s *Service) settleSession(ctx context.Context, session uuid.UUID) error {
	cs, err := s.store.ListChangesets(ctx, Filter{Session: session, Accepting: true})
	if err != nil {
		return err
	}
	for _, c := range cs {
		if _, err := s.reconcile(ctx, BranchName{Repo: c.Repo, Branch: c.TargetBranch}); err != nil {
			return fmt.Errorf("changeset %s: %w", c.ID, err)
		}
	}
	return nil
}

// reconcileBranch settles what is in flight on repo's branch. The caller
// holds the branch's lock.
func (s *Service) reconcileBranch(ctx context.Context, r *gitstore.Repo, repo, branch string) (Settled, error) {
	st := Settled{Repo: repo, Branch: branch}
	// A repository with an origin: the branch as the origin has it, so
	// that what is settled and what is merged onto is the shared head.
	if err := r.Fetch(ctx); err != nil {
		return st, fmt.Errorf("%w: branch %s: %w", record.ErrUnavailable, branch, err)
	}
	inFlight, err := s.store.InFlight(ctx)
	if err != nil {
		return st, err
	}
	if !slices.Contains(inFlight, BranchName{Repo: repo, Branch: branch}) {
		return st, nil
	}
	head, err := r.ReadRef(ctx, gitstore.BranchRef(branch))
	if err != nil && !errors.Is(err, gitstore.ErrNotFound) {
		return st, err
	}
	accepting, err := s.store.ListChangesets(ctx, Filter{Repo: repo, Accepting: true})
	if err != nil {
		return st, err
	}
	for _, c := range accepting {
		if c.TargetBranch != branch {
			continue
		}
		a := *c.Accepting
		if _, on, err := onBranch(ctx, r, head, a.Commit); err != nil {
			return st, fmt.Errorf("changeset %s: %w", c.ID, err)
		} else if !on {
			if err := s.store.ClearAccepting(ctx, c.ID); err != nil {
				return st, err
			}
			st.Dropped = append(st.Dropped, c.ID)
			continue
		}
		res := AcceptResult{Branch: branch, Commit: a.Commit, Rebased: a.Rebased, StaleReads: a.StaleReads,
			Selection: a.Selection, Recovered: true}
		if err := s.recordAccept(ctx, c, &res); err != nil {
			return st, fmt.Errorf("changeset %s: the commit %s is on %s but was not recorded: %w", c.ID, a.Commit, branch, err)
		}
		st.Accepts = append(st.Accepts, res)
	}

	layers, err := s.store.ListLayers(ctx, repo, branch)
	if err != nil {
		return st, err
	}
	undo := UndoResult{Repo: repo, Branch: branch}
	var tipDepth, baseDepth int
	for _, l := range layers { // newest first, as the reverts of an undo
		if l.Reverting.IsZero() {
			continue
		}
		depth, on, err := onBranch(ctx, r, head, l.Reverting)
		if err != nil {
			return st, fmt.Errorf("layer of changeset %s: %w", l.Changeset, err)
		}
		if !on {
			if err := s.store.ClearReverting(ctx, l.Changeset); err != nil {
				return st, err
			}
			st.Dropped = append(st.Dropped, l.Changeset)
			continue
		}
		// The undo's new head is its revert nearest the branch's head; it
		// was computed on the parent of the one farthest from it.
		if len(undo.Reverts) == 0 || depth < tipDepth {
			undo.Commit, tipDepth = l.Reverting, depth
		}
		if len(undo.Reverts) == 0 || depth > baseDepth {
			rc, err := r.Commit(ctx, l.Reverting)
			if err != nil {
				return st, err
			}
			undo.Head, baseDepth = rc.Parents[0], depth
		}
		undo.Reverts = append(undo.Reverts, Revert{Changeset: l.Changeset, Layer: l.ID, LayerCommit: l.Commit, RevertCommit: l.Reverting})
	}
	if len(undo.Reverts) > 0 {
		if err := s.recordUndo(ctx, undo); err != nil {
			return st, fmt.Errorf("%s is at %s but the undo was not recorded: %w", branch, undo.Commit, err)
		}
		st.Undo = &undo
	}
	return st, nil
}

// onBranchLimit bounds the walk of onBranch: a flight is settled at the
// next start or touch of its branch, long before a branch grows this far
// past it.
const onBranchLimit = 100000

// onBranch reports whether commit is on the first-parent history of head,
// and how many commits below head. sessiond puts its commits on a branch
// as the child of the head, so the walk stops at commit's parent: a branch
// that reaches it without passing commit does not carry commit.
func onBranch(ctx context.Context, r *gitstore.Repo, head, commit gitstore.OID) (int, bool, error) {
	c, err := r.Commit(ctx, commit)
	if err != nil {
		return 0, false, fmt.Errorf("the commit in flight: %w", err)
	}
	var stop gitstore.OID
	if len(c.Parents) > 0 {
		stop = c.Parents[0]
	}
	id := head
	for depth := 0; depth < onBranchLimit; depth++ {
		if id == commit {
			return depth, true, nil
		}
		if id.IsZero() || id == stop {
			return 0, false, nil
		}
		if err := ctx.Err(); err != nil {
			return 0, false, err
		}
		hc, err := r.Commit(ctx, id)
		if err != nil {
			return 0, false, err
		}
		if len(hc.Parents) == 0 {
			return 0, false, nil
		}
		id = hc.Parents[0]
	}
	return 0, false, fmt.Errorf("neither commit %s nor its parent within %d commits of the branch head %s", commit, onBranchLimit, head)
}
