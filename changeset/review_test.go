package changeset

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReviewStatus(t *testing.T) {
	v := func(author string, verdict Verdict) Vote { return Vote{Author: author, Verdict: verdict} }
	cases := []struct {
		name     string
		votes    []Vote
		required int
		want     Status
	}{
		{"no reviews", nil, 0, StatusOpen},
		{"comments only", []Vote{v("a", VerdictComment), v("b", VerdictComment)}, 0, StatusOpen},
		{"one approval", []Vote{v("a", VerdictApprove)}, 0, StatusApproved},
		{"one approval of two required", []Vote{v("a", VerdictApprove)}, 2, StatusOpen},
		{"same author twice counts once", []Vote{v("a", VerdictApprove), v("a", VerdictApprove)}, 2, StatusOpen},
		{"two authors", []Vote{v("a", VerdictApprove), v("b", VerdictApprove)}, 2, StatusApproved},
		{"changes requested", []Vote{v("a", VerdictApprove), v("b", VerdictRequestChanges)}, 0, StatusChangesRequested},
		{"request withdrawn by approving", []Vote{v("b", VerdictRequestChanges), v("b", VerdictApprove)}, 0, StatusApproved},
		{"a comment does not withdraw", []Vote{v("b", VerdictRequestChanges), v("b", VerdictComment)}, 0, StatusChangesRequested},
		{"reject wins", []Vote{v("a", VerdictApprove), v("b", VerdictRequestChanges), v("c", VerdictReject)}, 0, StatusRejected},
		{"reject withdrawn", []Vote{v("c", VerdictReject), v("c", VerdictApprove)}, 0, StatusApproved},
		{"an approval without an author does not count", []Vote{v("", VerdictApprove)}, 0, StatusOpen},
		{"nor toward the required", []Vote{v("a", VerdictApprove), v("", VerdictApprove)}, 2, StatusOpen},
		{"anonymous approvals are not several", []Vote{v("", VerdictApprove), v("", VerdictApprove), v("a", VerdictApprove)}, 2, StatusOpen},
		{"an anonymous request for changes holds", []Vote{v("a", VerdictApprove), v("", VerdictRequestChanges)}, 0, StatusChangesRequested},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, ReviewStatus(c.votes, c.required))
		})
	}
}

func TestParseVerdict(t *testing.T) {
	for _, ok := range []string{"approve", "request_changes", "reject", "comment"} {
		got, err := ParseVerdict(ok)
		assert.NoError(t, err)
		assert.Equal(t, Verdict(ok), got)
	}
	_, err := ParseVerdict("lgtm")
	assert.Error(t, err)
}
