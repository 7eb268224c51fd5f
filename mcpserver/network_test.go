package mcpserver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/mcpserver"
)

// TestRunNetworkAllowlist: run with network on a repository whose policy
// names an allowlist says what the egress proxy refused, in the text and
// the structured result; without network the command asks for none.
func TestRunNetworkAllowlist(t *testing.T) {
	plainRunOnly(t, "commands in namespaces through the egress proxy (whose races the egress package's race run has)")
	e := newEnv(t)
	_, err := e.admin.SetRepoPolicy(t.Context(), "calc", apitypes.RepoPolicy{Exec: &apitypes.ExecPolicy{NetworkAllow: []string{"proxy.golang.org"}}})
	require.NoError(t, err)
	s := e.newSession(t, apitypes.CreateSessionRequest{})
	cs := e.connect(t, s, mcpserver.Options{})
	script := `curl -s --max-time 20 --noproxy '' --proxy "$HTTP_PROXY" -o /dev/null -w '%{http_code}\n' http://10.1.2.3/`
	text, data := ok(t, cs, "run", map[string]any{"command": script, "network": true})
	assert.Contains(t, text, "403")
	assert.Contains(t, text, "The network allowlist refused: 10.1.2.3")
	assert.Equal(t, []any{"10.1.2.3"}, data["network_refused"])

	text, data = ok(t, cs, "run", map[string]any{"command": `echo "[$HTTP_PROXY]"`})
	assert.Contains(t, text, "[]")
	assert.Nil(t, data["network_refused"])
}
