package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestConflictsFlow: over HTTP, a conflicting rebase is 409 conflict and
// changes nothing by default; with conflicts keep it moves the session and
// answers the conflicts; submit is then 409 unresolved_conflicts listing
// them; GET …/conflicts lists them with each hunk's three sides; a bad
// mode is 400; resolving (markers removed) empties the list and submit
// goes through.
func TestConflictsFlow(t *testing.T) {
	ts := newTestServer(t, "")
	id := ts.newSession()
	r := ts.call("PUT", "/v1/sessions/"+id+"/files/README.md", []byte("the session's README\n"))
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	require.NoError(t, os.WriteFile(filepath.Join(ts.repo, "README.md"), []byte("upstream's README\n"), 0o644))
	testrepo.Git(t, ts.repo, "checkout", "-q", "main")
	testrepo.Git(t, ts.repo, "commit", "-qam", "upstream")

	r = ts.call("POST", "/v1/sessions/"+id+"/rebase", []byte(`{}`))
	require.Equal(t, 409, r.StatusCode, "%s", r.body)
	assert.Equal(t, apitypes.CodeConflict, r.errorOf(t)["code"])
	r = ts.call("POST", "/v1/sessions/"+id+"/rebase", []byte(`{"conflicts":"sometimes"}`))
	require.Equal(t, 400, r.StatusCode, "%s", r.body)
	assert.Contains(t, r.errorOf(t)["message"], "sometimes")

	r = ts.call("POST", "/v1/sessions/"+id+"/rebase", []byte(`{"conflicts":"keep"}`))
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	var mr apitypes.MutationResult
	require.NoError(t, json.Unmarshal(r.body, &mr))
	require.Len(t, mr.Conflicts, 1)
	assert.Equal(t, "README.md", mr.Conflicts[0].Path)
	assert.Equal(t, testrepo.Git(t, ts.repo, "rev-parse", "main"), mr.Session.BaseCommit)
	r = ts.call("GET", "/v1/sessions/"+id+"/files/README.md", nil)
	assert.Contains(t, string(r.body), "||||||| base ")

	r = ts.call("POST", "/v1/sessions/"+id+"/changesets", []byte(`{}`))
	require.Equal(t, 409, r.StatusCode, "%s", r.body)
	e := r.errorOf(t)
	assert.Equal(t, apitypes.CodeUnresolvedConflicts, e["code"])
	require.Len(t, e["conflicts"], 1)
	assert.Equal(t, "README.md", e["conflicts"].([]any)[0].(map[string]any)["path"])

	r = ts.call("GET", "/v1/sessions/"+id+"/conflicts", nil)
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	var sc apitypes.SessionConflicts
	require.NoError(t, json.Unmarshal(r.body, &sc))
	require.Len(t, sc.Conflicts, 1)
	h := sc.Conflicts[0].Hunks[0]
	assert.Equal(t, []string{"upstream's README\n"}, h.OursLines)
	assert.Equal(t, []string{"the session's README\n"}, h.TheirsLines)
	assert.NotEmpty(t, h.BaseLines)
	assert.NotEmpty(t, sc.Conflicts[0].Rerere)

	r = ts.call("PUT", "/v1/sessions/"+id+"/files/README.md", []byte("both READMEs\n"))
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	r = ts.call("GET", "/v1/sessions/"+id+"/conflicts", nil)
	require.NoError(t, json.Unmarshal(r.body, &sc))
	assert.Empty(t, sc.Conflicts)
	assert.True(t, strings.Contains(string(r.body), `"conflicts":[]`), "%s", r.body)
	r = ts.call("POST", "/v1/sessions/"+id+"/resolve", []byte(`{"paths":["README.md"]}`))
	require.Equal(t, 400, r.StatusCode, "nothing to resolve there: %s", r.body)
	r = ts.call("POST", "/v1/sessions/"+id+"/changesets", []byte(`{}`))
	require.Equal(t, 201, r.StatusCode, "%s", r.body)
}
