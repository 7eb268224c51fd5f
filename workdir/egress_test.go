package workdir_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/egress"
	"github.com/sessiond/sessiond/workdir"
)

// A command with an egress proxy reaches the allowlist's destinations
// through it (plain HTTP and a TLS tunnel by CONNECT), is refused the
// rest, and reaches nothing around it: its namespace has its own
// loopback and no route.
func TestEgressIsAllTheCommandReaches(t *testing.T) {
	m := newManager(t, workdir.ModeOverlay)
	if !m.Isolated() {
		t.Skip("no namespaces here: unisolated, nothing keeps a command to its proxy")
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello "+r.URL.Path) })
	srv := httptest.NewServer(hello)
	defer srv.Close()
	tls := httptest.NewTLSServer(hello)
	defer tls.Close()
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	tlsPort := strconv.Itoa(tls.Listener.Addr().(*net.TCPAddr).Port)

	// 127.0.0.1 is in NO_PROXY (inside, it is the command's own
	// loopback): the daemon's host loopback is reached by naming the
	// proxy outright.
	via := `curl -sS --max-time 20 --noproxy '' --proxy "$HTTP_PROXY" `
	script := `echo "proxy $HTTP_PROXY $https_proxy no $NO_PROXY"
` + via + `http://127.0.0.1:` + port + `/plain; echo
` + via + `-k https://127.0.0.1:` + tlsPort + `/tunnel; echo
` + via + `-o /dev/null -w 'refused %{http_code}\n' http://127.0.0.2:` + port + `/
` + via + `-k https://127.0.0.3:` + tlsPort + `/ || echo "tunnel refused"
` + via + `-o /dev/null -w 'refused %{http_code}\n' http://unlisted.invalid/
curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:` + port + `/ && echo ESCAPED
curl -sS --max-time 5 --noproxy '*' http://192.0.2.1:` + port + `/ && echo ESCAPED
echo TRIED`
	res, p := runWithProxy(t, m, []string{"127.0.0.1", "listed.invalid"}, script)
	out := string(res.Stdout) + string(res.Stderr)
	assert.Regexp(t, `proxy http://127\.0\.0\.1:\d+ http://127\.0\.0\.1:\d+ no localhost,127\.0\.0\.1,::1`, out)
	assert.Contains(t, out, "hello /plain")
	assert.Contains(t, out, "hello /tunnel")
	assert.Regexp(t, `refused 403\ntunnel refused\nrefused 403`, out)
	assert.Contains(t, out, "Failed to connect to 127.0.0.1", "the daemon's loopback is not the command's")
	assert.Contains(t, out, "Failed to connect to 192.0.2.1", "nothing is routable")
	assert.Contains(t, out, "TRIED", out)
	assert.NotContains(t, out, "ESCAPED", out)
	assert.Equal(t, []string{"127.0.0.2", "127.0.0.3", "unlisted.invalid"}, p.Refused())
}

// Unisolated, the proxy listens on the host's loopback and the
// environment names it: what the list admits works the same, though
// nothing keeps a command to it (isolated false says so).
func TestEgressUnisolated(t *testing.T) {
	m := newManager(t, workdir.ModeAuto, true)
	require.False(t, m.Isolated())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "listed") }))
	defer srv.Close()
	via := `curl -sS --max-time 20 --noproxy '' --proxy "$HTTP_PROXY" `
	res, p := runWithProxy(t, m, []string{"127.0.0.1"}, via+srv.URL+`; echo; `+via+`-o /dev/null -w '%{http_code}' http://10.1.2.3/`)
	assert.Equal(t, "listed\n403", string(res.Stdout), string(res.Stderr))
	assert.Equal(t, []string{"10.1.2.3"}, p.Refused())
}

// runWithProxy runs script on a new scratch of m with an egress proxy
// admitting list, and settles what it changed.
func runWithProxy(t *testing.T, m *workdir.Manager, list []string, script string) (workdir.Result, *egress.Proxy) {
	t.Helper()
	allow, err := egress.ParseAllowlist(list)
	require.NoError(t, err)
	p := egress.New(allow, nil)
	f := newFixture(t)
	s, err := m.Prepare(t.Context(), f.view())
	require.NoError(t, err)
	res, err := s.Run(t.Context(), workdir.Command{Argv: []string{"/bin/sh", "-c", script}, Egress: p, Timeout: 2 * time.Minute})
	require.NoError(t, err)
	cs, err := s.Capture(t.Context(), f.view(), 0)
	require.NoError(t, err)
	require.NoError(t, s.Settle(t.Context(), f.view(), paths(cs)))
	return res, p
}
