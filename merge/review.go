package merge

import "fmt"

// Verdict is the outcome of one review.
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

// ReviewState is where a changeset's reviews leave it.
type ReviewState string

// Review states; they are the changeset statuses before accept.
const (
	ReviewOpen             ReviewState = "open"
	ReviewApproved         ReviewState = "approved"
	ReviewChangesRequested ReviewState = "changes_requested"
	ReviewRejected         ReviewState = "rejected"
)

// Vote is one review as the state rules see it: who, and what.
type Vote struct {
	Author  string
	Verdict Verdict
}

// ReviewStatus derives the review state from votes in the order they were
// cast, with a policy of required approvals. Each author's latest
// non-comment verdict is their vote (so an author can withdraw a request
// for changes by approving later). Then:
//   - any author whose vote is reject: rejected;
//   - else any author whose vote is request_changes: changes_requested;
//   - else at least max(required, 1) authors approving: approved;
//   - else open.
//
// A vote with an empty author is nobody's approval: it never counts
// toward the required approvals (nor makes a changeset approved), while
// an anonymous reject or request for changes still holds it back.
func ReviewStatus(votes []Vote, required int) ReviewState {
	latest := map[string]Verdict{}
	for _, v := range votes {
		if v.Verdict == VerdictComment || v.Verdict == "" {
			continue
		}
		latest[v.Author] = v.Verdict
	}
	approvals := 0
	changes := false
	for author, v := range latest {
		switch v {
		case VerdictReject:
			return ReviewRejected
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
		return ReviewChangesRequested
	case approvals >= max(required, 1):
		return ReviewApproved
	}
	return ReviewOpen
}

// Approvals counts the authors whose vote (latest non-comment verdict,
// as in ReviewStatus) is approve.
func Approvals(votes []Vote) int {
	latest := map[string]Verdict{}
	for _, v := range votes {
		if v.Verdict != VerdictComment && v.Verdict != "" {
			latest[v.Author] = v.Verdict
		}
	}
	n := 0
	for _, v := range latest {
		if v == VerdictApprove {
			n++
		}
	}
	return n
}
