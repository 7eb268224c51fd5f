package cluster

import (
	"crypto/rand"
	"strings"
)

// An MCP session (streamable HTTP) lives in the memory of the node that
// started it. The id a node issues names that node, so any node a
// request reaches can send it on to the one holding the session: a load
// balancer needs no stickiness.

// mcpSep parts the node from the random rest of an MCP session id; a
// node id cannot hold it.
const mcpSep = "~"

// MCPSessionID returns a new MCP session id held by node.
func MCPSessionID(node string) string {
	return node + mcpSep + rand.Text()
}

// MCPSessionNode is the node that holds the MCP session id, "" when the id
// names none (a daemon outside a cluster issued it, or a client made it up).
func MCPSessionNode(id string) string {
	node, _, ok := strings.Cut(id, mcpSep)
	if !ok || !validNodeID(node) {
		return ""
	}
	return node
}
