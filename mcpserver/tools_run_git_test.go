package mcpserver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/mcpserver"
)

// A git commit made by run becomes a checkpoint, and the result says so.
func TestRunGitCommitCheckpoint(t *testing.T) {
	plainRunOnly(t, "git commit in namespaces through the run tool")
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{})
	cs := e.connect(t, s, mcpserver.Options{})
	text, data := ok(t, cs, "run", map[string]any{"argv": []string{"sh", "-c", "git status --porcelain && echo x > gen.txt && git add gen.txt && git commit -q -m 'add gen'"}})
	assert.Contains(t, text, "exit code 0", text)
	assert.Contains(t, text, "Commit became checkpoint 1 (")
	assert.Contains(t, text, "): add gen\n")
	cps, _ := data["checkpoints"].([]any)
	assert.Len(t, cps, 1)
}
