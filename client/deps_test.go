package client

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLinksNoEngine: a program that uses the client links the standard
// library and the wire types, nothing of the engine, git or the metrics.
func TestLinksNoEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	assert.ElementsMatch(t, []string{"github.com/sessiond/sessiond/apitypes", "github.com/sessiond/sessiond/client"}, deps)
}
