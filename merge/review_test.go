package merge

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
		want     ReviewState
	}{
		{"no reviews", nil, 0, ReviewOpen},
		{"comments only", []Vote{v("a", VerdictComment), v("b", VerdictComment)}, 0, ReviewOpen},
		{"one approval", []Vote{v("a", VerdictApprove)}, 0, ReviewApproved},
		{"one approval of two required", []Vote{v("a", VerdictApprove)}, 2, ReviewOpen},
		{"same author twice counts once", []Vote{v("a", VerdictApprove), v("a", VerdictApprove)}, 2, ReviewOpen},
		{"two authors", []Vote{v("a", VerdictApprove), v("b", VerdictApprove)}, 2, ReviewApproved},
		{"changes requested", []Vote{v("a", VerdictApprove), v("b", VerdictRequestChanges)}, 0, ReviewChangesRequested},
		{"request withdrawn by approving", []Vote{v("b", VerdictRequestChanges), v("b", VerdictApprove)}, 0, ReviewApproved},
		{"a comment does not withdraw", []Vote{v("b", VerdictRequestChanges), v("b", VerdictComment)}, 0, ReviewChangesRequested},
		{"reject wins", []Vote{v("a", VerdictApprove), v("b", VerdictRequestChanges), v("c", VerdictReject)}, 0, ReviewRejected},
		{"reject withdrawn", []Vote{v("c", VerdictReject), v("c", VerdictApprove)}, 0, ReviewApproved},
		{"an approval without an author does not count", []Vote{v("", VerdictApprove)}, 0, ReviewOpen},
		{"nor toward the required", []Vote{v("a", VerdictApprove), v("", VerdictApprove)}, 2, ReviewOpen},
		{"anonymous approvals are not several", []Vote{v("", VerdictApprove), v("", VerdictApprove), v("a", VerdictApprove)}, 2, ReviewOpen},
		{"an anonymous request for changes holds", []Vote{v("a", VerdictApprove), v("", VerdictRequestChanges)}, 0, ReviewChangesRequested},
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
