package changeset

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
)

// SubmitOptions describe a submission.
type SubmitOptions struct {
	// Intent is what the change is for; the session's intent when empty.
	Intent string
	// TargetBranch is where an accept puts it: the session's base branch
	// when empty, else the repository's HEAD branch.
	TargetBranch string
}

// Submit puts the session's current view under review: it checkpoints the
// session (reusing the latest checkpoint when nothing changed since) and
// creates a changeset whose head is that checkpoint, or revises the
// session's open changeset (see the package documentation). The session
// moves from active to submitted. The answer is the changeset as a
// reviewer sees it.
func (s *Service) Submit(ctx context.Context, id uuid.UUID, opts SubmitOptions) (View, error) {
	c, err := s.submit(ctx, id, opts)
	if err != nil {
		return View{}, err
	}
	return s.View(ctx, c.ID)
}

func (s *Service) submit(ctx context.Context, id uuid.UUID, opts SubmitOptions) (Changeset, error) {
	// Before the session's lock: settling takes the branch's lock first,
	// as an accept does.
	if err := s.settleSession(ctx, id); err != nil {
		return Changeset{}, fmt.Errorf("submit session %s: %w", id, err)
	}
	if err := s.sessions.CheckResolved(ctx, id, "submit"); err != nil {
		return Changeset{}, err
	}
	h, err := s.sessions.Hold(ctx, id)
	if err != nil {
		return Changeset{}, err
	}
	defer h.Release()
	if err := h.CheckOpen(ctx); err != nil {
		return Changeset{}, err
	}
	if !h.Changed() {
		return Changeset{}, fmt.Errorf("%w: session %s has no changes to submit", record.ErrInvalid, id)
	}
	sess := h.Info()
	existing, err := s.store.ListChangesets(ctx, Filter{Session: id})
	if err != nil {
		return Changeset{}, err
	}
	var prev *Changeset
	for i := range existing {
		if !existing[i].Status.closed() {
			prev = &existing[i]
		}
	}
	intent := opts.Intent
	if prev != nil {
		intent = cmpOr(intent, prev.Intent)
	}
	intent = cmpOr(intent, sess.Intent)
	r, err := s.repos.Open(ctx, sess.Repo)
	if err != nil {
		return Changeset{}, err
	}
	// The target as given; else a branch by construction (the previous
	// revision's target, the session's base branch, HEAD's branch), in
	// full so that a tag of the same name does not stand in its way.
	target := opts.TargetBranch
	for _, b := range []string{prevTarget(prev), sess.BaseRef, headBranch(r)} {
		if target == "" && b != "" {
			target = string(gitstore.BranchRef(b))
		}
	}
	if target == "" {
		return Changeset{}, fmt.Errorf("%w: the session has no base branch; say which branch to target", record.ErrInvalid)
	}
	if target, err = targetBranch(ctx, r, target); err != nil {
		return Changeset{}, err
	}

	msg := intent
	if msg == "" {
		msg = "submit session " + id.String()
	}
	head, reads, err := h.Freeze(ctx, msg)
	if err != nil {
		return Changeset{}, err
	}
	now := s.now()
	cs := Changeset{
		ID: uuid.New(), Session: id, Repo: sess.Repo, TargetBranch: target, Intent: intent,
		Status: StatusOpen, BaseCommit: sess.BaseCommit, HeadCommit: head, AgentID: sess.Agent(),
		Revision: 1, ReadSet: reads, CreatedAt: now, UpdatedAt: now,
	}
	typ := EventSubmitted
	if prev != nil {
		if prev.HeadCommit == head && prev.BaseCommit == cs.BaseCommit && prev.Intent == intent && prev.TargetBranch == target {
			return *prev, nil // nothing new to review
		}
		cs.ID, cs.CreatedAt, cs.Revision = prev.ID, prev.CreatedAt, prev.Revision+1
		typ = EventUpdated
	}
	if cs.Stats, err = stats(ctx, r, cs.BaseCommit, cs.HeadCommit); err != nil {
		return Changeset{}, fmt.Errorf("submit session %s: %w", id, err)
	}
	err = s.store.InTx(ctx, func(tx Tx) error {
		if prev != nil {
			if err := tx.ReviseChangeset(ctx, cs, prev.HeadCommit); err != nil {
				return err
			}
		} else if err := tx.CreateChangeset(ctx, cs); err != nil {
			return err
		}
		if sess.State == record.StateActive {
			if err := h.MoveState(ctx, tx, record.StateSubmitted, now); err != nil {
				return err
			}
		}
		_, err := tx.AppendEvent(ctx, event(typ, cs, map[string]any{"revision": cs.Revision, "head": cs.HeadCommit.String(), "base": cs.BaseCommit.String()}, now))
		return err
	})
	if err != nil {
		return Changeset{}, fmt.Errorf("submit session %s: %w", id, err)
	}
	h.Committed(ctx)
	s.events.Notify()
	return cs, nil
}

// stats sums up the diff from commit base to commit head.
func stats(ctx context.Context, r *gitstore.Repo, base, head gitstore.OID) (*merge.Stats, error) {
	p, err := diff(ctx, r, base, head)
	if err != nil {
		return nil, err
	}
	return &p.Stats, nil
}

// diff is the patch from commit base to commit head.
func diff(ctx context.Context, r *gitstore.Repo, base, head gitstore.OID) (*merge.Patch, error) {
	trees := [2]gitstore.OID{}
	for i, id := range []gitstore.OID{base, head} {
		c, err := r.Commit(ctx, id)
		if err != nil {
			return nil, err
		}
		trees[i] = c.Tree
	}
	p, err := merge.Diff(ctx, r, trees[0], trees[1], merge.DiffOptions{}, merge.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	return p, nil
}

// targetBranch is the one rule for a target branch, where a changeset is
// submitted and where it is accepted: name must be a branch, as the short
// name ("main") or in full ("refs/heads/main"). The short name must pass
// git branch's rules (gitstore.ValidateBranchName: not HEAD, not starting
// with '-', …), may not be "@" (HEAD in revision syntax) or start with
// "refs/", and, resolved by git's rules (gitstore's DWIMRef), must name
// that branch or nothing yet (an accept creates the branch): never a tag,
// a remote-tracking branch, another ref, or an object id. The answer is
// the short name; an error is record.ErrInvalid naming the field and the
// value.
func targetBranch(ctx context.Context, r *gitstore.Repo, name string) (string, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: target_branch %q: %s", record.ErrInvalid, name, fmt.Sprintf(format, args...))
	}
	branch, full := strings.CutPrefix(name, "refs/heads/")
	switch {
	case strings.HasPrefix(branch, "refs/"):
		return "", bad("not a branch: a target is a branch name or refs/heads/<name>")
	case branch == "@":
		return "", bad("not a branch name (@ is HEAD)")
	}
	if err := gitstore.ValidateBranchName(branch); err != nil {
		return "", bad("%v", err)
	}
	if full {
		return branch, nil
	}
	ref, err := r.DWIMRef(ctx, branch)
	if err != nil {
		return "", err
	}
	switch {
	case ref == gitstore.BranchRef(branch):
		return branch, nil
	case ref != "":
		return "", bad("names %s, not a branch", ref)
	case len(branch) == 2*gitstore.OIDSize && isHex(branch):
		return "", bad("an object id, not a branch")
	case len(branch) >= 4 && isHex(branch):
		if _, _, err := r.RevParse(ctx, branch); err == nil || errors.Is(err, gitstore.ErrAmbiguous) {
			return "", bad("names an object, not a branch")
		}
	}
	return branch, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; !('0' <= s[i] && s[i] <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func prevTarget(c *Changeset) string {
	if c == nil {
		return ""
	}
	return c.TargetBranch
}

func headBranch(r *gitstore.Repo) string {
	b, _ := r.HeadBranch()
	return b
}
