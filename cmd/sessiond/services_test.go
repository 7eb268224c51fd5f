package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestServiceCLI: sessiond service start prints the URL that reaches
// the service, service ls lists it, service logs prints its output,
// port link prints a link a client without a token opens, and service
// stop stops it.
func TestServiceCLI(t *testing.T) {
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	d := newDaemon(t, stores[0], "--repo", "r="+repo)
	s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	_, err = d.C.WriteFile(ctx, s.ID, "index.html", []byte("hello from the service\n"), client.WriteOptions{})
	require.NoError(t, err)
	run := func(args ...string) cliResult {
		t.Helper()
		return runCLI(t, "", append([]string{"--server", d.URL, "--token", d.Token, "--session", s.ID}, args...)...)
	}
	r := run("service", "start", "--name", "web", "--port", "8000", "--ready-http", "/", "--",
		"python3", "-m", "http.server", "--bind", "127.0.0.1", "8000")
	if r.code != 0 && strings.Contains(r.stderr, "isolated") {
		t.Skip(r.stderr)
	}
	require.Equal(t, exitOK, r.code, "%s", r.stderr)
	assert.Contains(t, r.stdout, "web running")
	assert.Contains(t, r.stdout, d.URL+"/v1/sessions/"+s.ID+"/ports/8000/")

	r = run("service", "ls")
	require.Equal(t, exitOK, r.code, "%s", r.stderr)
	assert.Contains(t, r.stdout, "web")
	assert.Contains(t, r.stdout, "running")
	assert.Contains(t, r.stdout, "8000")

	r = run("port", "link", "--ttl", "10m", "8000")
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
	r = run("port", "link", "8000")
	assert.NotEqual(t, exitOK, r.code)
	assert.Contains(t, r.stderr, "port 8000")

	r = run("service", "start", "--name", "bad", "--port", "70000", "--", "true")
	assert.NotEqual(t, exitOK, r.code)
	assert.Contains(t, r.stderr, "port 70000")
}
