package changeset

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/failpoint"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/worktree"
)

// AcceptOptions qualify an accept.
type AcceptOptions struct {
	// ExpectedHead, when set, is the commit the branch must be at (zero:
	// the branch must not exist). A branch elsewhere fails with a
	// *ConflictError (Field "head") instead of a rebase.
	ExpectedHead *gitstore.OID
	// ExpectedHeadRev, when not "", is ExpectedHead as a revision (any
	// syntax `git rev-parse` takes; 40 zeros: the branch must not exist).
	ExpectedHeadRev string
	// Message replaces the changeset's intent as the commit message; the
	// trailers are added either way.
	Message string
	// Actor is the committer's name; the author is the session's agent.
	Actor string
	// RequireFreshReads refuses the accept when files the session read
	// changed on the branch (a *StaleReadsError), as the repository
	// policy RefuseStaleReads does.
	RequireFreshReads bool
	// Select, when set, accepts only part of the changeset: whole files
	// and single hunks of its diff (merge.Select). What is left out
	// stays in the session, which is rebased onto the new head and stays
	// open. A bad selection is record.ErrInvalid (wrapping a
	// *merge.SelectionError) and writes nothing.
	Select *merge.Selection
	// Revision, when not 0, is the revision the caller reviewed (and made
	// the selection on): an accept of a changeset revised since fails with
	// a *ConflictError (Field "revision") and writes nothing, so hunk
	// indexes never land on another revision's hunks.
	Revision int
	// DryRun computes the commit's tree (merged onto a moved branch) and
	// returns its diff in Preview without writing a commit, moving the
	// branch or recording anything.
	DryRun bool
}

// AcceptResult is an accepted changeset.
type AcceptResult struct {
	Changeset Changeset
	Layer     Layer
	// Commit is the new commit on Branch.
	Commit gitstore.OID
	Branch string
	// Rebased says the branch had moved since the changeset's base and the
	// changes were merged onto its head.
	Rebased bool
	// StaleReads are files the session read that changed on the branch
	// since its base (reported; refused only when asked).
	StaleReads []StaleRead
	// Recovered says the commit was already on the branch (an earlier
	// accept of this revision moved the branch and failed before
	// recording it) and was only recorded now.
	Recovered bool
	// Selection is what a partial accept took and left out; nil for a
	// whole accept.
	Selection *AcceptedSelection
	// SessionRebased says the session was moved onto Commit after a
	// partial accept, so its remaining diff is what was left out;
	// SessionConflicts are the conflicts that kept it on its old base
	// (then rebase it by hand).
	SessionRebased   bool
	SessionConflicts []merge.Conflict
	// SessionError says why the session was not rebased otherwise.
	SessionError string
	// DryRun results: Head is the branch head the commit would go on
	// and Preview the commit's diff against it.
	DryRun  bool
	Head    gitstore.OID
	Preview *merge.Patch
	// WorkTreeUpdated says the branch is the one the repository's work
	// tree has checked out and its index and work tree moved with it;
	// WorkTreeError why they did not, after the branch moved.
	WorkTreeUpdated bool
	WorkTreeError   string
}

// acceptMaxAttempts bounds the re-merges after losing the branch's
// compare-and-swap to another writer.
const acceptMaxAttempts = 16

// Accept turns a changeset into one commit on its target branch
// (commit-on-accept): the commit's tree is the changeset's head tree when
// the branch is still at the changeset's base, and the changes merged onto
// the branch head otherwise (a conflict returns a
// *merge.ConflictError and writes nothing). Its message is the intent
// with Sessiond-Session, Sessiond-Changeset, Sessiond-Agent and
// Sessiond-Revision trailers. The branch moves only by compare-and-swap,
// after the store recorded the accept in flight (Changeset.Accepting);
// the changeset becomes accepted, a layer of the branch, and its session
// accepted. Whatever an interrupted accept or undo left on the branch is
// settled first (see Reconcile); when that records an accept of this very
// changeset, that is the answer (Recovered).
//
// A changeset may be accepted when its status is approved, or open with
// no approvals required. On the branch a non-bare repository has checked
// out, the accept also moves its index and work tree, which must be
// clean (a *worktree.DirtyError names what is not, and nothing is
// written), unless the policy refuses that branch (record.ErrForbidden).
func (s *Service) Accept(ctx context.Context, id uuid.UUID, opts AcceptOptions) (AcceptResult, error) {
	c, err := s.Get(ctx, id)
	if err != nil {
		return AcceptResult{}, err
	}
	pol, err := s.repos.Policy(ctx, c.Repo)
	if err != nil {
		return AcceptResult{}, err
	}
	if err := acceptable(c, pol); err != nil {
		return AcceptResult{}, err
	}
	if err := s.sessions.CheckResolved(ctx, c.Session, "accept changeset "+id.String()); err != nil {
		return AcceptResult{}, err
	}
	r, err := s.repos.Open(ctx, c.Repo)
	if err != nil {
		return AcceptResult{}, err
	}
	// A changeset stored before the target rule held may name no branch.
	if _, err := targetBranch(ctx, r, string(gitstore.BranchRef(c.TargetBranch))); err != nil {
		return AcceptResult{}, fmt.Errorf("accept changeset %s: %w", id, err)
	}
	onCheckout, err := checkedOut(r, c.TargetBranch, pol)
	if err != nil {
		return AcceptResult{}, err
	}
	if opts.ExpectedHeadRev != "" {
		h, err := s.resolveExpectedHead(ctx, r, opts.ExpectedHeadRev)
		if err != nil {
			return AcceptResult{}, err
		}
		opts.ExpectedHead = &h
	}
	release, err := s.lockBranch(ctx, c.Repo, c.TargetBranch)
	if err != nil {
		return AcceptResult{}, fmt.Errorf("accept %s: %w", id, err)
	}
	defer release()
	if !opts.DryRun {
		settled, err := s.reconcileBranch(ctx, r, c.Repo, c.TargetBranch)
		if err != nil {
			return AcceptResult{}, fmt.Errorf("accept %s: %w", id, err)
		}
		for _, a := range settled.Accepts {
			if a.Changeset.ID == id && (opts.Revision == 0 || opts.Revision == a.Changeset.Revision) {
				return a, nil
			}
		}
	}
	// Again under the lock: another accept of the same changeset may have
	// finished while this one waited.
	if c, err = s.Get(ctx, id); err != nil {
		return AcceptResult{}, err
	}
	if err := acceptable(c, pol); err != nil {
		return AcceptResult{}, err
	}
	if opts.Revision != 0 && opts.Revision != c.Revision {
		return AcceptResult{}, fmt.Errorf("changeset %s is at revision %d, not %d: %w", id, c.Revision, opts.Revision,
			&record.ConflictError{Field: "revision", Current: strconv.Itoa(c.Revision)})
	}
	if err := s.requireChecks(ctx, c, pol.RequiredChecks); err != nil {
		return AcceptResult{}, err
	}
	sess, err := s.sessions.SessionInfo(ctx, c.Session)
	if err != nil {
		return AcceptResult{}, err
	}
	if !opts.DryRun {
		if err := s.sessions.Claim(ctx, c.Session); err != nil {
			return AcceptResult{}, fmt.Errorf("changeset %s: %w", id, err)
		}
	}
	if err := s.fill(ctx, c, r); err != nil && !errors.Is(err, gitstore.ErrMissingObject) {
		return AcceptResult{}, fmt.Errorf("changeset %s: %w", id, err)
	}
	headCommit, err := r.Commit(ctx, c.HeadCommit)
	if errors.Is(err, gitstore.ErrMissingObject) && r.Origin() != "" {
		// Not in this node's clone, nor anywhere this node can bring it
		// from.
		return AcceptResult{}, fmt.Errorf("%w: changeset %s: its commit %s is not in this node's clone of %s: accept it on the node that holds session %s",
			record.ErrUnavailable, id, c.HeadCommit, c.Repo, c.Session)
	}
	if err != nil {
		return AcceptResult{}, fmt.Errorf("changeset %s head: %w", id, err)
	}
	if err := s.checkWrites(ctx, r, c); err != nil {
		return AcceptResult{}, err
	}
	ref := gitstore.BranchRef(c.TargetBranch)
	res := AcceptResult{Branch: c.TargetBranch, DryRun: opts.DryRun}
	// The tree the changeset adds to its base: its head, or the base with
	// the selected changes only.
	changesTree := headCommit.Tree
	if opts.Select != nil {
		if changesTree, res.Selection, err = selectChanges(ctx, r, c, headCommit.Tree, *opts.Select); err != nil {
			return AcceptResult{}, err
		}
	}
	for attempt := 1; ; attempt++ {
		head, err := r.ReadRef(ctx, ref)
		if err != nil && !errors.Is(err, gitstore.ErrNotFound) {
			return AcceptResult{}, err
		}
		if head != c.BaseCommit && !head.IsZero() && !opts.DryRun {
			found, err := findAccepted(ctx, r, c, changesTree, head)
			if err != nil {
				return AcceptResult{}, err
			}
			if found != nil {
				res.Commit, res.Recovered = found.OID, true
				res.Rebased = len(found.Parents) == 0 || found.Parents[0] != c.BaseCommit
				break
			}
		}
		if opts.ExpectedHead != nil && *opts.ExpectedHead != head {
			return AcceptResult{}, fmt.Errorf("branch %s moved: %w", c.TargetBranch, &record.ConflictError{Field: "head", Current: oidString(head)})
		}
		tree := changesTree
		res.Rebased, res.StaleReads = false, nil
		if head != c.BaseCommit && !head.IsZero() {
			merged, err := merge.Rebase(ctx, r, c.BaseCommit, changesTree, head, merge.MergeOptions{
				OursLabel: c.TargetBranch, TheirsLabel: "changeset " + id.String()[:8], Render: true,
			})
			if err != nil {
				return AcceptResult{}, err
			}
			tree, res.Rebased = merged.Tree, true
			if res.StaleReads, err = staleReads(ctx, r, c.ReadSet, head); err != nil {
				return AcceptResult{}, err
			}
			if len(res.StaleReads) > 0 && (opts.RequireFreshReads || pol.RefuseStaleReads) {
				return AcceptResult{}, &StaleReadsError{Branch: c.TargetBranch, Reads: res.StaleReads}
			}
		}
		parent := head
		if parent.IsZero() {
			parent = c.BaseCommit
		}
		if opts.DryRun {
			pc, err := r.Commit(ctx, parent)
			if err != nil {
				return AcceptResult{}, err
			}
			res.Head, res.Changeset = parent, c
			res.Preview, err = merge.Diff(ctx, r, pc.Tree, tree, merge.DiffOptions{}, merge.PatchOptions{})
			if err != nil {
				return AcceptResult{}, fmt.Errorf("accept %s: preview: %w", id, err)
			}
			return res, nil
		}
		now := s.now()
		commit, err := r.WriteCommit(ctx, gitstore.NewCommit{
			Tree: tree, Parents: []gitstore.OID{parent},
			Author:    sess.Author(now),
			Committer: actorSignature(opts.Actor, now),
			Message:   acceptMessage(c, sess, opts.Message),
		})
		if err != nil {
			return AcceptResult{}, fmt.Errorf("accept %s: %w", id, err)
		}
		// The checked-out work tree is written first and its index
		// waits in index.lock, as git's push-to-checkout updates the
		// work tree before the ref.
		var wt *worktree.Update
		if onCheckout {
			if wt, err = beginWorkTree(ctx, r, c.TargetBranch, head, commit); err != nil {
				return AcceptResult{}, fmt.Errorf("accept %s: %w", id, err)
			}
		}
		// In flight from here until recorded: a crash leaves the commit
		// to look for on the branch, for this revision.
		err = s.store.BeginAccept(ctx, id, Accepting{Commit: commit, Revision: c.Revision,
			Rebased: res.Rebased, Selection: res.Selection, StaleReads: res.StaleReads})
		if err != nil {
			abortWorkTree(ctx, wt)
			return AcceptResult{}, fmt.Errorf("accept %s: %w", id, err)
		}
		failpoint.Hit(failpoint.IntentRecorded)
		err = r.Publish(ctx, ref, commit, head)
		if err == nil {
			failpoint.Hit(failpoint.RefMoved)
			res.Commit = commit
			res.WorkTreeUpdated, res.WorkTreeError = finishWorkTree(wt)
			break
		}
		abortWorkTree(ctx, wt)
		if !errors.Is(err, gitstore.ErrRefConflict) && !errors.Is(err, gitstore.ErrRefLocked) {
			// Whether the ref moved is not known here: the flight stays,
			// for the next touch of the branch (or a restart) to settle.
			return AcceptResult{}, fmt.Errorf("accept %s: %w", id, err)
		}
		// The branch did not move: the accept is no longer in flight.
		if err := s.store.ClearAccepting(ctx, id); err != nil {
			return AcceptResult{}, fmt.Errorf("accept %s: %w", id, err)
		}
		if opts.ExpectedHead != nil || attempt == acceptMaxAttempts {
			cur, _ := r.ReadRef(ctx, ref)
			return AcceptResult{}, fmt.Errorf("accept %s: branch %s moved: %w", id, c.TargetBranch, &record.ConflictError{Field: "head", Current: oidString(cur)})
		}
		if err := sleepCtx(ctx, time.Duration(attempt)*time.Duration(1+rand.IntN(4))*time.Millisecond); err != nil {
			return AcceptResult{}, err
		}
	}
	if err := s.recordAccept(ctx, c, &res); err != nil {
		return AcceptResult{}, fmt.Errorf("accept %s: the commit %s is on %s but was not recorded (accept again to record it): %w",
			id, res.Commit, c.TargetBranch, err)
	}
	return res, nil
}

// recordAccept records an accepted changeset: its status, its layer, its
// session accepted and the events, in one transaction.
func (s *Service) recordAccept(ctx context.Context, c Changeset, res *AcceptResult) error {
	// The session's lock, so its in-memory state follows the store.
	h, err := s.sessions.Hold(ctx, c.Session)
	if err != nil {
		return err
	}
	defer h.Release()
	sess := h.Info()
	now := s.now()
	from := sess.State
	partial := res.Selection != nil
	// A whole accept closes the session; a partial one leaves it open with
	// what was left out (submitted goes back to active, to revise).
	toState := record.StateAccepted
	if partial {
		toState = record.StateActive
	}
	toAccepted := (from == record.StateActive || from == record.StateSubmitted) && from != toState
	err = s.store.InTx(ctx, func(tx Tx) error {
		// The commit is on the branch: whatever review happened since the
		// check, the changeset is accepted now.
		cur, err := tx.GetChangeset(ctx, c.ID)
		if err != nil {
			return err
		}
		if err := tx.SetChangesetStatus(ctx, c.ID, cur.Status, StatusAccepted, res.Commit, now); err != nil {
			return err
		}
		if err := tx.ClearAccepting(ctx, c.ID); err != nil {
			return err
		}
		l, err := tx.AddLayer(ctx, Layer{Repo: c.Repo, Branch: c.TargetBranch, Changeset: c.ID, Commit: res.Commit, State: LayerAccepted, AcceptedAt: now})
		if err != nil {
			return err
		}
		res.Layer = l
		if partial {
			if err := tx.SetChangesetSelection(ctx, c.ID, *res.Selection); err != nil {
				return err
			}
		}
		if toAccepted {
			if err := h.MoveState(ctx, tx, toState, now); err != nil {
				return err
			}
		}
		acc := c
		acc.Status = StatusAccepted
		stale := make([]string, len(res.StaleReads))
		for i, sr := range res.StaleReads {
			stale[i] = sr.Path
		}
		extra := map[string]any{"commit": res.Commit.String(), "rebased": res.Rebased, "layer": l.ID, "stale_reads": stale}
		if partial {
			extra["selection"] = res.Selection
		}
		_, err = tx.AppendEvent(ctx, event(EventAccepted, acc, extra, now))
		return err
	})
	if err != nil {
		return err
	}
	failpoint.Hit(failpoint.StoreCommitted)
	res.Changeset = c
	res.Changeset.Status, res.Changeset.AcceptedCommit, res.Changeset.UpdatedAt = StatusAccepted, res.Commit, now
	res.Changeset.Selection, res.Changeset.Accepting = res.Selection, nil
	h.Committed(ctx)
	if partial {
		rebaseAfterPartial(ctx, h, sess, c, res)
	}
	s.events.Notify()
	return nil
}

// selectChanges resolves a partial accept's selection against the
// changeset's diff and writes the tree of the base with only the selected
// changes. A selection of everything is a whole accept (nil selection).
func selectChanges(ctx context.Context, r *gitstore.Repo, c Changeset, headTree gitstore.OID, sel merge.Selection) (gitstore.OID, *AcceptedSelection, error) {
	base, err := r.Commit(ctx, c.BaseCommit)
	if err != nil {
		return gitstore.OID{}, nil, fmt.Errorf("changeset %s base: %w", c.ID, err)
	}
	patch, err := merge.Diff(ctx, r, base.Tree, headTree, merge.DiffOptions{}, merge.PatchOptions{})
	if err != nil {
		return gitstore.OID{}, nil, fmt.Errorf("changeset %s: diff: %w", c.ID, err)
	}
	s, err := merge.Select(patch, sel)
	if err != nil {
		return gitstore.OID{}, nil, fmt.Errorf("%w: changeset %s revision %d: %w", record.ErrInvalid, c.ID, c.Revision, err)
	}
	if s.All {
		return headTree, nil, nil
	}
	tree, err := merge.BuildSelected(ctx, r, base.Tree, s)
	if err != nil {
		return gitstore.OID{}, nil, fmt.Errorf("accept %s: %w", c.ID, err)
	}
	return tree, &AcceptedSelection{Taken: s.Taken, LeftOut: s.LeftOut}, nil
}

// rebaseAfterPartial moves the session of a partially accepted changeset
// onto the accepted commit, so that its diff is what was left out. When
// the branch was still at the session's base the view stays exactly as it
// is (the commit holds a part of it); when the branch had moved, the
// session's changes are merged onto the commit, and a conflict leaves the
// session where it was, reported in res. h is held.
func rebaseAfterPartial(ctx context.Context, h record.Held, sess record.SessionInfo, c Changeset, res *AcceptResult) {
	err := h.Rebase(ctx, res.Commit, sess.BaseCommit != c.BaseCommit || res.Rebased, "accept "+c.ID.String()[:8], c.TargetBranch)
	var ce *merge.ConflictError
	switch {
	case errors.As(err, &ce):
		res.SessionConflicts = ce.Conflicts
	case err != nil:
		res.SessionError = err.Error()
	default:
		res.SessionRebased = true
	}
}

// acceptable checks that a changeset's status allows an accept.
func acceptable(c Changeset, pol repos.Policy) error {
	conflict := func(format string, args ...any) error {
		return &statusError{msg: fmt.Sprintf(format, args...), conflict: &record.ConflictError{Field: "status", Current: string(c.Status)}}
	}
	switch c.Status {
	case StatusApproved:
		return nil
	case StatusOpen:
		if pol.RequiredApprovals == 0 {
			return nil
		}
		if pol.RequiredApprovals == 1 {
			return conflict("changeset %s needs 1 approval", c.ID)
		}
		return conflict("changeset %s needs %d approvals", c.ID, pol.RequiredApprovals)
	case StatusAccepted:
		return conflict("changeset %s is already accepted, as %s on %s", c.ID, c.AcceptedCommit, c.TargetBranch)
	}
	return conflict("changeset %s is %s", c.ID, strings.ReplaceAll(string(c.Status), "_", " "))
}

// checkedOut reports whether branch is the one a non-bare repository has
// checked out, whose index and work tree an accept or undo then moves
// with it (git's receive.denyCurrentBranch=updateInstead); the policy's
// RefuseCheckedOut refuses such a branch instead (=refuse).
func checkedOut(r *gitstore.Repo, branch string, pol repos.Policy) (bool, error) {
	if r.Bare() {
		return false, nil
	}
	cur, err := r.HeadBranch()
	if err != nil {
		return false, err
	}
	if cur != branch {
		return false, nil
	}
	if pol.RefuseCheckedOut {
		return false, fmt.Errorf("%w: branch %q is checked out in the repository's work tree, and the repository's policy refuses accepts and undos onto it (allow_checked_out: false)", record.ErrForbidden, branch)
	}
	return true, nil
}

// beginWorkTree starts moving the checked-out work tree of r from commit
// head to commit to: its index and work tree must be clean against head
// (a *worktree.DirtyError names what is not, for the API's 409), git's
// index.lock free and the paths writable as git would write them (else
// record.ErrConflict). What it returns holds index.lock: Commit it once
// the branch moved, Abort it otherwise.
func beginWorkTree(ctx context.Context, r *gitstore.Repo, branch string, head, to gitstore.OID) (*worktree.Update, error) {
	u, err := worktree.Begin(ctx, r, head, to)
	if err == nil {
		if err = u.Apply(ctx); err != nil {
			_ = u.Abort(ctx)
		}
	}
	var dirty *worktree.DirtyError
	switch {
	case err == nil:
		return u, nil
	case errors.As(err, &dirty):
		return nil, fmt.Errorf("branch %s is checked out in the repository's work tree: %w", branch, err)
	case errors.Is(err, worktree.ErrLocked), errors.Is(err, worktree.ErrUnsupported):
		return nil, fmt.Errorf("%w: branch %s is checked out in the repository's work tree: %w", record.ErrConflict, branch, err)
	}
	return nil, fmt.Errorf("branch %s is checked out in the repository's work tree: %w", branch, err)
}

// finishWorkTree commits a work tree's update after its branch moved,
// and says how it went for the result: the branch has moved either way.
func finishWorkTree(u *worktree.Update) (updated bool, problem string) {
	if u == nil {
		return false, ""
	}
	if err := u.Commit(); err != nil {
		return false, "the work tree's files were written but its index was not: " + err.Error() + " (git reset --hard brings it to the branch)"
	}
	return true, ""
}

// abortWorkTree gives a work tree back what an update wrote, when its
// branch did not move.
func abortWorkTree(ctx context.Context, u *worktree.Update) {
	if u != nil {
		_ = u.Abort(ctx)
	}
}

// acceptMessage is the accept commit's message: the message or intent,
// and the trailers.
func acceptMessage(c Changeset, s record.SessionInfo, message string) string {
	msg := strings.TrimSpace(message)
	if msg == "" {
		msg = strings.TrimSpace(c.Intent)
	}
	if msg == "" {
		msg = "Accept changeset " + c.ID.String()
	}
	var b strings.Builder
	b.WriteString(msg)
	b.WriteString("\n\n")
	b.WriteString(trailerSession + ": " + c.Session.String() + "\n")
	b.WriteString(trailerChangeset + ": " + c.ID.String() + "\n")
	agent := sanitizeIdent(strings.ReplaceAll(s.Agent(), "\n", " "))
	if agent == "" {
		agent = record.UnnamedAgent
	}
	b.WriteString(trailerAgent + ": " + agent + "\n")
	b.WriteString(trailerRevision + ": " + strconv.Itoa(c.Revision) + "\n")
	return b.String()
}

// findAccepted looks down the branch from head (to the changeset's base)
// for this accept already done by a writer that left no record of it in
// flight: a commit carrying this changeset's and this revision's trailers
// whose tree is the one this accept makes on that commit's parent. A
// commit that names the changeset but another revision, or another tree
// (another selection), is not this accept and is not taken for it.
func findAccepted(ctx context.Context, r *gitstore.Repo, c Changeset, changesTree, head gitstore.OID) (*gitstore.Commit, error) {
	return findCommit(ctx, r, head, c.BaseCommit, func(cm *gitstore.Commit) (bool, error) {
		if !hasTrailer(cm.Message, trailerChangeset, c.ID.String()) || !hasTrailer(cm.Message, trailerRevision, strconv.Itoa(c.Revision)) || len(cm.Parents) != 1 {
			return false, nil
		}
		want := changesTree
		if p := cm.Parents[0]; p != c.BaseCommit {
			merged, err := merge.Rebase(ctx, r, c.BaseCommit, changesTree, p, merge.MergeOptions{})
			var ce *merge.ConflictError
			if errors.As(err, &ce) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			want = merged.Tree
		}
		return cm.Tree == want, nil
	})
}

// staleReads returns the files of the read set whose blob on head differs
// from the one read, by path.
func staleReads(ctx context.Context, r *gitstore.Repo, reads map[string]gitstore.OID, head gitstore.OID) ([]StaleRead, error) {
	if len(reads) == 0 {
		return nil, nil
	}
	hc, err := r.Commit(ctx, head)
	if err != nil {
		return nil, err
	}
	var out []StaleRead
	for p, read := range reads {
		e, err := r.Lookup(ctx, hc.Tree, p)
		var cur gitstore.OID
		switch {
		case err == nil && e.Mode.IsBlob():
			cur = e.OID
		case err == nil, errors.Is(err, gitstore.ErrNotFound), errors.Is(err, gitstore.ErrWrongKind):
		default:
			return nil, err
		}
		if cur != read {
			out = append(out, StaleRead{Path: p, Read: read, Current: cur})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func oidString(o gitstore.OID) string {
	if o.IsZero() {
		return ""
	}
	return o.String()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// resolveExpectedHead resolves an accept's expected head: a full id as
// given (zero: the branch must not exist), else a revision peeled to a
// commit, within the caller's reach.
func (s *Service) resolveExpectedHead(ctx context.Context, r *gitstore.Repo, rev string) (gitstore.OID, error) {
	if h, err := gitstore.ParseOID(rev); err == nil {
		return h, nil
	}
	return s.sessions.ResolveRevision(ctx, r, "expected_head", rev)
}

// checkWrites holds a changeset to its session's write policy: every
// path it changes against its base must be one the session may write, or
// the accept is refused (ErrForbidden) before anything is written. The
// engine keeps such paths out of a session in the first place; this keeps
// them off the branch whatever got them there.
func (s *Service) checkWrites(ctx context.Context, r *gitstore.Repo, c Changeset) error {
	base, err := r.TreeOf(ctx, c.BaseCommit)
	if err != nil {
		return fmt.Errorf("changeset %s base: %w", c.ID, err)
	}
	head, err := r.TreeOf(ctx, c.HeadCommit)
	if err != nil {
		return fmt.Errorf("changeset %s head: %w", c.ID, err)
	}
	if err := s.sessions.CheckWrites(ctx, c.Session, r, base, head); err != nil {
		return fmt.Errorf("accept changeset %s of session %s: %w", c.ID, c.Session, err)
	}
	return nil
}
