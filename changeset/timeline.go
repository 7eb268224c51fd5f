package changeset

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
)

// EntryKind says what a timeline entry records.
type EntryKind string

// Timeline entry kinds.
const (
	EntryCheckpoint EntryKind = "checkpoint"
	EntryRevision   EntryKind = "revision"
	EntryReview     EntryKind = "review"
	EntryComment    EntryKind = "comment"
	EntryAccepted   EntryKind = "accepted"
	EntryUndone     EntryKind = "undone"
)

// Entry is one thing that happened to a changeset, or to its session on
// the way to one of its revisions.
type Entry struct {
	Kind EntryKind
	At   time.Time
	// Revision is the revision the entry belongs to: the one a checkpoint
	// led to, a revision's own number, the one a review looked at, the
	// one accepted (0 when not known).
	Revision int
	// Commit is a checkpoint's or revision's head commit, the commit an
	// accept wrote, or an undo's revert commit.
	Commit gitstore.OID
	// Checkpoint is a checkpoint's number in its session, Label its label
	// and Seq the session's mutation it was taken at.
	Checkpoint int
	Label      string
	Seq        int64
	// Review is set for a review and for each of its line comments;
	// Comment only for a comment.
	Review  *Review
	Comment *LineComment
}

// Timeline is how a changeset came to be, oldest first.
type Timeline struct {
	Changeset uuid.UUID
	Session   uuid.UUID
	Repo      string
	Entries   []Entry
}

var timelineTypes = []string{"checkpoint.created", EventSubmitted, EventUpdated, EventReviewed, EventAccepted, EventUndone}

// Timeline returns the history of a changeset in the order it happened:
// each revision after the checkpoints of its session that led to it (those
// taken since the previous revision, or since another changeset of the
// session was last submitted), the reviews each followed by its line
// comments, the accept and the undo. The order is the event log's; a
// review recorded without an event comes at its time.
func (s *Service) Timeline(ctx context.Context, id uuid.UUID) (Timeline, error) {
	c, err := s.Get(ctx, id)
	if err != nil {
		return Timeline{}, err
	}
	evs, err := s.store.ListEvents(ctx, events.Filter{Repo: c.Repo, Session: c.Session, Types: timelineTypes})
	if err != nil {
		return Timeline{}, fmt.Errorf("changeset %s timeline: %w", id, err)
	}
	reviews, err := s.store.ListReviews(ctx, id)
	if err != nil {
		return Timeline{}, fmt.Errorf("changeset %s timeline: %w", id, err)
	}
	byID := make(map[uuid.UUID]*Review, len(reviews))
	for i := range reviews {
		byID[reviews[i].ID] = &reviews[i]
	}
	out := Timeline{Changeset: c.ID, Session: c.Session, Repo: c.Repo, Entries: []Entry{}}
	addReview := func(r *Review) {
		out.Entries = append(out.Entries, Entry{Kind: EntryReview, At: r.CreatedAt, Revision: r.Revision, Review: r})
		for j := range r.Comments {
			out.Entries = append(out.Entries, Entry{Kind: EntryComment, At: r.CreatedAt, Revision: r.Revision, Review: r, Comment: &r.Comments[j]})
		}
		delete(byID, r.ID)
	}
	var pending []Entry // checkpoints waiting for the revision they lead to
	revision := 0       // this changeset's latest revision so far
	done := false       // accepted: later checkpoints are another changeset's
	for _, e := range evs {
		var p struct {
			Changeset  uuid.UUID `json:"changeset"`
			Revision   int       `json:"revision"`
			Head       string    `json:"head"`
			Commit     string    `json:"commit"`
			N          int       `json:"n"`
			Label      string    `json:"label"`
			Seq        int64     `json:"seq"`
			Review     uuid.UUID `json:"review"`
			RevertedBy string    `json:"revert_commit"`
		}
		if json.Unmarshal(e.Payload, &p) != nil {
			continue
		}
		if e.Type == "checkpoint.created" {
			if !done {
				oid, _ := gitstore.ParseOID(p.Commit)
				pending = append(pending, Entry{Kind: EntryCheckpoint, At: e.At, Commit: oid, Checkpoint: p.N, Label: p.Label, Seq: p.Seq})
			}
			continue
		}
		if p.Changeset != c.ID {
			if e.Type == EventSubmitted || e.Type == EventUpdated {
				pending = nil // those led to another changeset
			}
			continue
		}
		switch e.Type {
		case EventSubmitted, EventUpdated:
			if p.Revision < 1 || p.Revision > c.Revision {
				continue
			}
			out.Entries = append(out.Entries, pending...)
			pending = nil
			head, _ := gitstore.ParseOID(p.Head)
			revision = p.Revision
			out.Entries = append(out.Entries, Entry{Kind: EntryRevision, At: e.At, Revision: p.Revision, Commit: head})
		case EventReviewed:
			if r := byID[p.Review]; r != nil {
				addReview(r)
			}
		case EventAccepted:
			oid, _ := gitstore.ParseOID(p.Commit)
			out.Entries = append(out.Entries, Entry{Kind: EntryAccepted, At: e.At, Revision: revision, Commit: oid})
			done = true
		case EventUndone:
			oid, _ := gitstore.ParseOID(p.RevertedBy)
			out.Entries = append(out.Entries, Entry{Kind: EntryUndone, At: e.At, Revision: revision, Commit: oid})
		}
	}
	// Reviews without an event (recorded before reviews had one) at their
	// time, after whatever happened at the same instant.
	for _, r := range reviews {
		if byID[r.ID] == nil {
			continue
		}
		at := slices.IndexFunc(out.Entries, func(e Entry) bool { return e.At.After(r.CreatedAt) })
		if at < 0 {
			addReview(byID[r.ID])
			continue
		}
		rest := slices.Clone(out.Entries[at:])
		out.Entries = out.Entries[:at]
		addReview(byID[r.ID])
		out.Entries = append(out.Entries, rest...)
	}
	return out, nil
}
