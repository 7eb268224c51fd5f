package egress_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/egress"
)

// startProxy serves a proxy for allow on a loopback port until the test
// ends, and returns it with its URL.
func startProxy(t testing.TB, allow []string, r egress.Resolver) (*egress.Proxy, *url.URL) {
	t.Helper()
	a, err := egress.ParseAllowlist(allow)
	require.NoError(t, err)
	p := egress.New(a, r)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- p.Serve(l) }()
	t.Cleanup(func() {
		l.Close()
		require.NoError(t, <-done)
	})
	return p, &url.URL{Scheme: "http", Host: l.Addr().String()}
}

// through is a client whose every request goes through the proxy at u.
func through(u *url.URL, tlsConf *tls.Config) *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: tlsConf, DisableKeepAlives: true}}
}

func get(t testing.TB, c *http.Client, target string) (int, string) {
	t.Helper()
	res, err := c.Get(target)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func hello(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello from "+name+" "+r.URL.RequestURI())
	})
}

func TestProxyPlainHTTPByCIDR(t *testing.T) {
	srv := httptest.NewServer(hello("listed"))
	defer srv.Close()
	p, u := startProxy(t, []string{"127.0.0.0/8"}, nil)
	c := through(u, nil)

	code, body := get(t, c, srv.URL+"/a?b=c")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "hello from listed /a?b=c", body)

	// Any other address, and a name the list does not hold (no resolver
	// answer puts it in 127.0.0.0/8), are refused and remembered.
	code, body = get(t, c, "http://10.9.8.7:1/")
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "10.9.8.7 is not on the repository's network allowlist")
	code, _ = get(t, c, "http://nothing.invalid/")
	assert.Equal(t, http.StatusForbidden, code)
	code, _ = get(t, c, "http://10.9.8.7:2/again")
	assert.Equal(t, http.StatusForbidden, code)
	assert.Equal(t, []string{"10.9.8.7", "nothing.invalid"}, p.Refused())

	// Not a proxy request.
	res, err := http.Get(u.String() + "/direct")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	// A CONNECT without a port.
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "CONNECT example.com HTTP/1.1\r\nHost: example.com\r\n\r\n")
	require.NoError(t, err)
	line := make([]byte, 12)
	_, err = io.ReadFull(conn, line)
	require.NoError(t, err)
	assert.Equal(t, "HTTP/1.1 400", string(line))
	assert.Equal(t, []string{"10.9.8.7", "nothing.invalid"}, p.Refused(), "a malformed request is no destination refused")
}

func TestProxyConnectTunnel(t *testing.T) {
	srv := httptest.NewTLSServer(hello("tls"))
	defer srv.Close()
	tlsConf := srv.Client().Transport.(*http.Transport).TLSClientConfig

	t.Run("admitted", func(t *testing.T) {
		p, u := startProxy(t, []string{"127.0.0.1"}, nil)
		code, body := get(t, through(u, tlsConf), srv.URL+"/secure")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "hello from tls /secure", body)
		assert.Empty(t, p.Refused())
	})
	t.Run("refused", func(t *testing.T) {
		p, u := startProxy(t, []string{"10.0.0.0/8", "example.com"}, nil)
		code, body := get(t, through(u, tlsConf), srv.URL+"/secure")
		assert.Equal(t, 0, code)
		assert.Contains(t, body, "Forbidden")
		assert.Equal(t, []string{"127.0.0.1"}, p.Refused())
	})
}

// fakeDNS answers from a table, counting questions; a name's answers may
// change from one question to the next (rebinding).
type fakeDNS struct {
	mu      sync.Mutex
	answers map[string][][]string
	asked   atomic.Int64
}

func (f *fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.asked.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	as := f.answers[host]
	if len(as) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	cur := as[0]
	if len(as) > 1 {
		f.answers[host] = as[1:]
	}
	var out []netip.Addr
	for _, s := range cur {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

func TestProxyResolvesNamesItself(t *testing.T) {
	srv := httptest.NewServer(hello("named"))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	t.Run("a listed name is dialed at the address resolved", func(t *testing.T) {
		dns := &fakeDNS{answers: map[string][][]string{"app.test": {{"127.0.0.1"}}}}
		p, u := startProxy(t, []string{"app.test", "127.0.0.0/8"}, dns)
		code, body := get(t, through(u, nil), "http://app.test:"+port+"/x")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "hello from named /x", body)
		assert.Empty(t, p.Refused())
	})
	t.Run("a listed name resolving to loopback needs a CIDR entry for it", func(t *testing.T) {
		dns := &fakeDNS{answers: map[string][][]string{"app.test": {{"127.0.0.1"}}}}
		p, u := startProxy(t, []string{"app.test"}, dns)
		code, body := get(t, through(u, nil), "http://app.test:"+port+"/x")
		assert.Equal(t, http.StatusForbidden, code)
		assert.Contains(t, body, "loopback")
		assert.Equal(t, []string{"app.test"}, p.Refused())
	})
	t.Run("a wildcard admits the names below it", func(t *testing.T) {
		dns := &fakeDNS{answers: map[string][][]string{"a.b.test": {{"127.0.0.1"}}, "b.test": {{"127.0.0.1"}}}}
		p, u := startProxy(t, []string{"*.b.test", "127.0.0.0/8"}, dns)
		code, _ := get(t, through(u, nil), "http://a.b.test:"+port+"/")
		assert.Equal(t, http.StatusOK, code)
		assert.Empty(t, p.Refused())
	})
	t.Run("a DNS answer outside the list is refused when only a CIDR could admit the name", func(t *testing.T) {
		dns := &fakeDNS{answers: map[string][][]string{"outside.test": {{"192.0.2.1"}}}}
		p, u := startProxy(t, []string{"10.0.0.0/8"}, dns)
		code, _ := get(t, through(u, nil), "http://outside.test:"+port+"/")
		assert.Equal(t, http.StatusForbidden, code)
		assert.Equal(t, []string{"outside.test"}, p.Refused())
	})
	t.Run("the system resolver: localhost is outside 10.0.0.0/8", func(t *testing.T) {
		p, u := startProxy(t, []string{"10.0.0.0/8"}, nil)
		code, _ := get(t, through(u, nil), "http://localhost:"+port+"/")
		assert.Equal(t, http.StatusForbidden, code)
		assert.Equal(t, []string{"localhost"}, p.Refused())
	})
	t.Run("the system resolver: localhost is inside 127.0.0.0/8", func(t *testing.T) {
		p, u := startProxy(t, []string{"127.0.0.0/8"}, nil)
		code, _ := get(t, through(u, nil), "http://localhost:"+port+"/")
		assert.Equal(t, http.StatusOK, code)
		assert.Empty(t, p.Refused())
	})
	t.Run("rebinding: the address checked is the address dialed", func(t *testing.T) {
		// The first answer is inside the list, every later one outside:
		// the proxy asks once per connection and dials what it checked.
		// (The second request names another port, so it needs a new
		// connection: one to the same port reuses the one checked.)
		dns := &fakeDNS{answers: map[string][][]string{"rebind.test": {{"127.0.0.1"}, {"10.255.255.1"}}}}
		p, u := startProxy(t, []string{"127.0.0.0/8"}, dns)
		code, body := get(t, through(u, nil), "http://rebind.test:"+port+"/")
		assert.Equal(t, http.StatusOK, code, body)
		assert.Equal(t, int64(1), dns.asked.Load())
		code, _ = get(t, through(u, nil), "http://rebind.test:1/")
		assert.Equal(t, http.StatusForbidden, code)
		assert.Equal(t, []string{"rebind.test"}, p.Refused())
	})
	t.Run("a name outside a list of names only is never resolved", func(t *testing.T) {
		dns := &fakeDNS{answers: map[string][][]string{"secret-data.attacker.test": {{"127.0.0.1"}}}}
		p, u := startProxy(t, []string{"app.test"}, dns)
		code, _ := get(t, through(u, nil), "http://secret-data.attacker.test:"+port+"/")
		assert.Equal(t, http.StatusForbidden, code)
		assert.Zero(t, dns.asked.Load())
		assert.Equal(t, []string{"secret-data.attacker.test"}, p.Refused())
	})
}

// A tunnel still open when the proxy stops is closed: Serve returns.
func TestProxyServeEndsOpenTunnels(t *testing.T) {
	l0, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l0.Close()
	go func() {
		c, err := l0.Accept()
		if err == nil {
			_, _ = io.Copy(io.Discard, c) // holds the tunnel open
			c.Close()
		}
	}()
	a, err := egress.ParseAllowlist([]string{"127.0.0.1"})
	require.NoError(t, err)
	p := egress.New(a, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- p.Serve(l) }()
	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "CONNECT "+l0.Addr().String()+" HTTP/1.1\r\nHost: "+l0.Addr().String()+"\r\n\r\n")
	require.NoError(t, err)
	buf := make([]byte, 39)
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	assert.Equal(t, "HTTP/1.1 200 Connection established\r\n", string(buf[:37]))
	l.Close()
	require.NoError(t, <-done)
	_, err = c.Read(make([]byte, 1))
	assert.Error(t, err, "the tunnel was closed")
}
