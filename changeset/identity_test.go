package changeset_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
)

// TestReviewIdentity: approvals count once per identity the daemon vouches
// for (reviewer tokens, the local user); a name only asserted counts as a
// comment, whatever its verdict; the changeset's own session may only
// comment, and another session not at all.
func TestReviewIdentity(t *testing.T) {
	token := func(name string) changeset.Reviewer {
		return changeset.Reviewer{Name: name, Kind: changeset.ReviewerToken}
	}
	asserted := func(name string) changeset.Reviewer {
		return changeset.Reviewer{Name: name, Kind: changeset.ReviewerAsserted}
	}
	local := changeset.Reviewer{Name: "lee", Kind: changeset.ReviewerLocal}
	type step struct {
		by      changeset.Reviewer
		verdict changeset.Verdict
		counted changeset.Verdict // as recorded
	}
	tests := []struct {
		name     string
		required int
		steps    []step
		want     changeset.Status
	}{
		{"two reviewer tokens are two approvals", 2, []step{
			{token("alice"), changeset.VerdictApprove, changeset.VerdictApprove},
			{token("bob"), changeset.VerdictApprove, changeset.VerdictApprove},
		}, changeset.StatusApproved},
		{"one reviewer token twice is one", 2, []step{
			{token("alice"), changeset.VerdictApprove, changeset.VerdictApprove},
			{token("alice"), changeset.VerdictApprove, changeset.VerdictApprove},
		}, changeset.StatusOpen},
		{"asserted names are comments", 1, []step{
			{asserted("alice"), changeset.VerdictApprove, changeset.VerdictComment},
			{asserted("bob"), changeset.VerdictApprove, changeset.VerdictComment},
		}, changeset.StatusOpen},
		{"an asserted rejection holds nothing back", 1, []step{
			{token("alice"), changeset.VerdictApprove, changeset.VerdictApprove},
			{asserted("mallory"), changeset.VerdictReject, changeset.VerdictComment},
		}, changeset.StatusApproved},
		{"an asserted name beside a token of the same name", 2, []step{
			{token("alice"), changeset.VerdictApprove, changeset.VerdictApprove},
			{asserted("bob"), changeset.VerdictApprove, changeset.VerdictComment},
		}, changeset.StatusOpen},
		{"the local user counts once", 2, []step{
			{local, changeset.VerdictApprove, changeset.VerdictApprove},
			{local, changeset.VerdictApprove, changeset.VerdictApprove},
		}, changeset.StatusOpen},
		{"an approval with none required approves", 0, []step{
			{local, changeset.VerdictApprove, changeset.VerdictApprove},
		}, changeset.StatusApproved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newChangesetEnv(t)
			ctx := t.Context()
			_, err := e.en.Repos.SetPolicy(ctx, repos.Policy{Repo: "bare", RequiredApprovals: tt.required})
			require.NoError(t, err)
			c := e.submit(e.session(map[string]string{"a.txt": "x\n"}), "identity")
			var v changeset.View
			for _, st := range tt.steps {
				var rv changeset.Review
				rv, v, err = e.cs.Review(ctx, c.ID, changeset.ReviewInput{Verdict: st.verdict, Reviewer: st.by})
				require.NoError(t, err)
				assert.Equal(t, st.counted, rv.Verdict)
				assert.Equal(t, st.by.Name, rv.Author)
				assert.Equal(t, st.by.Kind, rv.AuthorKind)
			}
			assert.Equal(t, tt.want, v.Status)
			stored, err := e.cs.Reviews(ctx, c.ID)
			require.NoError(t, err)
			require.Len(t, stored, len(tt.steps))
			for i, st := range tt.steps {
				assert.Equal(t, st.counted, stored[i].Verdict, "stored as it counts")
				assert.Equal(t, st.by.Kind, stored[i].AuthorKind)
			}
		})
	}
}

func TestReviewBySession(t *testing.T) {
	e := newChangesetEnv(t)
	ctx := t.Context()
	s := e.session(map[string]string{"a.txt": "mine\n"})
	other := e.session(map[string]string{"b.txt": "theirs\n"})
	c := e.submit(s, "own review")
	self := changeset.Reviewer{Kind: changeset.ReviewerSession, Session: s.ID}
	for _, v := range []changeset.Verdict{changeset.VerdictApprove, changeset.VerdictRequestChanges, changeset.VerdictReject} {
		_, _, err := e.cs.Review(ctx, c.ID, changeset.ReviewInput{Verdict: v, Reviewer: self})
		assert.ErrorIs(t, err, record.ErrForbidden, "the author's session cannot %s", v)
	}
	got, err := e.cs.Get(ctx, c.ID)
	require.NoError(t, err)
	assert.Equal(t, changeset.StatusOpen, got.Status)
	assert.Empty(t, mustReviews(t, e, c), "a refused review records nothing")

	rv, _, err := e.cs.Review(ctx, c.ID, changeset.ReviewInput{Verdict: changeset.VerdictComment, Body: "done as asked", Reviewer: self})
	require.NoError(t, err)
	assert.Equal(t, "agent-1", rv.Author, "a session reviews as its agent")
	assert.Equal(t, changeset.ReviewerSession, rv.AuthorKind)

	_, _, err = e.cs.Review(ctx, c.ID, changeset.ReviewInput{Verdict: changeset.VerdictComment,
		Reviewer: changeset.Reviewer{Kind: changeset.ReviewerSession, Session: other.ID}})
	assert.ErrorIs(t, err, record.ErrForbidden, "another session cannot review")

	_, _, err = e.cs.Review(ctx, c.ID, changeset.ReviewInput{Verdict: changeset.VerdictApprove, Reviewer: changeset.Reviewer{Kind: changeset.ReviewerToken}})
	assert.ErrorIs(t, err, record.ErrInvalid, "a review needs an author")
}

func mustReviews(t *testing.T, e *csEnv, c changeset.Changeset) []changeset.Review {
	t.Helper()
	rs, err := e.cs.Reviews(t.Context(), c.ID)
	require.NoError(t, err)
	return rs
}

// TestAcceptAgain: accepting an accepted changeset is a conflict that says
// so once.
func TestAcceptAgain(t *testing.T) {
	e := newChangesetEnv(t)
	c := e.submit(e.session(map[string]string{"a.txt": "x\n"}), "once")
	res := e.accept(c)
	_, err := e.cs.Accept(t.Context(), c.ID, changeset.AcceptOptions{})
	require.ErrorIs(t, err, record.ErrConflict)
	var ce *record.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "accepted", ce.Current)
	msg := err.Error()
	assert.Contains(t, msg, "already accepted, as "+res.Commit.String()+" on main")
	assert.Equal(t, 1, strings.Count(msg, "accepted"), "said once: %s", msg)
	assert.NotContains(t, msg, "conflict")
}

// TestTargetBranch is the table of the target branch rule, on submit: a
// branch name or refs/heads/…, and what git would resolve the name to
// must be that branch (or nothing yet).
func TestTargetBranch(t *testing.T) {
	e := newChangesetEnv(t)
	ctx := t.Context()
	main := e.bgit("rev-parse", "main")
	e.bgit("tag", "-f", "v1", "main")
	e.bgit("tag", "both", "main")
	e.bgit("branch", "both", "main")
	e.bgit("branch", "topic", "main")
	e.bgit("update-ref", "refs/remotes/origin/feature", "main")
	other := e.session(map[string]string{"o.txt": "o\n"})
	tests := []struct {
		target string
		want   string // the stored branch; "" when refused
	}{
		{"main", "main"},
		{"refs/heads/main", "main"},
		{"topic", "topic"},
		{"new/branch", "new/branch"},
		{"refs/heads/v1", "v1"}, // in full it is a (new) branch, beside the tag
		{"refs/heads/both", "both"},
		{"a@b", "a@b"},
		{"HEAD", ""},
		{"@", ""},
		{"-x", ""},
		{"refs/heads/-x", ""},
		{"refs/heads/HEAD", ""},
		{"refs/sessions/" + other.ID.String() + "/head", ""},
		{"refs/tags/v1", ""},
		{"v1", ""},
		{"both", ""}, // git resolves it to the tag
		{"origin/feature", ""},
		{"refs/remotes/origin/feature", ""},
		{"refs/heads/", ""},
		{"refs/heads/refs/x", ""},
		{main, ""},
		{main[:10], ""},
		{strings.Repeat("0", 40), ""},
		{"a..b", ""},
		{"a b", ""},
		{"x.lock", ""},
		{"main~1", ""},
		{"main^{commit}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			s := e.session(map[string]string{"a.txt": "x\n"})
			v, err := e.cs.Submit(ctx, s.ID, changeset.SubmitOptions{TargetBranch: tt.target})
			if tt.want == "" {
				require.ErrorIs(t, err, record.ErrInvalid)
				assert.Contains(t, err.Error(), `target_branch "`+tt.target+`"`, "names the field and the value")
				got, err := e.m.Get(ctx, s.ID)
				require.NoError(t, err)
				assert.Equal(t, session.StateActive, got.State, "a refused submit changes nothing")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, v.TargetBranch)
			// A new revision keeps the target, checked as the branch it is.
			e.write(s.ID, "a.txt", "y\n")
			v2, err := e.cs.Submit(ctx, s.ID, changeset.SubmitOptions{})
			require.NoError(t, err)
			assert.Equal(t, 2, v2.Revision)
			assert.Equal(t, tt.want, v2.TargetBranch)
		})
	}
}

// TestTargetBranchDefault: without a target the session's base branch is
// the target, also when a tag has its name.
func TestTargetBranchDefault(t *testing.T) {
	e := newChangesetEnv(t)
	e.bgit("branch", "v1", "main") // beside the tag v1
	s := e.create(session.CreateOptions{Repo: "bare", Base: "refs/heads/v1"})
	require.Equal(t, "v1", s.BaseRef)
	e.write(s.ID, "a.txt", "x\n")
	v, err := e.cs.Submit(t.Context(), s.ID, changeset.SubmitOptions{})
	require.NoError(t, err)
	assert.Equal(t, "v1", v.TargetBranch)
	res := e.accept(v.Changeset)
	assert.Equal(t, res.Commit.String(), e.bgit("rev-parse", "refs/heads/v1"))
}
