package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
)

// TestEngineTextThroughAPI: what the adapters show comes from the engine
// through the API: an edit batch's diff (a dry run's the same as the
// write's, and the same as the session's diff), a search's context lines,
// and whether a file is binary.
func TestEngineTextThroughAPI(t *testing.T) {
	ts := newTestServer(t, "")
	id := ts.newSession()
	edits := "/v1/sessions/" + id + "/edits"
	body := `{"diff":true,"dry_run":DRY,"edits":[{"op":"write","path":"f.txt","content":"one\ntwo\nthree\nfour\n"},{"op":"write","path":"b.bin","content":"\u0000x"}]}`
	var dry, real apitypes.EditsResult
	for _, x := range []struct {
		dry string
		out *apitypes.EditsResult
	}{{"true", &dry}, {"false", &real}} {
		r := ts.call("POST", edits, []byte(strings.ReplaceAll(body, "DRY", x.dry)))
		require.Equal(t, 200, r.StatusCode, "%s", r.body)
		require.NoError(t, json.Unmarshal(r.body, x.out))
	}
	assert.Contains(t, dry.Diff, "diff --git a/f.txt b/f.txt\nnew file mode 100644\n")
	assert.Contains(t, dry.Diff, "@@ -0,0 +1,4 @@\n+one\n+two\n+three\n+four\n")
	assert.Equal(t, dry.Diff, real.Diff)
	r := ts.call("GET", "/v1/sessions/"+id+"/diff", nil)
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	assert.Equal(t, string(r.body), real.Diff, "the batch's diff is the session's")
	r = ts.call("POST", edits, []byte(`{"edits":[{"op":"append","path":"f.txt","content":"five\n"}]}`))
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	var plain apitypes.EditsResult
	require.NoError(t, json.Unmarshal(r.body, &plain))
	assert.Empty(t, plain.Diff, "no diff unless asked")

	r = ts.call("POST", "/v1/sessions/"+id+"/search", []byte(`{"pattern":"three","glob":"f.txt","context":1}`))
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	var sr apitypes.SearchResult
	require.NoError(t, json.Unmarshal(r.body, &sr))
	require.Len(t, sr.Matches, 1)
	assert.Equal(t, apitypes.Match{Path: "f.txt", Line: 3, Column: 1, Text: "three", Before: []string{"two"}, After: []string{"four"}}, sr.Matches[0])
	r = ts.call("POST", "/v1/sessions/"+id+"/search", []byte(`{"pattern":"three","context":101}`))
	assert.Equal(t, 400, r.StatusCode, "%s", r.body)

	for p, want := range map[string]string{"f.txt": "false", "b.bin": "true"} {
		r = ts.call("GET", "/v1/sessions/"+id+"/files/"+p, nil)
		require.Equal(t, 200, r.StatusCode, "%s", r.body)
		assert.Equal(t, want, r.Header.Get("X-Sessiond-Binary"), p)
	}
}
