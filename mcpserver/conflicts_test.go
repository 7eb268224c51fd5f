package mcpserver_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/mcpserver"
)

// TestRebaseToolKeepsConflicts: rebase refuses a conflict by default;
// with conflicts keep it moves the session and names the conflict; status
// then lists it with each hunk's three sides, and submit waits until the
// markers are gone.
func TestRebaseToolKeepsConflicts(t *testing.T) {
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{})
	c := e.connect(t, s, mcpserver.Options{})
	_, err := e.admin.WriteFile(t.Context(), s.ID, "calc.go", []byte("package calc\n\n// the session's calc\n"), client.WriteOptions{})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(e.repoDir, "calc.go"), []byte("package calc\n\n// upstream's calc\n"), 0o644))
	testrepo.Git(t, e.repoDir, "commit", "-qam", "upstream")

	text, code, _ := fails(t, c, "rebase", nil)
	assert.Equal(t, "conflict", code, text)
	text, data := ok(t, c, "rebase", map[string]any{"conflicts": "keep"})
	assert.Contains(t, text, "Unresolved conflicts (1)")
	assert.Contains(t, text, "calc.go (content)")
	assert.Len(t, data["conflicts"], 1)

	text, data = ok(t, c, "status", nil)
	assert.Contains(t, text, "Unresolved conflicts (1)")
	assert.Contains(t, text, "ours from line")
	assert.Contains(t, text, "|// upstream's calc")
	assert.Contains(t, text, "|// the session's calc")
	assert.Contains(t, text, "base from line")
	assert.Len(t, data["conflicts"], 1)

	text, code, _ = fails(t, c, "submit", nil)
	assert.Equal(t, "unresolved_conflicts", code, text)
	ok(t, c, "write_file", map[string]any{"path": "calc.go", "content": "package calc\n\n// both\n"})
	text, data = ok(t, c, "status", nil)
	assert.NotContains(t, text, "Unresolved conflicts")
	assert.Empty(t, data["conflicts"])
	ok(t, c, "submit", nil)
}
