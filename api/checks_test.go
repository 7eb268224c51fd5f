package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
)

// TestChangesetChecks: the checks of a revision follow the session's runs
// (passed, failed after an edit, stale after another), older revisions
// keep theirs, the list carries a badge, and required checks refuse an
// accept with 409 checks_required naming the check until it passes.
func TestChangesetChecks(t *testing.T) {
	plainRunOnly(t, "commands in namespaces and the checks they record")
	e := newDaemonEnv(t, Config{})
	ts := &testServer{t: t, URL: e.srv.URL, m: e.m, repo: e.repo}
	sid := ts.newSession()
	sess := "/v1/sessions/" + sid
	check := []string{"sh", "-c", "echo checking; grep -q good a.txt"}
	put := func(content string) {
		t.Helper()
		r := ts.call("PUT", sess+"/files/a.txt", []byte(content))
		require.Contains(t, []int{200, 201}, r.StatusCode, "%s", r.body)
	}
	run := func(argv []string, want int) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"argv": argv})
		r := ts.call("POST", sess+"/exec", body)
		require.Equal(t, 200, r.StatusCode, "%s", r.body)
		var res apitypes.ExecResponse
		require.NoError(t, json.Unmarshal(r.body, &res))
		require.Equal(t, want, res.ExitCode, "%s", r.body)
	}
	var csID string
	submit := func() {
		t.Helper()
		r := ts.call("POST", sess+"/changesets", []byte(`{"intent":"checks"}`))
		require.Contains(t, []int{200, 201}, r.StatusCode, "%s", r.body)
		var c apitypes.Changeset
		require.NoError(t, json.Unmarshal(r.body, &c))
		csID = c.ID
	}
	checks := func(query string) apitypes.ChecksResponse {
		t.Helper()
		r := ts.call("GET", "/v1/changesets/"+csID+"/checks"+query, nil)
		require.Equal(t, 200, r.StatusCode, "%s", r.body)
		var out apitypes.ChecksResponse
		require.NoError(t, json.Unmarshal(r.body, &out))
		return out
	}
	stateOf := func(cs apitypes.ChecksResponse, argv []string) string {
		for _, c := range cs.Checks {
			if assert.ObjectsAreEqual(argv, c.Argv) {
				return c.State
			}
		}
		return "absent"
	}
	accept := func() response {
		t.Helper()
		return ts.call("POST", "/v1/changesets/"+csID+"/accept", []byte(`{}`))
	}
	refused := func(state string) {
		t.Helper()
		r := accept()
		require.Equal(t, 409, r.StatusCode, "%s", r.body)
		e := r.errorOf(t)
		assert.Equal(t, apitypes.CodeChecksRequired, e["code"])
		assert.Contains(t, e["message"], `"sh -c echo checking; grep -q good a.txt" is `+state)
		list, _ := e["checks"].([]any)
		require.Len(t, list, 1, "%s", r.body)
		assert.Equal(t, state, list[0].(map[string]any)["state"])
	}

	// Bad policies change nothing.
	for _, bad := range []string{`{"required_checks":[[]]}`, `{"required_checks":[[""]]}`, `{"required_checks":[["a"],["a"]]}`} {
		r := ts.call("PUT", "/v1/repos/r/policy", []byte(bad))
		assert.Equal(t, 400, r.StatusCode, "%s: %s", bad, r.body)
	}
	r := ts.call("GET", "/v1/repos/r/policy", nil)
	require.Equal(t, 200, r.StatusCode)
	var pol apitypes.RepoPolicy
	require.NoError(t, json.Unmarshal(r.body, &pol))
	assert.Equal(t, [][]string{}, pol.RequiredChecks)

	body, _ := json.Marshal(map[string]any{"required_checks": [][]string{check}})
	r = ts.call("PUT", "/v1/repos/r/policy", body)
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	require.NoError(t, json.Unmarshal(r.body, &pol))
	assert.Equal(t, [][]string{check}, pol.RequiredChecks)

	// Nothing ran: the required check is missing.
	put("good\n")
	submit()
	cs := checks("")
	assert.Equal(t, "missing", cs.State)
	require.Len(t, cs.Checks, 1)
	assert.Equal(t, "missing", cs.Checks[0].State)
	assert.True(t, cs.Checks[0].Required)
	assert.Nil(t, cs.Checks[0].ExitCode)
	refused("missing")

	// It runs and passes on exactly these files.
	run(check, 0)
	run([]string{"true"}, 0)
	cs = checks("")
	assert.Equal(t, "passed", cs.State)
	assert.Equal(t, 1, cs.Revision)
	require.Len(t, cs.Checks, 2)
	assert.Equal(t, []string{"true"}, cs.Checks[0].Argv, "newest first")
	assert.False(t, cs.Checks[0].Required)
	c := cs.Checks[1]
	assert.Equal(t, "passed", c.State)
	assert.True(t, c.Required)
	require.NotNil(t, c.ExitCode)
	assert.Equal(t, 0, *c.ExitCode)
	assert.NotNil(t, c.At)
	assert.Equal(t, "checking\n", c.OutputTail)

	// An edit, a failing run, a new revision: failed.
	put("bad\n")
	run(check, 1)
	submit()
	cs = checks("")
	assert.Equal(t, 2, cs.Revision)
	assert.Equal(t, "failed", stateOf(cs, check))
	assert.Equal(t, "stale", stateOf(cs, []string{"true"}), "true ran before the edit")
	assert.Equal(t, "failed", cs.State)
	refused("failed")

	// Another edit without a run: stale.
	put("good again\n")
	submit()
	cs = checks("")
	assert.Equal(t, 3, cs.Revision)
	assert.Equal(t, "stale", stateOf(cs, check))
	assert.Equal(t, "stale", cs.State)
	refused("stale")

	// Older revisions keep the runs on their files.
	assert.Equal(t, "passed", stateOf(checks("?revision=1"), check))
	assert.Equal(t, "failed", stateOf(checks("?revision=2"), check))
	r = ts.call("GET", "/v1/changesets/"+csID+"/checks?revision=9", nil)
	assert.Equal(t, 404, r.StatusCode, "%s", r.body)

	// The list's badge.
	r = ts.call("GET", "/v1/changesets?repo=r", nil)
	var list struct {
		Changesets []apitypes.Changeset `json:"changesets"`
	}
	require.NoError(t, json.Unmarshal(r.body, &list))
	require.Len(t, list.Changesets, 1)
	assert.Equal(t, "stale", list.Changesets[0].Checks)

	// A run on the revision's files passes it, and accept goes through.
	run(check, 0)
	assert.Equal(t, "passed", stateOf(checks(""), check))
	r = accept()
	assert.Equal(t, 200, r.StatusCode, "%s", r.body)
}
