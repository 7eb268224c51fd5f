package main

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testport"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestServiceCLI: sessiond service start prints the URL that reaches
// the service, service ls lists it, service logs prints its output,
// port link prints a link a client without a token opens, and service
// stop stops it.
func TestServiceCLI(t *testing.T) {
	plainRunOnly(t, "services in namespaces through the CLI against the daemon's binary")
	for _, mode := range []string{"isolated", "unisolated"} {
		t.Run(mode, func(t *testing.T) { testServiceCLI(t, mode) })
	}
}

func testServiceCLI(t *testing.T, mode string) {
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	flags := []string{"--repo", "r=" + repo}
	port := "8000"
	if mode == "unisolated" {
		// Services share the host's network there: a port free now.
		flags = append(flags, "--workdir-no-namespaces")
		port = strconv.Itoa(testport.Free(t))
	}
	d := newDaemon(t, stores[0], flags...)
	s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	_, err = d.C.WriteFile(ctx, s.ID, "index.html", []byte("hello from the service\n"), client.WriteOptions{})
	require.NoError(t, err)
	run := func(args ...string) cliResult {
		t.Helper()
		return runCLI(t, "", append([]string{"--server", d.URL, "--token", d.Token, "--session", s.ID}, args...)...)
	}
	r := run("service", "start", "--name", "web", "--port", port, "--ready-http", "/", "--",
		"python3", "-m", "http.server", "--bind", "127.0.0.1", port)
	if r.code != 0 && strings.Contains(r.stderr, "isolated") {
		t.Skip(r.stderr)
	}
	require.Equal(t, exitOK, r.code, "%s", r.stderr)
	assert.Contains(t, r.stdout, "web running")
	assert.Contains(t, r.stdout, d.URL+"/v1/sessions/"+s.ID+"/ports/"+port+"/")

	r = run("service", "ls")
	require.Equal(t, exitOK, r.code, "%s", r.stderr)
	assert.Contains(t, r.stdout, "web")
	assert.Contains(t, r.stdout, "running")
	assert.Contains(t, r.stdout, port)

	r = run("port", "link", "--ttl", "10m", port)
	require.Equal(t, exitOK, r.code, "%s", r.stderr)
	link := strings.TrimSpace(r.stdout)
	res, err := http.Get(link + "index.html")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, 200, res.StatusCode, "%s", body)
	assert.Equal(t, "hello from the service\n", string(body))

	r = run("service", "logs", "-n", "5", "web")
	require.Equal(t, exitOK, r.code, "%s", r.stderr)
	assert.Contains(t, r.stdout, "GET /index.html")

	r = run("service", "stop", "web")
	require.Equal(t, exitOK, r.code, "%s", r.stderr)
	assert.Contains(t, r.stdout, "web stopped")
	r = run("port", "link", port)
	assert.NotEqual(t, exitOK, r.code)
	assert.Contains(t, r.stderr, "port "+port)

	r = run("service", "start", "--name", "bad", "--port", "70000", "--", "true")
	assert.NotEqual(t, exitOK, r.code)
	assert.Contains(t, r.stderr, "port 70000")
}
