package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
)

// identityEnv is a daemon with an admin token, one changeset under review
// by session s, and a policy of two approvals.
type identityEnv struct {
	*daemonEnv
	s  apitypes.Session
	cs apitypes.Changeset
}

func newIdentityEnv(t *testing.T, cfg Config) *identityEnv {
	t.Helper()
	e := &identityEnv{daemonEnv: newDaemonEnv(t, cfg)}
	admin := bearer(cfg.AdminToken)
	e.must(http.StatusCreated, req{"POST", "/v1/sessions", map[string]any{"repo": "r", "base": "main", "agent_id": "agent-7"}, admin}, &e.s)
	token := admin
	if e.s.Token != "" {
		token = bearer(e.s.Token)
	}
	e.must(http.StatusCreated, req{"PUT", "/v1/sessions/" + e.s.ID + "/files/new.txt", "new\n", token}, nil)
	e.must(http.StatusCreated, req{"POST", "/v1/sessions/" + e.s.ID + "/changesets", nil, token}, &e.cs)
	e.must(http.StatusOK, req{"PUT", "/v1/repos/r/policy", map[string]any{"required_approvals": 2}, admin}, nil)
	return e
}

func (e *identityEnv) review(token, verdict, author string) (int, apitypes.ReviewResult, []byte) {
	e.t.Helper()
	status, body := e.do(req{"POST", "/v1/changesets/" + e.cs.ID + "/reviews", map[string]any{"verdict": verdict, "author": author}, bearer(token)})
	var res apitypes.ReviewResult
	if status == http.StatusCreated {
		require.NoError(e.t, json.Unmarshal(body, &res))
	}
	return status, res, body
}

func (e *identityEnv) reviewer(name string) string {
	e.t.Helper()
	var r apitypes.Reviewer
	e.must(http.StatusCreated, req{"POST", "/v1/reviewers", map[string]any{"name": name}, bearer(testAdminToken)}, &r)
	assert.Equal(e.t, name, r.Name)
	return r.Token
}

// TestReviewerTokens: two reviewer tokens are two approvals; the admin
// posing as two names is none (both reviews are comments); one reviewer
// approving twice is one; a forged or altered token is no one.
func TestReviewerTokens(t *testing.T) {
	e := newIdentityEnv(t, Config{AdminToken: testAdminToken})
	alice, bob := e.reviewer("alice"), e.reviewer("Bob Smith")
	assert.Equal(t, alice, e.reviewer("alice"), "a token is derived from the name: asking again gives the same")
	assert.True(t, strings.HasPrefix(alice, "srt."))

	// The admin token asserts names: comments, whatever the verdict.
	for _, name := range []string{"alice", "bob", ""} {
		status, res, body := e.review(testAdminToken, "approve", name)
		require.Equal(t, http.StatusCreated, status, "%s", body)
		assert.Equal(t, "comment", res.Review.Verdict, "an asserted name approves nothing")
		assert.Equal(t, apitypes.AuthorAsserted, res.Review.AuthorKind)
		assert.NotEmpty(t, res.Review.Author)
		assert.Equal(t, "open", res.Changeset.Status)
	}
	e.must(http.StatusConflict, req{"POST", "/v1/changesets/" + e.cs.ID + "/accept", nil, bearer(testAdminToken)}, nil)

	status, res, body := e.review(alice, "approve", "mallory")
	require.Equal(t, http.StatusCreated, status, "%s", body)
	assert.Equal(t, "alice", res.Review.Author, "the token's name, not the asserted one")
	assert.Equal(t, apitypes.AuthorReviewer, res.Review.AuthorKind)
	assert.Equal(t, "approve", res.Review.Verdict)
	assert.Equal(t, "open", res.Changeset.Status)
	_, res, _ = e.review(alice, "approve", "")
	assert.Equal(t, "open", res.Changeset.Status, "one identity is one approval")

	for _, forged := range []string{
		"srt." + strings.Split(alice, ".")[1] + ".AAAA",
		strings.Replace(alice, strings.Split(alice, ".")[1], strings.Split(bob, ".")[1], 1),
		strings.Replace(e.s.Token, "sst.", "srt.", 1),
	} {
		status, _, _ := e.review(forged, "approve", "")
		assert.Equal(t, http.StatusUnauthorized, status, "forged %q", forged)
	}

	_, res, _ = e.review(bob, "approve", "")
	assert.Equal(t, "Bob Smith", res.Review.Author)
	assert.Equal(t, "approved", res.Changeset.Status, "two identities")
	var list struct{ Changesets []apitypes.Changeset }
	e.must(http.StatusOK, req{"GET", "/v1/changesets?repo=r", nil, bearer(alice)}, &list)
	require.Len(t, list.Changesets, 1)
	require.NotNil(t, list.Changesets[0].Approvals)
	assert.Equal(t, 2, *list.Changesets[0].Approvals)
}

// TestReviewerTokenScope: what a reviewer token reaches, and what not.
func TestReviewerTokenScope(t *testing.T) {
	e := newIdentityEnv(t, Config{AdminToken: testAdminToken})
	rita := bearer(e.reviewer("rita"))
	cs := "/v1/changesets/" + e.cs.ID
	for _, path := range []string{"/v1/changesets", cs, cs + "/diff", cs + "/revisions", "/v1/repos/r/layers?branch=main", "/v1/repos/r/policy"} {
		status, body := e.do(req{"GET", path, nil, rita})
		assert.Equal(t, http.StatusOK, status, "%s: %s", path, body)
	}
	for _, r := range []req{
		{"POST", cs + "/accept", map[string]any{}, rita},
		{"POST", cs + "/undo", map[string]any{}, rita},
		{"PUT", "/v1/repos/r/policy", map[string]any{"required_approvals": 0}, rita},
		{"POST", "/v1/reviewers", map[string]any{"name": "rita2"}, rita},
		{"GET", "/v1/sessions", nil, rita},
		{"GET", "/v1/sessions/" + e.s.ID, nil, rita},
		{"GET", "/v1/sessions/" + e.s.ID + "/files/a.txt", nil, rita},
		{"POST", "/v1/sessions", map[string]any{"repo": "r"}, rita},
		{"GET", "/v1/repos", nil, rita},
		{"POST", "/mcp", map[string]any{}, rita},
	} {
		status, body := e.do(r)
		assert.Equal(t, http.StatusForbidden, status, "%s %s: %s", r.method, r.path, body)
	}
	for _, name := range []string{"", " alice", "alice ", "a\nb", strings.Repeat("x", 201)} {
		status, body := e.do(req{"POST", "/v1/reviewers", map[string]any{"name": name}, bearer(testAdminToken)})
		assert.Equal(t, http.StatusBadRequest, status, "name %q: %s", name, body)
	}
}

// TestAuthorSessionCannotApprove: the changeset's own session comments
// and never votes; another session's token does neither.
func TestAuthorSessionCannotApprove(t *testing.T) {
	e := newIdentityEnv(t, Config{AdminToken: testAdminToken})
	e.must(http.StatusOK, req{"PUT", "/v1/repos/r/policy", map[string]any{"required_approvals": 0}, bearer(testAdminToken)}, nil)
	var other apitypes.Session
	e.must(http.StatusCreated, req{"POST", "/v1/sessions", map[string]any{"repo": "r"}, bearer(testAdminToken)}, &other)
	for _, v := range []string{"approve", "request_changes", "reject"} {
		status, _, body := e.review(e.s.Token, v, "")
		assert.Equal(t, http.StatusForbidden, status, "%s: %s", v, body)
		assert.Contains(t, string(body), "own session")
	}
	status, _, body := e.review(other.Token, "comment", "")
	assert.Equal(t, http.StatusForbidden, status, "%s", body)
	var view apitypes.Changeset
	e.must(http.StatusOK, req{"GET", "/v1/changesets/" + e.cs.ID, nil, bearer(testAdminToken)}, &view)
	assert.Equal(t, "open", view.Status)
	assert.Empty(t, view.Reviews, "refused reviews record nothing")

	status, res, body := e.review(e.s.Token, "comment", "someone else")
	require.Equal(t, http.StatusCreated, status, "%s", body)
	assert.Equal(t, "agent-7", res.Review.Author, "a session comments as its agent")
	assert.Equal(t, apitypes.AuthorSession, res.Review.AuthorKind)
}

// TestLocalIdentity: without an admin token the daemon has one identity,
// its local user: every review is by it, whatever name it asserts, so its
// approvals count once; reviewer tokens are refused.
func TestLocalIdentity(t *testing.T) {
	e := newIdentityEnv(t, Config{LocalUser: "Lee Local"})
	for _, name := range []string{"alice", "bob", ""} {
		status, res, body := e.review("", "approve", name)
		require.Equal(t, http.StatusCreated, status, "%s", body)
		assert.Equal(t, "Lee Local", res.Review.Author)
		assert.Equal(t, apitypes.AuthorLocal, res.Review.AuthorKind)
		assert.Equal(t, "approve", res.Review.Verdict)
		assert.Equal(t, "open", res.Changeset.Status, "two required, one identity")
	}
	e.must(http.StatusOK, req{"PUT", "/v1/repos/r/policy", map[string]any{"required_approvals": 1}, nil}, nil)
	_, res, _ := e.review("", "approve", "")
	assert.Equal(t, "approved", res.Changeset.Status)
	status, body := e.do(req{"POST", "/v1/reviewers", map[string]any{"name": "alice"}, nil})
	assert.Equal(t, http.StatusBadRequest, status, "%s", body)
	assert.Contains(t, string(body), "Lee Local")
}
