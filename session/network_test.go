package session_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
	"github.com/sessiond/sessiond/workdir"
)

// A repository whose policy names an allowlist gives a command that
// asks for the network the listed destinations through the daemon's
// egress proxy, even where the daemon lets no command share the host's
// network; the refused ones are in the result. A command that does not
// ask has its loopback only, and no proxy named.
func TestExecNetworkAllowlist(t *testing.T) {
	plainRunOnly(t, "commands in namespaces through the egress proxy (whose races the egress package's race run has)")
	e := newExecEnv(t, workdir.ModeOverlay)
	s := e.create(session.CreateOptions{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "listed "+r.URL.Path)
	}))
	defer srv.Close()
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)

	_, err := e.en.Repos.SetPolicy(t.Context(), repos.Policy{Repo: "r", Exec: repos.ExecPolicy{NetworkAllow: []string{"127.0.0.1", "*.example.test"}}})
	require.NoError(t, err)
	via := `curl -sS --max-time 20 --noproxy '' --proxy "$HTTP_PROXY" `
	res, err := e.en.Exec.Exec(t.Context(), s.ID, session.ExecOptions{Network: true, Command: via + `http://127.0.0.1:` + port + `/ok; echo
` + via + `-o /dev/null -w '%{http_code}\n' http://127.0.0.2:` + port + `/
` + via + `-o /dev/null -w '%{http_code}\n' http://unlisted.invalid/
` + via + `-o /dev/null -w '%{http_code}\n' http://127.0.0.2:` + port + `/again`})
	require.NoError(t, err)
	out := string(res.Stdout) + string(res.Stderr)
	assert.Equal(t, "listed /ok\n403\n403\n403\n", string(res.Stdout), out)
	assert.Equal(t, []string{"127.0.0.2", "unlisted.invalid"}, res.NetworkRefused)

	res = e.sh(s.ID, `echo "[$HTTP_PROXY]"; curl -sS --max-time 5 http://127.0.0.1:`+port+`/ || echo unreachable`)
	assert.Equal(t, "[]\nunreachable\n", string(res.Stdout), string(res.Stderr))
	assert.Empty(t, res.NetworkRefused)

	// An allowlist with a bad entry is refused, naming it, and the
	// policy stays as it was.
	_, err = e.en.Repos.SetPolicy(t.Context(), repos.Policy{Repo: "r", Exec: repos.ExecPolicy{NetworkAllow: []string{"ok.example", "https://bad.example/x"}}})
	require.ErrorIs(t, err, record.ErrInvalid)
	assert.Contains(t, err.Error(), `exec.network.allow[1] "https://bad.example/x"`)
	p, err := e.en.Repos.Policy(t.Context(), "r")
	require.NoError(t, err)
	assert.Equal(t, []string{"127.0.0.1", "*.example.test"}, p.Exec.NetworkAllow)

	// No network in the policy: asking is refused.
	_, err = e.en.Repos.SetPolicy(t.Context(), repos.Policy{Repo: "r"})
	require.NoError(t, err)
	_, err = e.en.Exec.Exec(t.Context(), s.ID, session.ExecOptions{Network: true, Command: "true"})
	require.ErrorIs(t, err, record.ErrForbidden)
}
