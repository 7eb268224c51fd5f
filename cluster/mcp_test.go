package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMCPSessionNode: an MCP session id issued by a node names it; an id
// of a daemon outside a cluster, or a made-up one, names none.
func TestMCPSessionNode(t *testing.T) {
	id := MCPSessionID("node-2")
	assert.Equal(t, "node-2", MCPSessionNode(id))
	assert.NotEqual(t, id, MCPSessionID("node-2"), "each id is new")
	for _, bad := range []string{"", "ABCDEF123", "~x", "no de~x", "a/b~x"} {
		assert.Empty(t, MCPSessionNode(bad), "%q", bad)
	}
}
