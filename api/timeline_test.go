package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
)

// TestChangesetTimeline: GET /v1/changesets/{id}/timeline lists the
// checkpoints and revisions, the review followed by its line comment, the
// accept with its commit, in order; an unknown changeset is 404, as is an id
// that is no UUID.
func TestChangesetTimeline(t *testing.T) {
	e := newDaemonEnv(t, Config{})
	ts := &testServer{t: t, URL: e.srv.URL, m: e.m, repo: e.repo}
	sid := ts.newSession()
	sess := "/v1/sessions/" + sid
	put := func(content string) {
		t.Helper()
		r := ts.call("PUT", sess+"/files/a.txt", []byte(content))
		require.Contains(t, []int{200, 201}, r.StatusCode, "%s", r.body)
	}
	var cs apitypes.Changeset
	submit := func() {
		t.Helper()
		r := ts.call("POST", sess+"/changesets", []byte(`{"intent":"timeline"}`))
		require.Contains(t, []int{200, 201}, r.StatusCode, "%s", r.body)
		require.NoError(t, json.Unmarshal(r.body, &cs))
	}
	put("one\n")
	submit()
	r := ts.call("POST", "/v1/changesets/"+cs.ID+"/reviews", []byte(`{"verdict":"comment","body":"hm","comments":[{"path":"a.txt","line":1,"body":"why one?"}]}`))
	require.Equal(t, 201, r.StatusCode, "%s", r.body)
	put("two\n")
	submit()
	require.Equal(t, 2, cs.Revision)
	r = ts.call("POST", "/v1/changesets/"+cs.ID+"/accept", []byte(`{}`))
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	var acc apitypes.AcceptResult
	require.NoError(t, json.Unmarshal(r.body, &acc))

	r = ts.call("GET", "/v1/changesets/"+cs.ID+"/timeline", nil)
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	var tl apitypes.Timeline
	require.NoError(t, json.Unmarshal(r.body, &tl))
	var kinds []string
	for _, en := range tl.Entries {
		kinds = append(kinds, en.Kind)
	}
	assert.Equal(t, []string{"checkpoint", "revision", "review", "comment", "checkpoint", "revision", "accepted"}, kinds)
	assert.Equal(t, sid, tl.Session)
	require.Len(t, tl.Entries, 7)
	assert.Equal(t, tl.Entries[0].Commit, tl.Entries[1].Commit, "a revision's head is the checkpoint before it")
	assert.Equal(t, 1, tl.Entries[2].Review.Revision)
	assert.Equal(t, "why one?", tl.Entries[3].Comment.Body)
	assert.Equal(t, cs.HeadCommit, tl.Entries[5].Commit)
	assert.Equal(t, acc.Commit, tl.Entries[6].Commit)

	r = ts.call("GET", "/v1/changesets/00000000-0000-0000-0000-000000000000/timeline", nil)
	assert.Equal(t, 404, r.StatusCode, "%s", r.body)
	r = ts.call("GET", "/v1/changesets/nope/timeline", nil)
	assert.Equal(t, 404, r.StatusCode, "%s", r.body, "an id that is no UUID names no changeset")
}

// TestSessionRuns: GET /v1/sessions/{id}/runs lists every command the
// session ran, oldest first, one that changed no file too (which the
// mutation log does not have), with exit code and output; an unknown
// session is 404.
func TestSessionRuns(t *testing.T) {
	plainRunOnly(t, "commands in namespaces listed as runs")
	e := newDaemonEnv(t, Config{})
	ts := &testServer{t: t, URL: e.srv.URL, m: e.m, repo: e.repo}
	sid := ts.newSession()
	for _, argv := range [][]string{{"sh", "-c", "echo made > made.txt"}, {"sh", "-c", "echo failing; exit 3"}} {
		body, _ := json.Marshal(map[string]any{"argv": argv})
		r := ts.call("POST", "/v1/sessions/"+sid+"/exec", body)
		require.Equal(t, 200, r.StatusCode, "%s", r.body)
	}
	r := ts.call("GET", "/v1/sessions/"+sid+"/runs", nil)
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	var runs apitypes.Runs
	require.NoError(t, json.Unmarshal(r.body, &runs))
	require.Len(t, runs.Runs, 2)
	assert.Equal(t, []string{"sh", "-c", "echo made > made.txt"}, runs.Runs[0].Argv)
	assert.Equal(t, 0, runs.Runs[0].ExitCode)
	assert.True(t, runs.Runs[0].ChangedFiles)
	assert.Equal(t, 3, runs.Runs[1].ExitCode)
	assert.False(t, runs.Runs[1].ChangedFiles)
	assert.Equal(t, "failing\n", runs.Runs[1].OutputTail)

	r = ts.call("GET", "/v1/sessions/00000000-0000-0000-0000-000000000000/runs", nil)
	assert.Equal(t, 404, r.StatusCode, "%s", r.body)
}
