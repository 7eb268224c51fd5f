package changeset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/failpoint"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/worktree"
)

// UndoOptions name the layers to undo.
type UndoOptions struct {
	// Repo, when set, is the repository every changeset must be on
	// (ErrInvalid otherwise).
	Repo string
	// Changesets are accepted changesets of one branch; they are undone
	// newest layer first, whatever their order here.
	Changesets []uuid.UUID
	// DryRun computes the result and writes nothing.
	DryRun bool
	// Actor is the revert commits' author and committer.
	Actor string
}

// UndoResult is what an undo did, or would do.
type UndoResult struct {
	Repo   string
	Branch string
	DryRun bool
	// Head is the branch head the undo was computed on; Commit the new
	// head (zero for a dry run or a conflict).
	Head   gitstore.OID
	Commit gitstore.OID
	// Reverts are the undone layers, newest first.
	Reverts []Revert
	// ComesBack lists the paths the undone layers changed that return to
	// what they were before those layers: files only they created
	// disappear, files they deleted return, files they modified get their
	// old content back.
	ComesBack []string
	// Stays lists the paths the undone layers changed that later layers
	// changed too: the later changes stay, the undone layers' own lines are
	// taken out where they do not overlap.
	Stays []string
	// Conflicts are why the undo cannot apply; then nothing is written.
	Conflicts []merge.Conflict
	// WorkTreeUpdated and WorkTreeError: as in AcceptResult.
	WorkTreeUpdated bool
	WorkTreeError   string
}

// Revert is one undone layer.
type Revert struct {
	Changeset uuid.UUID
	Layer     int64
	// LayerCommit is the commit the accept wrote; RevertCommit the commit
	// that undoes it (zero for a dry run).
	LayerCommit  gitstore.OID
	RevertCommit gitstore.OID
}

// Undo reverts accepted layers of one branch on top of its current head,
// keeping every later layer: for each layer, newest first, a revert commit
// whose tree is the three-way merge that takes the layer's change out (as
// git revert does), and one compare-and-swap of the branch to the last of
// them, so several layers are undone at once or not at all. A conflict
// returns a *merge.ConflictError and writes nothing; a dry run returns
// the conflicts in the result instead. The layers become undone and their
// changesets undone, which is final.
func (s *Service) Undo(ctx context.Context, opts UndoOptions) (UndoResult, error) {
	if len(opts.Changesets) == 0 {
		return UndoResult{}, fmt.Errorf("%w: name the changesets to undo", record.ErrInvalid)
	}
	var first Changeset
	ids := map[uuid.UUID]bool{}
	for i, id := range opts.Changesets {
		c, err := s.Get(ctx, id)
		if err != nil {
			return UndoResult{}, err
		}
		if opts.Repo != "" && c.Repo != opts.Repo {
			return UndoResult{}, fmt.Errorf("%w: changeset %s is on repository %q, not %q", record.ErrInvalid, id, c.Repo, opts.Repo)
		}
		if i == 0 {
			first = c
		} else if c.Repo != first.Repo || c.TargetBranch != first.TargetBranch {
			return UndoResult{}, fmt.Errorf("%w: changesets %s and %s are on different branches", record.ErrInvalid, first.ID, id)
		}
		ids[id] = true
	}
	r, err := s.repos.Open(ctx, first.Repo)
	if err != nil {
		return UndoResult{}, err
	}
	pol, err := s.repos.Policy(ctx, first.Repo)
	if err != nil {
		return UndoResult{}, err
	}
	var onCheckout bool
	if !opts.DryRun {
		if onCheckout, err = checkedOut(r, first.TargetBranch, pol); err != nil {
			return UndoResult{}, err
		}
	}
	release, err := s.lockBranch(ctx, first.Repo, first.TargetBranch)
	if err != nil {
		return UndoResult{}, fmt.Errorf("undo: %w", err)
	}
	defer release()
	if !opts.DryRun {
		settled, err := s.reconcileBranch(ctx, r, first.Repo, first.TargetBranch)
		if err != nil {
			return UndoResult{}, fmt.Errorf("undo: %w", err)
		}
		if u := settled.Undo; u != nil && len(u.Reverts) == len(ids) && !slices.ContainsFunc(u.Reverts, func(rv Revert) bool { return !ids[rv.Changeset] }) {
			return *u, nil // exactly this undo, interrupted after the branch moved
		}
	}
	all, err := s.store.ListLayers(ctx, first.Repo, first.TargetBranch)
	if err != nil {
		return UndoResult{}, err
	}
	var layers []Layer // newest first, as listed
	for _, l := range all {
		if ids[l.Changeset] {
			if l.State != LayerAccepted {
				return UndoResult{}, fmt.Errorf("changeset %s is %s: %w", l.Changeset, l.State, &record.ConflictError{Field: "state", Current: string(l.State)})
			}
			layers = append(layers, l)
		}
	}
	if len(layers) != len(ids) {
		for id := range ids {
			if !slices.ContainsFunc(layers, func(l Layer) bool { return l.Changeset == id }) {
				return UndoResult{}, fmt.Errorf("changeset %s is not an accepted layer of %s: %w", id, first.TargetBranch,
					&record.ConflictError{Field: "status", Current: string(first.Status)})
			}
		}
	}
	ref := gitstore.BranchRef(first.TargetBranch)
	for attempt := 1; ; attempt++ {
		head, err := r.ReadRef(ctx, ref)
		if err != nil {
			return UndoResult{}, fmt.Errorf("branch %s: %w", first.TargetBranch, err)
		}
		res, steps, err := planUndo(ctx, r, head, layers, opts)
		if err != nil {
			return UndoResult{}, err
		}
		res.Repo, res.Branch = first.Repo, first.TargetBranch
		if opts.DryRun {
			return res, nil
		}
		if len(res.Conflicts) > 0 {
			return UndoResult{}, &merge.ConflictError{Conflicts: res.Conflicts}
		}
		// Revert commits, oldest parent first; then the branch moves once.
		now := s.now()
		sig := actorSignature(opts.Actor, now)
		tip := head
		written := make([]bool, len(res.Reverts))
		for i := range res.Reverts {
			rv := &res.Reverts[i]
			if !rv.RevertCommit.IsZero() {
				continue // found on the branch: an earlier undo moved it
			}
			written[i] = true
			lc, err := r.Commit(ctx, rv.LayerCommit)
			if err != nil {
				return UndoResult{}, err
			}
			subject, _, _ := strings.Cut(lc.Message, "\n")
			rv.RevertCommit, err = r.WriteCommit(ctx, gitstore.NewCommit{
				Tree: steps[i], Parents: []gitstore.OID{tip}, Author: sig, Committer: sig,
				Message: fmt.Sprintf("Revert %q\n\n%s\n\n%s: %s\n", subject, revertLine(rv.LayerCommit), trailerUndo, rv.Changeset),
			})
			if err != nil {
				return UndoResult{}, fmt.Errorf("undo: %w", err)
			}
			tip = rv.RevertCommit
		}
		if tip != head {
			// The checked-out work tree first, as for an accept.
			var wt *worktree.Update
			if onCheckout {
				if wt, err = beginWorkTree(ctx, r, first.TargetBranch, head, tip); err != nil {
					return UndoResult{}, fmt.Errorf("undo: %w", err)
				}
			}
			// In flight from here until recorded: a crash leaves the
			// revert commits to look for on the branch.
			if err := s.beginUndo(ctx, res.Reverts, written); err != nil {
				abortWorkTree(ctx, wt)
				return UndoResult{}, fmt.Errorf("undo: %w", err)
			}
			failpoint.Hit(failpoint.IntentRecorded)
			err := r.Publish(ctx, ref, tip, head)
			if err == nil {
				res.WorkTreeUpdated, res.WorkTreeError = finishWorkTree(wt)
			} else {
				abortWorkTree(ctx, wt)
			}
			if errors.Is(err, gitstore.ErrRefConflict) || errors.Is(err, gitstore.ErrRefLocked) {
				// The branch did not move: the undo is no longer in flight.
				if err := s.clearUndo(ctx, res.Reverts, written); err != nil {
					return UndoResult{}, fmt.Errorf("undo: %w", err)
				}
				if attempt == acceptMaxAttempts {
					cur, _ := r.ReadRef(ctx, ref)
					return UndoResult{}, fmt.Errorf("undo: branch %s moved: %w", first.TargetBranch, &record.ConflictError{Field: "head", Current: oidString(cur)})
				}
				continue
			}
			if err != nil {
				// Whether the ref moved is not known here: the flight
				// stays, for the next touch of the branch to settle.
				return UndoResult{}, fmt.Errorf("undo: %w", err)
			}
			failpoint.Hit(failpoint.RefMoved)
		}
		res.Commit = tip
		if err := s.recordUndo(ctx, res); err != nil {
			return UndoResult{}, fmt.Errorf("undo: %s is at %s but the undo was not recorded (undo again to record it): %w", first.TargetBranch, tip, err)
		}
		failpoint.Hit(failpoint.StoreCommitted)
		return res, nil
	}
}

// beginUndo records the undo of each layer whose revert commit this undo
// wrote as in flight, in one transaction.
func (s *Service) beginUndo(ctx context.Context, reverts []Revert, written []bool) error {
	return s.store.InTx(ctx, func(tx Tx) error {
		for i, rv := range reverts {
			if written[i] {
				if err := tx.BeginUndo(ctx, rv.Changeset, rv.RevertCommit); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// clearUndo forgets what beginUndo recorded.
func (s *Service) clearUndo(ctx context.Context, reverts []Revert, written []bool) error {
	return s.store.InTx(ctx, func(tx Tx) error {
		for i, rv := range reverts {
			if written[i] {
				if err := tx.ClearReverting(ctx, rv.Changeset); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// planUndo computes the reverts of layers (newest first) on head in
// memory: the tree after each step, what comes back, what stays and the
// conflicts. A layer whose revert is already on the branch, by a writer
// that left no record of it in flight, is taken as done with that commit:
// a commit carrying the layer's Sessiond-Undo trailer that reverts the
// layer's own commit and whose tree is that revert made on its parent
// (findReverted), never one found by the changeset's id alone.
func planUndo(ctx context.Context, r *gitstore.Repo, head gitstore.OID, layers []Layer, opts UndoOptions) (UndoResult, []gitstore.OID, error) {
	res := UndoResult{DryRun: opts.DryRun, Head: head}
	hc, err := r.Commit(ctx, head)
	if err != nil {
		return res, nil, err
	}
	tree := hc.Tree
	steps := make([]gitstore.OID, len(layers))
	// For each path a layer touched: the version before the oldest undone
	// layer that touched it, and the one the newest left.
	before := map[string]gitstore.Entry{}
	left := map[string]gitstore.Entry{}
	for i, l := range layers {
		rv := Revert{Changeset: l.Changeset, Layer: l.ID, LayerCommit: l.Commit}
		done, err := findReverted(ctx, r, l, head)
		if err != nil {
			return res, nil, err
		}
		if done != nil {
			rv.RevertCommit = done.OID
		}
		res.Reverts = append(res.Reverts, rv)
		lc, err := r.Commit(ctx, l.Commit)
		if err != nil {
			return res, nil, fmt.Errorf("layer of changeset %s: %w", l.Changeset, err)
		}
		if len(lc.Parents) != 1 {
			return res, nil, fmt.Errorf("layer of changeset %s: %w", l.Changeset, merge.ErrMergeCommit)
		}
		pc, err := r.Commit(ctx, lc.Parents[0])
		if err != nil {
			return res, nil, err
		}
		err = merge.WalkChanges(ctx, r, pc.Tree, lc.Tree, func(c merge.FileChange) error {
			before[c.Path()] = c.From()
			if _, ok := left[c.Path()]; !ok {
				left[c.Path()] = c.To()
			}
			return nil
		})
		if err != nil {
			return res, nil, err
		}
		if done != nil {
			steps[i] = tree
			continue
		}
		if len(res.Conflicts) > 0 {
			continue // the chain is broken; the classification below still holds
		}
		merged, err := merge.Revert(ctx, r, l.Commit, tree, merge.MergeOptions{
			OursLabel: "HEAD", TheirsLabel: "undo " + l.Changeset.String()[:8], Render: true,
		})
		var ce *merge.ConflictError
		if errors.As(err, &ce) {
			res.Conflicts = ce.Conflicts
			continue
		}
		if err != nil {
			return res, nil, err
		}
		tree, steps[i] = merged.Tree, merged.Tree
	}
	conflicted := map[string]bool{}
	for _, c := range res.Conflicts {
		conflicted[c.Path] = true
	}
	paths := make([]string, 0, len(before))
	for p := range before {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if conflicted[p] {
			continue
		}
		var back bool
		if len(res.Conflicts) == 0 {
			got, err := lookupEntry(ctx, r, tree, p)
			if err != nil {
				return res, nil, err
			}
			back = sameEntry(got, before[p])
		} else {
			got, err := lookupEntry(ctx, r, hc.Tree, p)
			if err != nil {
				return res, nil, err
			}
			back = sameEntry(got, left[p])
		}
		if back {
			res.ComesBack = append(res.ComesBack, p)
		} else {
			res.Stays = append(res.Stays, p)
		}
	}
	return res, steps, nil
}

// findReverted looks down the branch from head (to the layer's commit)
// for the revert of layer l: a commit with its Sessiond-Undo trailer,
// saying it reverts l's commit, whose tree is that revert on its parent.
func findReverted(ctx context.Context, r *gitstore.Repo, l Layer, head gitstore.OID) (*gitstore.Commit, error) {
	return findCommit(ctx, r, head, l.Commit, func(c *gitstore.Commit) (bool, error) {
		if !hasTrailer(c.Message, trailerUndo, l.Changeset.String()) || !strings.Contains(c.Message, revertLine(l.Commit)) || len(c.Parents) != 1 {
			return false, nil
		}
		merged, err := merge.Revert(ctx, r, l.Commit, c.Parents[0], merge.MergeOptions{})
		var ce *merge.ConflictError
		if errors.As(err, &ce) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return merged.Tree == c.Tree, nil
	})
}

// revertLine is the line of a revert commit's message naming the commit
// it reverts, as git revert writes it.
func revertLine(layer gitstore.OID) string {
	return "This reverts commit " + layer.String() + "."
}

func lookupEntry(ctx context.Context, r *gitstore.Repo, tree gitstore.OID, p string) (gitstore.Entry, error) {
	e, err := r.Lookup(ctx, tree, p)
	if errors.Is(err, gitstore.ErrNotFound) || errors.Is(err, gitstore.ErrWrongKind) || (err == nil && e.Mode.IsDir()) {
		return gitstore.Entry{}, nil
	}
	return e, err
}

func sameEntry(a, b gitstore.Entry) bool { return a.Mode == b.Mode && a.OID == b.OID }

// recordUndo records the undone layers and changesets and their events in
// one transaction.
func (s *Service) recordUndo(ctx context.Context, res UndoResult) error {
	now := s.now()
	var cs []Changeset
	err := s.store.InTx(ctx, func(tx Tx) error {
		cs = cs[:0]
		for _, rv := range res.Reverts {
			if err := tx.UndoLayer(ctx, rv.Changeset, rv.RevertCommit, now); err != nil {
				return err
			}
			if err := tx.SetChangesetStatus(ctx, rv.Changeset, StatusAccepted, StatusUndone, gitstore.ZeroOID, now); err != nil {
				return err
			}
			c, err := tx.GetChangeset(ctx, rv.Changeset)
			if err != nil {
				return err
			}
			cs = append(cs, c)
			if _, err := tx.AppendEvent(ctx, event(EventUndone, c, map[string]any{
				"layer": rv.Layer, "revert_commit": rv.RevertCommit.String(), "head": res.Commit.String(),
			}, now)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.events.Notify()
	return nil
}
