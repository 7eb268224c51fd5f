package api

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/repos"
)

// fetchPy is a service that fetches the URL in its query (?u=) through
// the proxy its environment names (HTTP_PROXY, asked directly: the
// listed server is on 127.0.0.1, which NO_PROXY keeps), or straight
// where it names none, and answers with the status and body it got, or
// the error.
const fetchPy = `import http.client, http.server, os, sys, urllib.parse
PORT = int(sys.argv[1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        if "u" not in q:
            body = b"ready"
        else:
            target = q["u"][0]
            proxy = os.environ.get("HTTP_PROXY", "")
            try:
                if proxy:
                    p = urllib.parse.urlsplit(proxy)
                    c = http.client.HTTPConnection(p.hostname, p.port, timeout=20)
                    c.request("GET", target)
                else:
                    t = urllib.parse.urlsplit(target)
                    c = http.client.HTTPConnection(t.hostname, t.port, timeout=5)
                    c.request("GET", t.path)
                r = c.getresponse()
                body = ("%d %s" % (r.status, r.read().decode(errors="replace").strip())).encode()
            except OSError as e:
                body = ("error %s" % e).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", PORT), H).serve_forever()
`

// TestServiceNetwork: a service started with network true, on a
// repository whose policy names an allowlist, reaches a listed server
// through the daemon's egress proxy and is refused an unlisted one, the
// refusal shown in GET …/services; without network it reaches nothing
// and is named no proxy; with a policy that gives no network, network
// true is refused (403) and nothing starts.
func TestServiceNetwork(t *testing.T) {
	plainRunOnly(t, "a service in namespaces through the egress proxy (whose races the egress package's race run has)")
	e := newSvcEnv(t, t.TempDir(), testrepo.Build(t, "small"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "listed "+r.URL.Path)
	}))
	defer srv.Close()
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	_, err := e.en.Repos.SetPolicy(t.Context(), repos.Policy{Repo: "r", Exec: repos.ExecPolicy{NetworkAllow: []string{"127.0.0.1"}}})
	require.NoError(t, err)

	id, tok := e.newSession()
	req, err := http.NewRequest("PUT", e.srv.URL+"/v1/sessions/"+id+"/files/fetch.py", strings.NewReader(fetchPy))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 201, res.StatusCode)
	fetcher := func(name string, port int, network bool) map[string]any {
		return map[string]any{"name": name, "argv": []string{"python3", "fetch.py", strconv.Itoa(port)}, "port": port,
			"ready": map[string]any{"http": "/"}, "network": network}
	}
	fetch := func(svcPort int, u string) string {
		code, body := e.call("GET", "/v1/sessions/"+id+"/ports/"+strconv.Itoa(svcPort)+"/?u="+url.QueryEscape(u), tok, nil)
		require.Equal(t, 200, code, "%s", body)
		return string(body)
	}

	s := e.start(id, tok, fetcher("net", 8081, true))
	assert.True(t, s.Network)
	assert.Equal(t, "200 listed /ok", fetch(8081, "http://127.0.0.1:"+port+"/ok"))
	assert.Equal(t, "403", strings.Fields(fetch(8081, "http://127.0.0.2:"+port+"/"))[0], "an address the list does not hold")
	assert.Equal(t, "403", strings.Fields(fetch(8081, "http://unlisted.invalid/"))[0], "a name the list does not hold")
	got := e.services(id)["net"]
	assert.Equal(t, []string{"127.0.0.2", "unlisted.invalid"}, got.NetworkRefused)
	assert.True(t, got.Network)

	// Without network: its own loopback only, no proxy named.
	s = e.start(id, tok, fetcher("own", 8082, false))
	assert.False(t, s.Network)
	assert.Contains(t, fetch(8082, "http://127.0.0.1:"+port+"/ok"), "error", "the host's loopback is not the service's")
	assert.Empty(t, e.services(id)["own"].NetworkRefused)

	// A policy without network refuses the ask, and starts nothing.
	_, err = e.en.Repos.SetPolicy(t.Context(), repos.Policy{Repo: "r"})
	require.NoError(t, err)
	code, body := e.call("POST", "/v1/sessions/"+id+"/services", tok, fetcher("refused", 8083, true))
	assert.Equal(t, 403, code, "%s", body)
	assert.Contains(t, string(body), "network")
	_, listed := e.services(id)["refused"]
	assert.False(t, listed)
}
