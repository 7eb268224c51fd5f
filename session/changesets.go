package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
)

// Changesets: submit, review, accept (commit-on-accept) and layers with
// undo. The rules, in one place:
//
//   - Submit checkpoints the session and freezes that checkpoint commit as
//     the changeset's head. The session may go on writing (submitted
//     sessions accept writes); what is under review does not change until
//     the session is submitted again, which revises the same changeset:
//     a new head, Revision+1, status back to open. Reviews stay, each
//     recording the revision it looked at; the status follows the reviews
//     of the current revision only (merge.ReviewStatus).
//   - Accept writes one commit on the target branch and moves the branch by
//     compare-and-swap (git's <ref>.lock). The order is: the commit is
//     durable, then the ref moves, then the store records the changeset
//     accepted, its layer, the session accepted and the events in one
//     transaction. A crash (or store failure) after the ref moved leaves
//     the commit on the branch and the changeset not accepted; accepting
//     again finds the commit by its Sessiond-Changeset trailer on the
//     branch and only records it. Undo does the same with its
//     Sessiond-Undo trailer.
//   - A partial accept (AcceptOptions.Select) commits the base with only
//     the selected files and hunks of the changeset's diff (hunks by their
//     index in that diff, which is the same on every read of a revision),
//     merged onto a moved branch as any accept. The changeset is accepted
//     and records what was taken and left out; the session is not closed
//     but moved onto the new commit (its view unchanged when the branch
//     had not moved, otherwise rebased by merge; a conflict there leaves
//     it on its old base and is reported), so what was left out is its
//     diff, to revise and submit as a new changeset, or abandon.
//   - In this process accepts and undos on one branch are serialized by a
//     lock per branch, so concurrent accepts land one after the other;
//     against other writers (the git CLI, another sessiond) the
//     compare-and-swap decides, and a lost race re-merges on the new head
//     (a few times), or fails with a conflict when the caller gave an
//     expected head.

// Event types of changesets; repository events with the session that made
// the changeset.
const (
	EventChangesetSubmitted = "changeset.submitted"
	EventChangesetUpdated   = "changeset.updated"
	EventChangesetReviewed  = "changeset.reviewed"
	EventChangesetAccepted  = "changeset.accepted"
	EventChangesetUndone    = "changeset.undone"
)

// Trailers sessiond writes on the commits it puts on branches.
const (
	trailerSession   = "Sessiond-Session"
	trailerChangeset = "Sessiond-Changeset"
	trailerAgent     = "Sessiond-Agent"
	trailerUndo      = "Sessiond-Undo"
)

// ChangesetConfig is the accept policy of repositories that have no
// RepoPolicy of their own (see SetRepoPolicy).
type ChangesetConfig struct {
	// RequiredApprovals an accept needs; 0: none (an open changeset may be
	// accepted, one with changes requested or rejected may not).
	RequiredApprovals int
	// AllowCheckedOut lets accepts and undos move the branch that a
	// non-bare repository has checked out. Its work tree and index are not
	// updated (git status there then shows the accepted change reversed),
	// which is why it is refused by default, as git push does.
	AllowCheckedOut bool
	// RefuseStaleReads fails an accept when a file the session read
	// changed on the branch since the session's base.
	RefuseStaleReads bool
}

// changesets is the Manager's changeset state.
type changesets struct {
	cfg ChangesetConfig

	mu       sync.Mutex // guards branches
	branches map[string]*branchLock
}

// branchLock serializes this process's accepts and undos on one branch.
type branchLock struct {
	mu   sync.Mutex
	refs int // holders and waiters; guarded by changesets.mu
}

// lockBranch takes the lock of repo's branch and returns its release.
func (c *changesets) lockBranch(repo, branch string) func() {
	key := repo + "\x00" + branch
	c.mu.Lock()
	if c.branches == nil {
		c.branches = map[string]*branchLock{}
	}
	l := c.branches[key]
	if l == nil {
		l = &branchLock{}
		c.branches[key] = l
	}
	l.refs++
	c.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		c.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(c.branches, key)
		}
		c.mu.Unlock()
	}
}

// StaleReadsError is an accept refused because files the session read
// changed on the branch since its base.
type StaleReadsError struct {
	Branch string
	Reads  []StaleRead
}

func (e *StaleReadsError) Error() string {
	paths := make([]string, len(e.Reads))
	for i, r := range e.Reads {
		paths[i] = fmt.Sprintf("%q", r.Path)
	}
	return fmt.Sprintf("stale reads: %s changed on %s since the session read them", strings.Join(paths, ", "), e.Branch)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *StaleReadsError) Is(target error) bool { return target == ErrConflict }

// StaleRead is a file the session read at its base that is different on
// the branch now: Current is its blob there, zero when it is gone.
type StaleRead struct {
	Path    string
	Read    gitstore.OID
	Current gitstore.OID
}

// Repository policy.

// RepoPolicy returns the accept policy of a repository: its own, or the
// Manager's defaults.
func (m *Manager) RepoPolicy(ctx context.Context, repo string) (RepoPolicy, error) {
	if _, err := m.store.GetRepo(ctx, repo); err != nil {
		return RepoPolicy{}, fmt.Errorf("repository %q: %w", repo, err)
	}
	p, err := m.store.GetRepoPolicy(ctx, repo)
	if errors.Is(err, ErrNotFound) {
		c := m.changesets.cfg
		return RepoPolicy{Repo: repo, RequiredApprovals: c.RequiredApprovals, AllowCheckedOut: c.AllowCheckedOut, RefuseStaleReads: c.RefuseStaleReads}, nil
	}
	return p, err
}

// SetRepoPolicy sets a repository's own accept policy.
func (m *Manager) SetRepoPolicy(ctx context.Context, p RepoPolicy) (RepoPolicy, error) {
	if p.RequiredApprovals < 0 || p.RequiredApprovals > 100 {
		return RepoPolicy{}, fmt.Errorf("%w: required approvals %d: use 0 to 100", ErrInvalid, p.RequiredApprovals)
	}
	if err := m.store.SetRepoPolicy(ctx, p); err != nil {
		return RepoPolicy{}, err
	}
	return p, nil
}

// Submit.

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
// session's open changeset (see the rules at the top of this file). The
// session moves from active to submitted.
func (m *Manager) Submit(ctx context.Context, id uuid.UUID, opts SubmitOptions) (Changeset, error) {
	ls, err := m.lockLive(ctx, id)
	if err != nil {
		return Changeset{}, err
	}
	defer ls.mu.Unlock()
	if err := m.checkOpen(ctx, ls); err != nil {
		return Changeset{}, err
	}
	if ls.tree == ls.baseTree {
		return Changeset{}, fmt.Errorf("%w: session %s has no changes to submit", ErrInvalid, id)
	}
	existing, err := m.store.ListChangesets(ctx, ChangesetFilter{Session: id})
	if err != nil {
		return Changeset{}, err
	}
	var prev *Changeset
	for i := range existing {
		if s := existing[i].Status; s != ChangesetAccepted && s != ChangesetUndone {
			prev = &existing[i]
		}
	}
	intent := opts.Intent
	target := opts.TargetBranch
	if prev != nil {
		intent = cmpOr(intent, prev.Intent)
		target = cmpOr(target, prev.TargetBranch)
	}
	intent = cmpOr(intent, ls.meta.Intent)
	if target == "" {
		target = ls.meta.BaseRef
	}
	if target == "" {
		target, _ = ls.repo.HeadBranch()
	}
	target = strings.TrimPrefix(target, "refs/heads/")
	if target == "" {
		return Changeset{}, fmt.Errorf("%w: the session has no base branch; say which branch to target", ErrInvalid)
	}
	if err := gitstore.ValidateRefName(gitstore.BranchRef(target)); err != nil {
		return Changeset{}, fmt.Errorf("%w: target branch %q: %v", ErrInvalid, target, err)
	}

	head := ls.meta.Head
	if c, err := ls.repo.Commit(ctx, head); err != nil {
		return Changeset{}, err
	} else if ls.meta.Checkpoints == 0 || c.Tree != ls.tree {
		msg := intent
		if msg == "" {
			msg = "submit session " + id.String()
		}
		cp, err := m.checkpoint(ctx, ls, "submit", msg)
		if err != nil {
			return Changeset{}, err
		}
		head = cp.Commit
	}
	if err := m.flushReads(ctx, ls); err != nil {
		return Changeset{}, err
	}
	reads := maps.Clone(ls.reads)
	if len(reads) == 0 {
		reads = nil
	}
	now := m.now()
	cs := Changeset{
		ID: uuid.New(), Session: id, Repo: ls.meta.Repo, TargetBranch: target, Intent: intent,
		Status: ChangesetOpen, BaseCommit: ls.meta.BaseCommit, HeadCommit: head, AgentID: ls.meta.AgentID,
		Revision: 1, ReadSet: reads, CreatedAt: now, UpdatedAt: now,
	}
	typ := EventChangesetSubmitted
	if prev != nil {
		if prev.HeadCommit == head && prev.BaseCommit == cs.BaseCommit && prev.Intent == intent && prev.TargetBranch == target {
			return *prev, nil // nothing new to review
		}
		cs.ID, cs.CreatedAt, cs.Revision = prev.ID, prev.CreatedAt, prev.Revision+1
		typ = EventChangesetUpdated
	}
	from := ls.meta.State
	err = m.store.InTx(ctx, func(tx Tx) error {
		if prev != nil {
			if err := tx.ReviseChangeset(ctx, cs, prev.HeadCommit); err != nil {
				return err
			}
		} else if err := tx.CreateChangeset(ctx, cs); err != nil {
			return err
		}
		if from == StateActive {
			if err := tx.SetSessionState(ctx, id, from, StateSubmitted, now); err != nil {
				return err
			}
			next := ls.meta
			next.State = StateSubmitted
			if _, err := tx.AppendEvent(ctx, stateEvent(next, from, now)); err != nil {
				return err
			}
		}
		_, err := tx.AppendEvent(ctx, changesetEvent(typ, cs, map[string]any{"revision": cs.Revision, "head": cs.HeadCommit.String(), "base": cs.BaseCommit.String()}, now))
		return err
	})
	if err != nil {
		return Changeset{}, fmt.Errorf("submit session %s: %w", id, err)
	}
	if from == StateActive {
		ls.meta.State = StateSubmitted
		ls.meta.LastActiveAt = now
	}
	m.events.notify()
	return cs, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func changesetEvent(typ string, c Changeset, extra map[string]any, at time.Time) Event {
	p := map[string]any{"changeset": c.ID, "session": c.Session, "status": c.Status, "target_branch": c.TargetBranch}
	maps.Copy(p, extra)
	return Event{Repo: c.Repo, Session: c.Session, Type: typ, Payload: Payload(p), At: at}
}

// Reading changesets.

// GetChangeset returns a changeset.
func (m *Manager) GetChangeset(ctx context.Context, id uuid.UUID) (Changeset, error) {
	return m.store.GetChangeset(ctx, id) // the store's error names the changeset
}

// ListChangesets returns the changesets matching f, oldest first.
func (m *Manager) ListChangesets(ctx context.Context, f ChangesetFilter) ([]Changeset, error) {
	return m.store.ListChangesets(ctx, f)
}

// ChangesetListing is a changeset in a list, with how many approvals the
// reviews of its current revision give it.
type ChangesetListing struct {
	Changeset
	Approvals int
}

// ListChangesetListings is ListChangesets with each changeset's approvals.
func (m *Manager) ListChangesetListings(ctx context.Context, f ChangesetFilter) ([]ChangesetListing, error) {
	cs, err := m.store.ListChangesets(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]ChangesetListing, len(cs))
	for i, c := range cs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		reviews, err := m.store.ListReviews(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		var votes []merge.Vote
		for _, r := range reviews {
			if r.Revision == c.Revision {
				votes = append(votes, merge.Vote{Author: r.Author, Verdict: merge.Verdict(r.Verdict)})
			}
		}
		out[i] = ChangesetListing{Changeset: c, Approvals: merge.Approvals(votes)}
	}
	return out, nil
}

// Revision is one submission of a changeset: what it put under review.
type Revision struct {
	N    int
	Base gitstore.OID
	Head gitstore.OID
	At   time.Time
}

// ChangesetRevisions returns a changeset's revisions, oldest first, from
// its submitted and updated events (the current one from the changeset
// itself, so it is there even when its event is not).
func (m *Manager) ChangesetRevisions(ctx context.Context, id uuid.UUID) ([]Revision, error) {
	c, err := m.GetChangeset(ctx, id)
	if err != nil {
		return nil, err
	}
	evs, err := m.store.ListEvents(ctx, EventFilter{Repo: c.Repo, Session: c.Session})
	if err != nil {
		return nil, fmt.Errorf("changeset %s revisions: %w", id, err)
	}
	byN := map[int]Revision{}
	for _, e := range evs {
		if e.Type != EventChangesetSubmitted && e.Type != EventChangesetUpdated {
			continue
		}
		var p struct {
			Changeset uuid.UUID `json:"changeset"`
			Revision  int       `json:"revision"`
			Head      string    `json:"head"`
			Base      string    `json:"base"`
		}
		if json.Unmarshal(e.Payload, &p) != nil || p.Changeset != id || p.Revision < 1 || p.Revision > c.Revision {
			continue
		}
		rev := Revision{N: p.Revision, Base: c.BaseCommit, At: e.At}
		if rev.Head, err = gitstore.ParseOID(p.Head); err != nil {
			continue
		}
		if b, err := gitstore.ParseOID(p.Base); err == nil {
			rev.Base = b
		}
		byN[rev.N] = rev
	}
	cur, ok := byN[c.Revision]
	if !ok {
		cur.At = c.UpdatedAt
	}
	cur.N, cur.Base, cur.Head = c.Revision, c.BaseCommit, c.HeadCommit
	byN[c.Revision] = cur
	out := make([]Revision, 0, len(byN))
	for n := 1; n <= c.Revision; n++ {
		if r, ok := byN[n]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// ChangesetRevisionDiff is the patch revision n of a changeset put under
// review; 0 is the current revision (ChangesetDiff).
func (m *Manager) ChangesetRevisionDiff(ctx context.Context, id uuid.UUID, n int) (Changeset, *merge.Patch, error) {
	if n == 0 {
		return m.ChangesetDiff(ctx, id)
	}
	revs, err := m.ChangesetRevisions(ctx, id)
	if err != nil {
		return Changeset{}, nil, err
	}
	for _, r := range revs {
		if r.N != n {
			continue
		}
		c, err := m.GetChangeset(ctx, id)
		if err != nil {
			return Changeset{}, nil, err
		}
		repo, err := m.repo(ctx, c.Repo)
		if err != nil {
			return Changeset{}, nil, err
		}
		trees := [2]gitstore.OID{}
		for i, id := range []gitstore.OID{r.Base, r.Head} {
			cm, err := repo.Commit(ctx, id)
			if err != nil {
				return Changeset{}, nil, fmt.Errorf("changeset %s revision %d: %w", c.ID, n, err)
			}
			trees[i] = cm.Tree
		}
		p, err := merge.Diff(ctx, repo, trees[0], trees[1], merge.DiffOptions{}, merge.PatchOptions{})
		if err != nil {
			return Changeset{}, nil, fmt.Errorf("changeset %s revision %d: diff: %w", id, n, err)
		}
		c.BaseCommit, c.HeadCommit, c.Revision = r.Base, r.Head, r.N
		return c, p, nil
	}
	return Changeset{}, nil, fmt.Errorf("changeset %s has no revision %d: %w", id, n, ErrNotFound)
}

// Reviews returns a changeset's reviews, oldest first.
func (m *Manager) Reviews(ctx context.Context, id uuid.UUID) ([]Review, error) {
	if _, err := m.GetChangeset(ctx, id); err != nil {
		return nil, err
	}
	return m.store.ListReviews(ctx, id)
}

// ChangesetDiff is the patch a changeset puts under review: its head
// against its base.
func (m *Manager) ChangesetDiff(ctx context.Context, id uuid.UUID) (Changeset, *merge.Patch, error) {
	c, err := m.GetChangeset(ctx, id)
	if err != nil {
		return Changeset{}, nil, err
	}
	r, err := m.repo(ctx, c.Repo)
	if err != nil {
		return Changeset{}, nil, err
	}
	trees := [2]gitstore.OID{}
	for i, id := range []gitstore.OID{c.BaseCommit, c.HeadCommit} {
		cm, err := r.Commit(ctx, id)
		if err != nil {
			return Changeset{}, nil, fmt.Errorf("changeset %s: %w", c.ID, err)
		}
		trees[i] = cm.Tree
	}
	p, err := merge.Diff(ctx, r, trees[0], trees[1], merge.DiffOptions{}, merge.PatchOptions{})
	if err != nil {
		return Changeset{}, nil, fmt.Errorf("changeset %s: diff: %w", id, err)
	}
	return c, p, nil
}

// Review.

// ReviewInput is one review to record.
type ReviewInput struct {
	Verdict  Verdict
	Body     string
	Author   string
	Comments []LineComment
}

// Review records a review of a changeset's current revision and moves
// the changeset to the status its reviews now give (merge.ReviewStatus
// with the repository's required approvals). Line comments must name a
// file of the changeset's diff and a line from 1. An accepted or undone
// changeset takes comments only.
func (m *Manager) Review(ctx context.Context, id uuid.UUID, in ReviewInput) (Review, Changeset, error) {
	if _, err := merge.ParseVerdict(string(in.Verdict)); err != nil {
		return Review{}, Changeset{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	c, patch, err := m.ChangesetDiff(ctx, id)
	if err != nil {
		return Review{}, Changeset{}, err
	}
	if err := m.checkComments(ctx, c, patch, in.Comments); err != nil {
		return Review{}, Changeset{}, err
	}
	pol, err := m.RepoPolicy(ctx, c.Repo)
	if err != nil {
		return Review{}, Changeset{}, err
	}
	var rev Review
	for attempt := 0; ; attempt++ {
		now := m.now()
		err = m.store.InTx(ctx, func(tx Tx) error {
			cur, err := tx.GetChangeset(ctx, id)
			if err != nil {
				return err
			}
			closed := cur.Status == ChangesetAccepted || cur.Status == ChangesetUndone
			if closed && in.Verdict != VerdictComment {
				return fmt.Errorf("changeset %s is %s, it takes comments only: %w", id, cur.Status,
					&ConflictError{Field: "status", Current: string(cur.Status)})
			}
			rev, err = tx.AddReview(ctx, Review{Changeset: id, Verdict: in.Verdict, Body: in.Body, Author: in.Author,
				Comments: in.Comments, Revision: cur.Revision, CreatedAt: now})
			if err != nil {
				return err
			}
			next := cur.Status
			if !closed {
				all, err := tx.ListReviews(ctx, id)
				if err != nil {
					return err
				}
				next = reviewStatus(all, cur.Revision, pol.RequiredApprovals)
				if next != cur.Status {
					if err := tx.SetChangesetStatus(ctx, id, cur.Status, next, gitstore.ZeroOID, now); err != nil {
						return err
					}
				}
			}
			c = cur
			c.Status, c.UpdatedAt = next, now
			_, err = tx.AppendEvent(ctx, changesetEvent(EventChangesetReviewed, c,
				map[string]any{"review": rev.ID, "verdict": rev.Verdict, "author": rev.Author}, now))
			return err
		})
		if err == nil || !errors.Is(err, ErrConflict) || attempt == 3 {
			break
		}
		var ce *ConflictError
		if errors.As(err, &ce) && ce.Field == "status" && (ce.Current == string(ChangesetAccepted) || ce.Current == string(ChangesetUndone)) {
			break
		}
	}
	if err != nil {
		return Review{}, Changeset{}, fmt.Errorf("review changeset %s: %w", id, err)
	}
	m.events.notify()
	return rev, c, nil
}

// checkComments refuses a line comment that names no file of the patch, or
// no line of it: a line from 1 to the file's line count on the side that
// has more (the new one, or the old one of a deletion).
func (m *Manager) checkComments(ctx context.Context, c Changeset, patch *merge.Patch, comments []LineComment) error {
	if len(comments) == 0 {
		return nil
	}
	files := map[string]*merge.FileDiff{}
	for i := range patch.Files {
		f := &patch.Files[i]
		for _, p := range []string{f.OldPath, f.NewPath} {
			if p != "" {
				files[p] = f
			}
		}
	}
	r, err := m.repo(ctx, c.Repo)
	if err != nil {
		return err
	}
	lines := map[string]int{}
	for _, lc := range comments {
		f := files[lc.Path]
		if f == nil {
			return fmt.Errorf("%w: comment on %q: not a file of the changeset", ErrInvalid, lc.Path)
		}
		if f.Binary {
			return fmt.Errorf("%w: comment on %q: a binary file has no lines", ErrInvalid, lc.Path)
		}
		n, ok := lines[lc.Path]
		if !ok {
			for _, oid := range []gitstore.OID{f.OldOID, f.NewOID} {
				if oid.IsZero() {
					continue
				}
				data, err := r.ReadBlob(ctx, oid)
				if err != nil {
					return err
				}
				n = max(n, countLines(data))
			}
			lines[lc.Path] = n
		}
		if lc.Line < 1 || lc.Line > n {
			return fmt.Errorf("%w: comment on %q: line %d, the file has lines 1 to %d", ErrInvalid, lc.Path, lc.Line, n)
		}
	}
	return nil
}

// countLines is the number of lines of data, a last one without a newline
// included.
func countLines(data []byte) int {
	n := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

// reviewStatus is the status the reviews of revision rev give.
func reviewStatus(reviews []Review, rev, required int) ChangesetStatus {
	var votes []merge.Vote
	for _, r := range reviews {
		if r.Revision == rev {
			votes = append(votes, merge.Vote{Author: r.Author, Verdict: merge.Verdict(r.Verdict)})
		}
	}
	return ChangesetStatus(merge.ReviewStatus(votes, required))
}

// Layers returns the accepted changesets of a branch, newest first.
func (m *Manager) Layers(ctx context.Context, repo, branch string) ([]Layer, error) {
	r, err := m.repo(ctx, repo)
	if err != nil {
		return nil, err
	}
	if branch == "" {
		if branch, _ = r.HeadBranch(); branch == "" {
			return nil, fmt.Errorf("%w: say which branch", ErrInvalid)
		}
	}
	return m.store.ListLayers(ctx, repo, strings.TrimPrefix(branch, "refs/heads/"))
}

// sanitizeIdent makes s safe inside a commit's author or committer line.
func sanitizeIdent(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r == '\n' || r == 0 {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
}

// actorSignature is the committer of accepts and undos.
func actorSignature(actor string, now time.Time) gitstore.Signature {
	name := sanitizeIdent(actor)
	if name == "" {
		name = "sessiond"
	}
	email := strings.ReplaceAll(name, " ", ".")
	return gitstore.Signature{Name: name, Email: email + "@sessiond", When: now}
}

// hasTrailer reports whether a commit message carries trailer key: value.
func hasTrailer(msg, key, value string) bool {
	return strings.Contains(msg, "\n"+key+": "+value+"\n") || strings.HasSuffix(msg, "\n"+key+": "+value)
}

// findTrailer walks the first-parent history of head back to stop (not
// included), at most limit commits, for a commit with trailer key: value.
func findTrailer(ctx context.Context, r *gitstore.Repo, head, stop gitstore.OID, key, value string) (*gitstore.Commit, error) {
	const limit = 1000
	id := head
	for i := 0; i < limit && !id.IsZero() && id != stop; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := r.Commit(ctx, id)
		if err != nil {
			return nil, err
		}
		if hasTrailer(c.Message, key, value) {
			return c, nil
		}
		if len(c.Parents) == 0 {
			break
		}
		id = c.Parents[0]
	}
	return nil, nil
}
