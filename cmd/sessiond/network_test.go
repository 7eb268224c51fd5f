package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestNetworkAllowlistCLI: `repo policy set --exec-network-allow` gives a
// repository an allowlist (a bad entry refused, naming it, nothing
// changed), `repo policy show` says it in words, and `sessiond exec
// --network` reaches what it lists through the daemon's egress proxy
// and reports what was refused, on a daemon that lets no command share
// the host's network.
func TestNetworkAllowlistCLI(t *testing.T) {
	plainRunOnly(t, "the CLI's allowlist against the daemon's binary")
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	d := newDaemon(t, stores[0], "--repo", "r="+repo)
	clientEnv(t, d, "")

	r := runCLI(t, "", "repo", "policy", "set", "r", "--exec-network-allow", "127.0.0.1,*.example.test")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "exec network        only 127.0.0.1, *.example.test, through the egress proxy")
	p, err := d.C.RepoPolicy(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, []string{"127.0.0.1", "*.example.test"}, p.Exec.NetworkAllow)
	r = runCLI(t, "", "repo", "policy", "show", "r", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var raw struct {
		Exec map[string]any `json:"exec"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &raw))
	assert.Equal(t, map[string]any{"allow": []any{"127.0.0.1", "*.example.test"}}, raw.Exec["network"])

	for _, bad := range [][]string{
		{"--exec-network-allow", "ok.example,10.0.0.0/40"},
		{`{"exec":{"network":{"allow":["*"]}}}`},
	} {
		r = runCLI(t, "", append([]string{"repo", "policy", "set", "r"}, bad...)...)
		assert.Equal(t, exitError, r.code, r.stdout+r.stderr)
		assert.Contains(t, r.stderr, "exec.network.allow[")
		after, err := d.C.RepoPolicy(ctx, "r")
		require.NoError(t, err)
		assert.Equal(t, p, after, "nothing changed")
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "listed\n") }))
	defer srv.Close()
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	clientEnv(t, d, s.ID)
	script := `curl -sS --max-time 20 --noproxy '' --proxy "$HTTP_PROXY" http://127.0.0.1:` + port + `/; curl -s --noproxy '' --proxy "$HTTP_PROXY" -o /dev/null http://127.0.0.2:` + port + `/`
	r = runCLI(t, "", "exec", "--network", "--", "sh", "-c", script)
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, "listed\n", r.stdout)
	assert.Contains(t, r.stderr, "sessiond: the network allowlist refused: 127.0.0.2")
	r = runCLI(t, "", "exec", "--json", "--network", "--", "sh", "-c", script)
	var res apitypes.ExecResponse
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.stdout)
	assert.Equal(t, []string{"127.0.0.2"}, res.NetworkRefused)
}
