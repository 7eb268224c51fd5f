package changeset

import (
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
)

// Status is a changeset's review state.
type Status string

// Changeset statuses. The first four are where reviews leave a changeset
// (ReviewStatus); accepted and undone are final.
const (
	StatusOpen             Status = "open"
	StatusApproved         Status = "approved"
	StatusChangesRequested Status = "changes_requested"
	StatusRejected         Status = "rejected"
	StatusAccepted         Status = "accepted"
	StatusUndone           Status = "undone"
)

// ParseStatus checks that s names a status.
func ParseStatus(s string) (Status, error) {
	switch Status(s) {
	case StatusOpen, StatusApproved, StatusChangesRequested, StatusRejected, StatusAccepted, StatusUndone:
		return Status(s), nil
	}
	return "", fmt.Errorf("%q is not a changeset status", s)
}

// closed reports whether a changeset in status s is accepted or undone,
// which takes comments only.
func (s Status) closed() bool { return s == StatusAccepted || s == StatusUndone }

// Changeset is a session's diff against its base, submitted for review.
type Changeset struct {
	ID           uuid.UUID
	Session      uuid.UUID
	Repo         string
	TargetBranch string
	Intent       string
	Status       Status
	BaseCommit   gitstore.OID
	// HeadCommit is the checkpoint commit under review.
	HeadCommit gitstore.OID
	// AcceptedCommit is the commit on the target branch, once accepted.
	AcceptedCommit gitstore.OID
	AgentID        string
	// Revision counts the submissions of the session this changeset
	// carries: 1 at first, one more each time it is submitted again.
	Revision int
	// ReadSet is the base blob id of every base file the session had read
	// when it was (last) submitted; nil for none.
	ReadSet map[string]gitstore.OID
	// Selection is what a partial accept took and left out; nil when the
	// changeset was accepted whole (or not yet).
	Selection *AcceptedSelection
	// Stats sum up the diff of the current revision, computed when it was
	// submitted; nil for a changeset stored before they were kept.
	Stats *merge.Stats
	// Accepting is an accept of this changeset in flight: recorded before
	// the branch moves, cleared by the transaction that records the
	// accept, or by Reconcile when the branch did not move. nil when none
	// is.
	Accepting *Accepting
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Accepting is what an accept in flight wrote and is about to put on the
// branch: its commit, the revision it accepts, and what the record of the
// accept says. It is kept with the changeset from before the branch moves
// until the accept is recorded, so that after a crash the one commit to
// look for on the branch is known, for exactly that revision. While it is
// set, the changeset is not revised and no other accept of it starts.
type Accepting struct {
	Commit     gitstore.OID       `json:"commit"`
	Revision   int                `json:"revision"`
	Rebased    bool               `json:"rebased,omitempty"`
	Selection  *AcceptedSelection `json:"selection,omitempty"`
	StaleReads []StaleRead        `json:"stale_reads,omitempty"`
}

// AcceptedSelection is the part of a changeset a partial accept took
// (files whole, hunks by index into the revision's diff) and the part it
// left out, which stays in the session.
type AcceptedSelection struct {
	Taken   merge.Selection `json:"taken"`
	LeftOut merge.Selection `json:"left_out"`
}

// Filter selects changesets; zero fields match everything.
type Filter struct {
	Repo    string
	Status  Status
	Session uuid.UUID
	// Accepting selects the changesets with an accept in flight.
	Accepting bool
	Limit     int
}

// Review is one review of a changeset.
type Review struct {
	ID        uuid.UUID
	Changeset uuid.UUID
	Verdict   Verdict
	Body      string
	// Author is who the review is by, and AuthorKind who vouches for it
	// (empty for a review stored before that was kept).
	Author     string
	AuthorKind ReviewerKind
	Comments   []LineComment
	// Revision is the changeset revision the review looked at.
	Revision  int
	CreatedAt time.Time
}

// LineComment is a review comment on one line of a file.
type LineComment struct {
	Path string
	Line int
	Body string
}

// LayerState says whether a layer is on its branch or was undone.
type LayerState string

// Layer states.
const (
	LayerAccepted LayerState = "accepted"
	LayerUndone   LayerState = "undone"
)

// Layer is an accepted changeset on a branch.
type Layer struct {
	// ID orders the layers of a store; a newer layer has a larger ID.
	ID        int64
	Repo      string
	Branch    string
	Changeset uuid.UUID
	// Commit is the commit the accept wrote on the branch.
	Commit gitstore.OID
	State  LayerState
	// RevertCommit is the commit that undid the layer, once undone.
	RevertCommit gitstore.OID
	// Reverting is the revert commit of an undo in flight: recorded
	// before the branch moves, cleared when the undo is recorded (or by
	// Reconcile when the branch did not move). Zero when none is.
	Reverting  gitstore.OID
	AcceptedAt time.Time
	UndoneAt   time.Time
}

// Revision is one submission of a changeset: what it put under review.
type Revision struct {
	N    int
	Base gitstore.OID
	Head gitstore.OID
	At   time.Time
}
