package changeset

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
)

// ReviewInput is one review to record.
type ReviewInput struct {
	Verdict  Verdict
	Body     string
	Reviewer Reviewer
	Comments []LineComment
}

// Review records a review of a changeset's current revision and moves
// the changeset to the status its reviews now give (ReviewStatus with the
// repository's required approvals). The review is by in.Reviewer and
// counts as countedVerdict says: a reviewer the daemon does not vouch for
// is recorded as commenting, whatever verdict it gave. Line comments must
// name a file of the changeset's diff and a line from 1. An accepted or
// undone changeset takes comments only. It returns the review as recorded
// and the changeset's view after it.
func (s *Service) Review(ctx context.Context, id uuid.UUID, in ReviewInput) (Review, View, error) {
	if _, err := ParseVerdict(string(in.Verdict)); err != nil {
		return Review{}, View{}, fmt.Errorf("%w: %v", record.ErrInvalid, err)
	}
	c, err := s.Get(ctx, id)
	if err != nil {
		return Review{}, View{}, err
	}
	if in.Reviewer.Kind == ReviewerSession && in.Reviewer.Session == c.Session && in.Reviewer.Name == "" {
		info, err := s.sessions.SessionInfo(ctx, c.Session)
		if err != nil {
			return Review{}, View{}, err
		}
		in.Reviewer.Name = cmpOr(cmpOr(info.AgentName, info.AgentID), "session "+c.Session.String())
	}
	if in.Verdict, err = countedVerdict(in.Reviewer, in.Verdict, c.Session); err != nil {
		return Review{}, View{}, fmt.Errorf("review changeset %s: %w", id, err)
	}
	r, err := s.openChangeset(ctx, c)
	if err != nil {
		return Review{}, View{}, err
	}
	if len(in.Comments) > 0 {
		patch, err := diff(ctx, r, c.BaseCommit, c.HeadCommit)
		if err != nil {
			return Review{}, View{}, fmt.Errorf("changeset %s: %w", id, err)
		}
		if err := checkComments(ctx, r, patch, in.Comments); err != nil {
			return Review{}, View{}, err
		}
	}
	pol, err := s.repos.Policy(ctx, c.Repo)
	if err != nil {
		return Review{}, View{}, err
	}
	var rev Review
	for attempt := 0; ; attempt++ {
		now := s.now()
		err = s.store.InTx(ctx, func(tx Tx) error {
			cur, err := tx.GetChangeset(ctx, id)
			if err != nil {
				return err
			}
			closed := cur.Status.closed()
			if closed && in.Verdict != VerdictComment {
				return &statusError{msg: fmt.Sprintf("changeset %s is %s: it takes comments only", id, cur.Status),
					conflict: &record.ConflictError{Field: "status", Current: string(cur.Status)}}
			}
			rev, err = tx.AddReview(ctx, Review{Changeset: id, Verdict: in.Verdict, Body: in.Body,
				Author: in.Reviewer.Name, AuthorKind: in.Reviewer.Kind, Comments: in.Comments, Revision: cur.Revision, CreatedAt: now})
			if err != nil {
				return err
			}
			next := cur.Status
			if !closed {
				all, err := tx.ListReviews(ctx, id)
				if err != nil {
					return err
				}
				next = ReviewStatus(votes(all, cur.Revision), pol.RequiredApprovals)
				if next != cur.Status {
					if err := tx.SetChangesetStatus(ctx, id, cur.Status, next, gitstore.ZeroOID, now); err != nil {
						return err
					}
				}
			}
			c = cur
			c.Status, c.UpdatedAt = next, now
			_, err = tx.AppendEvent(ctx, event(EventReviewed, c,
				map[string]any{"review": rev.ID, "verdict": rev.Verdict, "author": rev.Author, "author_kind": rev.AuthorKind}, now))
			return err
		})
		if err == nil || !errors.Is(err, record.ErrConflict) || attempt == 3 {
			break
		}
		var ce *record.ConflictError
		if errors.As(err, &ce) && ce.Field == "status" && (ce.Current == string(StatusAccepted) || ce.Current == string(StatusUndone)) {
			break
		}
	}
	if err != nil {
		return Review{}, View{}, fmt.Errorf("review changeset %s: %w", id, err)
	}
	s.events.Notify()
	v, err := s.view(ctx, c)
	if err != nil {
		return Review{}, View{}, err
	}
	return rev, v, nil
}

// checkComments refuses a line comment that names no file of the patch, or
// no line of it: a line from 1 to the file's line count on the side that
// has more (the new one, or the old one of a deletion).
func checkComments(ctx context.Context, r *gitstore.Repo, patch *merge.Patch, comments []LineComment) error {
	files := map[string]*merge.FileDiff{}
	for i := range patch.Files {
		f := &patch.Files[i]
		for _, p := range []string{f.OldPath, f.NewPath} {
			if p != "" {
				files[p] = f
			}
		}
	}
	lines := map[string]int{}
	for _, lc := range comments {
		f := files[lc.Path]
		if f == nil {
			return fmt.Errorf("%w: comment on %q: not a file of the changeset", record.ErrInvalid, lc.Path)
		}
		if f.Binary {
			return fmt.Errorf("%w: comment on %q: a binary file has no lines", record.ErrInvalid, lc.Path)
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
			return fmt.Errorf("%w: comment on %q: line %d, the file has lines 1 to %d", record.ErrInvalid, lc.Path, lc.Line, n)
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
