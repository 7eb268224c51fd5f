package changeset

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/record"
)

// The vote rules: how reviews give a changeset its status. One place;
// Review and the listings' approvals both use them.

// Verdict is a review's outcome.
type Verdict string

// Review verdicts. A comment carries no vote.
const (
	VerdictApprove        Verdict = "approve"
	VerdictRequestChanges Verdict = "request_changes"
	VerdictReject         Verdict = "reject"
	VerdictComment        Verdict = "comment"
)

// ParseVerdict checks that v names a verdict.
func ParseVerdict(v string) (Verdict, error) {
	switch Verdict(v) {
	case VerdictApprove, VerdictRequestChanges, VerdictReject, VerdictComment:
		return Verdict(v), nil
	}
	return "", fmt.Errorf("verdict %q: use approve, request_changes, reject or comment", v)
}

// ReviewerKind says who vouches for a reviewer's name.
type ReviewerKind string

// Reviewer kinds. Only the daemon's own word makes a vote: a reviewer
// token names its holder, and a daemon without an admin token has one
// identity, its local user. A name the admin token merely asserts, and
// the changeset's own session, give comments.
const (
	ReviewerToken    ReviewerKind = "reviewer"
	ReviewerLocal    ReviewerKind = "local"
	ReviewerAsserted ReviewerKind = "asserted"
	ReviewerSession  ReviewerKind = "session"
)

// Reviewer is who a review is by, as the caller's credentials establish
// it (package api decides this from the token, in one place).
type Reviewer struct {
	// Name is the identity: the reviewer token's name, the local user, the
	// asserted name. For a session it is filled in from the session (its
	// agent's name, else its agent id, else "session <id>").
	Name string
	Kind ReviewerKind
	// Session is the session whose token reviews (Kind ReviewerSession).
	Session uuid.UUID
}

// vouched reports whether the daemon vouches for the reviewer's name,
// which is what lets a review vote.
func (r Reviewer) vouched() bool { return r.Kind == ReviewerToken || r.Kind == ReviewerLocal }

// countedVerdict is what a review by rv with verdict v counts as on the
// changeset of session author: its verdict when the daemon vouches for
// the reviewer, a comment for an asserted name. The changeset's own
// session may only comment: its vote is refused (record.ErrForbidden), as
// is a session's review of another session's changeset.
func countedVerdict(rv Reviewer, v Verdict, author uuid.UUID) (Verdict, error) {
	switch {
	case rv.Kind == ReviewerSession && rv.Session != author:
		return "", fmt.Errorf("%w: this token is for another session than the changeset's", record.ErrForbidden)
	case rv.Kind == ReviewerSession && v != VerdictComment:
		return "", fmt.Errorf("%w: the changeset's own session cannot %s it: its reviews are comments", record.ErrForbidden, verb(v))
	case rv.Name == "":
		return "", fmt.Errorf("%w: a review needs an author", record.ErrInvalid)
	case !rv.vouched():
		return VerdictComment, nil
	}
	return v, nil
}

func verb(v Verdict) string {
	if v == VerdictRequestChanges {
		return "request changes on"
	}
	return string(v)
}

// Vote is one review as the state rules see it: who, and what.
type Vote struct {
	Author  string
	Verdict Verdict
}

// ReviewStatus derives the status reviews give a changeset from votes in
// the order they were cast, with a policy of required approvals. Each
// author's latest non-comment verdict is their vote (so an author can
// withdraw a request for changes by approving later). Then:
//   - any author whose vote is reject: rejected;
//   - else any author whose vote is request_changes: changes_requested;
//   - else at least max(required, 1) authors approving: approved;
//   - else open.
//
// One identity is one vote: Author is the name the daemon vouches for
// (countedVerdict keeps every other review a comment). A vote with an
// empty author (stored before authors were vouched for) is nobody's
// approval: it never counts toward the required approvals (nor makes a
// changeset approved), while an anonymous reject or request for changes
// still holds it back.
func ReviewStatus(votes []Vote, required int) Status {
	approvals := 0
	changes := false
	for author, v := range latestVotes(votes) {
		switch v {
		case VerdictReject:
			return StatusRejected
		case VerdictRequestChanges:
			changes = true
		case VerdictApprove:
			if author != "" {
				approvals++
			}
		}
	}
	switch {
	case changes:
		return StatusChangesRequested
	case approvals >= max(required, 1):
		return StatusApproved
	}
	return StatusOpen
}

// Approvals counts the authors whose vote (latest non-comment verdict,
// as in ReviewStatus) is approve.
func Approvals(votes []Vote) int {
	n := 0
	for _, v := range latestVotes(votes) {
		if v == VerdictApprove {
			n++
		}
	}
	return n
}

// latestVotes is each author's latest non-comment verdict.
func latestVotes(votes []Vote) map[string]Verdict {
	latest := map[string]Verdict{}
	for _, v := range votes {
		if v.Verdict != VerdictComment && v.Verdict != "" {
			latest[v.Author] = v.Verdict
		}
	}
	return latest
}

// votes are the votes of the reviews of revision rev.
func votes(reviews []Review, rev int) []Vote {
	var out []Vote
	for _, r := range reviews {
		if r.Revision == rev {
			out = append(out, Vote{Author: r.Author, Verdict: r.Verdict})
		}
	}
	return out
}
