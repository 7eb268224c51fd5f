package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
)

// TestChangesetMergeability: before anyone accepts, a changeset says
// whether it merges onto its branch as the branch is now: cleanly on its
// base, cleanly onto a branch that moved elsewhere, or with the paths
// that conflict once another changeset changed the same lines; and it
// writes nothing.
func TestChangesetMergeability(t *testing.T) {
	e := newDaemonEnv(t, Config{})
	ts := &testServer{t: t, URL: e.srv.URL, m: e.m, repo: e.repo}
	submit := func(files map[string]string) string {
		t.Helper()
		sid := ts.newSession()
		for p, c := range files {
			r := ts.call("PUT", "/v1/sessions/"+sid+"/files/"+p, []byte(c))
			require.Contains(t, []int{200, 201}, r.StatusCode, "%s", r.body)
		}
		r := ts.call("POST", "/v1/sessions/"+sid+"/changesets", []byte(`{"intent":"m"}`))
		require.Equal(t, 201, r.StatusCode, "%s", r.body)
		var c apitypes.Changeset
		require.NoError(t, json.Unmarshal(r.body, &c))
		return c.ID
	}
	ask := func(id string) apitypes.Mergeability {
		t.Helper()
		r := ts.call("GET", "/v1/changesets/"+id+"/mergeability", nil)
		require.Equal(t, 200, r.StatusCode, "%s", r.body)
		var m apitypes.Mergeability
		require.NoError(t, json.Unmarshal(r.body, &m))
		return m
	}
	branchHead := func() string {
		t.Helper()
		return ask(submit(map[string]string{"probe.txt": "p\n"})).BranchHead
	}
	accept := func(id string) {
		t.Helper()
		r := ts.call("POST", "/v1/changesets/"+id+"/accept", []byte(`{}`))
		require.Equal(t, 200, r.StatusCode, "%s", r.body)
	}

	base := submit(map[string]string{"shared.txt": "one\n"})
	accept(base)
	mine, theirs, elsewhere := submit(map[string]string{"shared.txt": "mine\n"}), submit(map[string]string{"shared.txt": "theirs\n"}), submit(map[string]string{"other.txt": "x\n"})

	m := ask(mine)
	assert.True(t, m.Clean)
	assert.False(t, m.Rebased, "the branch is at its base")
	assert.Equal(t, "main", m.Branch)
	assert.Empty(t, m.Conflicts)
	before := m.BranchHead
	require.NotEmpty(t, before)

	accept(theirs)
	m = ask(mine)
	assert.False(t, m.Clean)
	assert.True(t, m.Rebased)
	assert.NotEqual(t, before, m.BranchHead, "the answer is for the moved branch")
	require.Len(t, m.Conflicts, 1)
	assert.Equal(t, "shared.txt", m.Conflicts[0].Path)
	assert.Equal(t, m, ask(mine), "asked again: the same answer")
	assert.Equal(t, m.BranchHead, branchHead(), "asking wrote nothing on the branch")

	m = ask(elsewhere)
	assert.True(t, m.Clean)
	assert.True(t, m.Rebased, "merged onto the moved branch")

	r := ts.call("GET", "/v1/changesets/00000000-0000-0000-0000-000000000000/mergeability", nil)
	assert.Equal(t, 404, r.StatusCode)
	r = ts.call("GET", "/v1/changesets/nope/mergeability", nil)
	assert.Contains(t, []int{400, 404}, r.StatusCode, "not a changeset id: %s", r.body)
}
