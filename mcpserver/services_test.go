package mcpserver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/mcpserver"
)

// TestServiceTools: service_start answers with the URL of the port and
// waits for its ready check, a later run reaches it on its loopback,
// service_logs has its output, service_stop stops it.
func TestServiceTools(t *testing.T) {
	plainRunOnly(t, "services in namespaces through the service tools")
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{})
	cs := e.connect(t, s, mcpserver.Options{})
	_, code, _ := fails(t, cs, "service_start", map[string]any{"name": "web", "command": "true", "ready": "sometimes"})
	assert.Equal(t, "bad_request", code)

	text, data := ok(t, cs, "service_start", map[string]any{"name": "web", "argv": []string{"python3", "-m", "http.server", "--bind", "127.0.0.1", "8000"},
		"port": 8000, "ready": "/"})
	assert.Contains(t, text, "Service web is running")
	assert.Contains(t, text, "/v1/sessions/"+s.ID+"/ports/8000/")
	assert.Contains(t, text, "http://127.0.0.1:8000/")
	assert.Equal(t, "running", data["state"])

	text, data = ok(t, cs, "run", map[string]any{"command": "python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8000/go.mod').status)\""})
	assert.Contains(t, text, "exit code 0", text)
	assert.Equal(t, "200\n", data["stdout_tail"])

	text, data = ok(t, cs, "service_logs", map[string]any{"name": "web", "tail": 10})
	assert.Contains(t, text, "GET /go.mod")
	require.NotEmpty(t, data["lines"])

	text, data = ok(t, cs, "service_stop", map[string]any{"name": "web"})
	assert.Contains(t, text, "Service web is stopped")
	assert.Equal(t, "stopped", data["state"])
}
