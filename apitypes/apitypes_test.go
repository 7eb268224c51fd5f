package apitypes

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImportsOnlyTheStandardLibrary keeps the package a leaf.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, []string{"github.com/sessiond/sessiond/apitypes"}, strings.Fields(string(out)))
}

func TestEditContent(t *testing.T) {
	tests := []struct {
		name, in   string
		hasContent bool
	}{
		{"absent", `{"op":"write","path":"a"}`, false},
		{"empty", `{"op":"write","path":"a","content":""}`, true},
		{"text", `{"op":"append","path":"a","content":"x"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e Edit
			require.NoError(t, json.Unmarshal([]byte(tt.in), &e))
			assert.Equal(t, tt.hasContent, e.HasContent())
		})
	}
	var e Edit
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"op":"write","contents":"x"}`), &e), "contents", "an unknown field is an error")

	// A write and an append always send content, so the server can tell
	// an empty file from a forgotten one; other ops send it only when set.
	b, err := json.Marshal(Edit{Op: OpWrite, Path: "a"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"op":"write","path":"a","content":""}`, string(b))
	b, err = json.Marshal(Edit{Op: OpDelete, Path: "a"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"op":"delete","path":"a"}`, string(b))
}

func TestErrorBodyRoundTrip(t *testing.T) {
	in := ErrorBody{Error: &Error{Status: 412, Code: CodePreconditionFailed, Message: "a.txt changed",
		Details: map[string]any{"path": "a.txt", "current": "abc"}}}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	assert.JSONEq(t, `{"error":{"code":"precondition_failed","message":"a.txt changed","path":"a.txt","current":"abc"}}`, string(b))
	var out ErrorBody
	require.NoError(t, json.Unmarshal(b, &out))
	require.NotNil(t, out.Error)
	assert.Equal(t, &Error{Code: CodePreconditionFailed, Message: "a.txt changed",
		Details: map[string]any{"path": "a.txt", "current": "abc"}}, out.Error, "the status is the HTTP status's, not the body's")
}
