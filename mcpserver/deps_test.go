package mcpserver

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLinksNoEngine: the MCP server is an adapter over the client. Of this
// module it links only the client and the wire types, so every diff,
// search result and rule it shows is the engine's, through the API, and
// none is computed here (no merge, gitstore, session or overlay).
func TestLinksNoEngine(t *testing.T) {
	const module = "github.com/sessiond/sessiond/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var ours []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, module) {
			ours = append(ours, strings.TrimPrefix(p, module))
		}
	}
	assert.ElementsMatch(t, []string{"apitypes", "client", "mcpserver"}, ours)
}
