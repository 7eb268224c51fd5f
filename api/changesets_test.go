package api

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
)

// TestMapMergeConflict: a merge conflict is 409 conflict with structured
// conflicts whose ids are hex and modes octal strings.
func TestMapMergeConflict(t *testing.T) {
	oid := gitstore.MustParseOID("0123456789abcdef0123456789abcdef01234567")
	err := fmt.Errorf("accept: %w", &merge.ConflictError{Conflicts: []merge.Conflict{{
		Path: "a.txt", Kind: merge.ConflictContent,
		Base:    &merge.Version{Path: "a.txt", OID: oid, Mode: gitstore.ModeFile},
		Ours:    &merge.Version{Path: "a.txt", OID: oid, Mode: gitstore.ModeExec},
		Hunks:   []merge.ConflictHunk{{BaseStart: 1, BaseLines: []string{"x"}}},
		Message: "merge conflict in a.txt",
	}}})
	e := mapError(err)
	assert.Equal(t, 409, e.Status)
	assert.Equal(t, apitypes.CodeConflict, e.Code)
	b, err := json.Marshal(apitypes.ErrorBody{Error: e})
	require.NoError(t, err)
	var body struct {
		Error struct {
			Code      string `json:"code"`
			Conflicts []map[string]any
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(b, &body))
	require.Len(t, body.Error.Conflicts, 1)
	c := body.Error.Conflicts[0]
	assert.Equal(t, "a.txt", c["path"])
	assert.Equal(t, "content", c["kind"])
	assert.Equal(t, map[string]any{"path": "a.txt", "oid": oid.String(), "mode": "100644"}, c["base"])
	assert.Equal(t, "100755", c["ours"].(map[string]any)["mode"])
	assert.Nil(t, c["theirs"])
	assert.Len(t, c["hunks"], 1)

	e = mapError(fmt.Errorf("x: %w", &changeset.StaleReadsError{Branch: "main", Reads: []changeset.StaleRead{{Path: "a", Read: oid}}}))
	assert.Equal(t, 409, e.Status)
	assert.Equal(t, []apitypes.StaleRead{{Path: "a", Read: oid.String()}}, e.Details["stale_reads"])
	e = mapError(fmt.Errorf("x: %w", &record.ConflictError{Field: "head", Current: oid.String()}))
	assert.Equal(t, oid.String(), e.Details["current_head"])
}
