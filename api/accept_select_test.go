package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
)

// TestAcceptSelectHTTP: the accept route's select and dry_run on the wire:
// hunk indexes are those of the JSON diff, a bad selection is 400
// bad_request naming the file and nothing is written, a dry run answers
// with the commit's diff, and the accepted changeset records what was
// taken and left out.
func TestAcceptSelectHTTP(t *testing.T) {
	ctx := t.Context()
	bare := testrepo.BuildBare(t, "small")
	en := newEngine(t, bare)
	m := en.Sessions
	srv := httptest.NewServer(New(Config{Manager: m, Repos: en.Repos, Events: en.Events, Exec: en.Exec, Changesets: en.Changesets}))
	t.Cleanup(srv.Close)
	call := func(method, path, body string, out any) int {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		if out != nil {
			require.NoError(t, json.Unmarshal(data, out), string(data))
		}
		return resp.StatusCode
	}
	text := func(edit map[int]string) string {
		var b bytes.Buffer
		for i := 1; i <= 30; i++ {
			if s, ok := edit[i]; ok {
				b.WriteString(s + "\n")
			} else {
				fmt.Fprintf(&b, "line %d\n", i)
			}
		}
		return b.String()
	}
	s, err := m.Create(ctx, session.CreateOptions{Repo: "r", Base: "main"})
	require.NoError(t, err)
	_, _, err = m.Write(ctx, s.ID, "doc.txt", []byte(text(nil)), session.WriteOptions{})
	require.NoError(t, err)
	var c apitypes.Changeset
	require.Equal(t, 201, call("POST", "/v1/sessions/"+s.ID.String()+"/changesets", `{}`, &c))
	require.Equal(t, 200, call("POST", "/v1/changesets/"+c.ID+"/accept", `{}`, nil))

	s, err = m.Create(ctx, session.CreateOptions{Repo: "r", Base: "main"})
	require.NoError(t, err)
	_, _, err = m.Write(ctx, s.ID, "doc.txt", []byte(text(map[int]string{1: "one", 15: "fifteen", 30: "thirty"})), session.WriteOptions{})
	require.NoError(t, err)
	require.Equal(t, 201, call("POST", "/v1/sessions/"+s.ID.String()+"/changesets", `{}`, &c))
	var d apitypes.Diff
	require.Equal(t, 200, call("GET", "/v1/changesets/"+c.ID+"/diff?format=json", "", &d))
	require.Len(t, d.Files, 1)
	require.Len(t, d.Files[0].Hunks, 3)
	head := testrepo.Git(t, bare, "rev-parse", "main")

	var e apitypes.ErrorBody
	for _, body := range []string{
		`{"select":{"hunks":{"doc.txt":[3]}}}`,
		`{"select":{"files":["nope.txt"]}}`,
		`{"select":{"hunks":{"doc.txt":[0]},"lines":[1]}}`,
	} {
		assert.Equal(t, 400, call("POST", "/v1/changesets/"+c.ID+"/accept", body, &e), body)
		assert.Equal(t, apitypes.CodeBadRequest, e.Error.Code, body)
	}
	assert.Contains(t, e.Error.Message, "lines")
	assert.Equal(t, head, testrepo.Git(t, bare, "rev-parse", "main"), "nothing written")

	var dry apitypes.AcceptResult
	require.Equal(t, 200, call("POST", "/v1/changesets/"+c.ID+"/accept", `{"select":{"hunks":{"doc.txt":[0,2]}},"dry_run":true}`, &dry))
	assert.True(t, dry.DryRun)
	assert.Equal(t, head, dry.Head)
	require.NotNil(t, dry.Diff)
	require.Len(t, dry.Diff.Files, 1)
	assert.Len(t, dry.Diff.Files[0].Hunks, 2)
	assert.Empty(t, dry.Commit)
	assert.Equal(t, head, testrepo.Git(t, bare, "rev-parse", "main"), "a dry run writes nothing")

	var res apitypes.AcceptResult
	require.Equal(t, 200, call("POST", "/v1/changesets/"+c.ID+"/accept", `{"select":{"hunks":{"doc.txt":[0,2]}}}`, &res))
	assert.Equal(t, res.Commit, testrepo.Git(t, bare, "rev-parse", "main"))
	assert.Equal(t, text(map[int]string{1: "one", 30: "thirty"}), testrepo.Git(t, bare, "show", "main:doc.txt")+"\n")
	assert.True(t, res.SessionRebased)
	require.NotNil(t, res.Selection)
	assert.Equal(t, []int{1}, res.Selection.LeftOut.Hunks["doc.txt"])
	var got apitypes.Changeset
	require.Equal(t, 200, call("GET", "/v1/changesets/"+c.ID, "", &got))
	require.NotNil(t, got.Selection)
	assert.Equal(t, []int{0, 2}, got.Selection.Taken.Hunks["doc.txt"])

	var rest apitypes.Diff
	require.Equal(t, 200, call("GET", "/v1/sessions/"+s.ID.String()+"/diff?format=json", "", &rest))
	require.Len(t, rest.Files, 1)
	require.Len(t, rest.Files[0].Hunks, 1)
	assert.Contains(t, rest.Files[0].Hunks[0].Lines, "+fifteen\n")
}

// TestChangesetRevisionsHTTP: every submission is a revision with its
// own diff, and the list counts the current revision's approvals.
func TestChangesetRevisionsHTTP(t *testing.T) {
	ctx := t.Context()
	en := newEngine(t, testrepo.BuildBare(t, "small"))
	m := en.Sessions
	cs := en.Changesets
	srv := httptest.NewServer(New(Config{Manager: m, Repos: en.Repos, Events: en.Events, Exec: en.Exec, Changesets: cs}))
	t.Cleanup(srv.Close)
	getJSON := func(path string, out any) int {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
		return resp.StatusCode
	}
	s, err := m.Create(ctx, session.CreateOptions{Repo: "r", Base: "main"})
	require.NoError(t, err)
	_, _, err = m.Write(ctx, s.ID, "a.txt", []byte("first\n"), session.WriteOptions{})
	require.NoError(t, err)
	c1, err := cs.Submit(ctx, s.ID, changeset.SubmitOptions{Intent: "a"})
	require.NoError(t, err)
	_, _, err = cs.Review(ctx, c1.ID, changeset.ReviewInput{Verdict: changeset.VerdictApprove, Reviewer: changeset.Reviewer{Name: "ann", Kind: changeset.ReviewerToken}})
	require.NoError(t, err)
	var list struct{ Changesets []apitypes.Changeset }
	require.Equal(t, 200, getJSON("/v1/changesets", &list))
	require.Len(t, list.Changesets, 1)
	require.NotNil(t, list.Changesets[0].Approvals)
	assert.Equal(t, 1, *list.Changesets[0].Approvals)

	_, _, err = m.Write(ctx, s.ID, "b.txt", []byte("second\n"), session.WriteOptions{})
	require.NoError(t, err)
	c2, err := cs.Submit(ctx, s.ID, changeset.SubmitOptions{})
	require.NoError(t, err)
	require.Equal(t, c1.ID, c2.ID)
	require.Equal(t, 2, c2.Revision)

	var revs struct{ Revisions []apitypes.Revision }
	require.Equal(t, 200, getJSON("/v1/changesets/"+c1.ID.String()+"/revisions", &revs))
	require.Len(t, revs.Revisions, 2)
	assert.Equal(t, c1.HeadCommit.String(), revs.Revisions[0].HeadCommit)
	assert.Equal(t, c2.HeadCommit.String(), revs.Revisions[1].HeadCommit)
	var d1, d2 apitypes.Diff
	require.Equal(t, 200, getJSON("/v1/changesets/"+c1.ID.String()+"/diff?format=json&revision=1", &d1))
	require.Equal(t, 200, getJSON("/v1/changesets/"+c1.ID.String()+"/diff?format=json", &d2))
	assert.Len(t, d1.Files, 1)
	assert.Len(t, d2.Files, 2)
	var e apitypes.ErrorBody
	assert.Equal(t, 404, getJSON("/v1/changesets/"+c1.ID.String()+"/diff?format=json&revision=3", &e))

	require.Equal(t, 200, getJSON("/v1/changesets", &list))
	assert.Equal(t, 0, *list.Changesets[0].Approvals, "approvals of an earlier revision do not count")
}
