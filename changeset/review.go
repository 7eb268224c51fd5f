package changeset

import "fmt"

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
// A vote with an empty author is nobody's approval: it never counts
// toward the required approvals (nor makes a changeset approved), while
// an anonymous reject or request for changes still holds it back.
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
