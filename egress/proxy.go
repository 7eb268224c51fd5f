package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Resolver resolves host names; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// maxRefused bounds the refused destinations a Proxy remembers.
const maxRefused = 100

// Proxy is one command's egress proxy (see the package comment).
type Proxy struct {
	allow    *Allowlist
	resolver Resolver
	dialer   net.Dialer
	rp       *httputil.ReverseProxy

	mu      sync.Mutex // guards refused, seen, tunnels, closed
	refused []string
	seen    map[string]bool
	tunnels map[net.Conn]bool
	closed  bool
	wg      sync.WaitGroup // the tunnels' copies
}

// New returns a proxy that admits what allow lists, resolving names with
// resolver (nil: the system's).
func New(allow *Allowlist, resolver Resolver) *Proxy {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	p := &Proxy{allow: allow, resolver: resolver, seen: map[string]bool{}, tunnels: map[net.Conn]bool{},
		dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// The request names its destination (absolute form); the
			// Host header follows it. No X-Forwarded-* is added.
			pr.Out.Host = ""
		},
		Transport: &http.Transport{
			Proxy:               nil, // never the daemon's own proxy
			DialContext:         func(ctx context.Context, _, addr string) (net.Conn, error) { return p.dial(ctx, addr) },
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     30 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) { p.fail(w, err) },
		ErrorLog:     log.New(io.Discard, "", 0),
	}
	return p
}

// Refused lists the destinations refused so far (host names or
// addresses as the command asked for them), each once, in order.
func (p *Proxy) Refused() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refused...)
}

// Serve answers proxy requests on connections accepted from l until l is
// closed (the caller closes it when the command ends); it then closes
// every connection it still holds and returns once they are done.
func (p *Proxy) Serve(l net.Listener) error {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	err := srv.Serve(l)
	_ = srv.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnels {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	p.rp.Transport.(*http.Transport).CloseIdleConnections()
	if errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// refusal is a destination the allowlist does not admit.
type refusal struct {
	host, why string
}

func (e *refusal) Error() string {
	return fmt.Sprintf("sessiond egress proxy: %s is not on the repository's network allowlist (%s)", e.host, e.why)
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		if _, _, err := net.SplitHostPort(r.Host); err != nil {
			http.Error(w, "sessiond egress proxy: CONNECT names host:port", http.StatusBadRequest)
			return
		}
		p.connect(w, r)
		return
	}
	if r.URL.Host == "" || r.URL.Scheme != "http" {
		http.Error(w, "sessiond egress proxy: send proxy requests (http:// URLs, or CONNECT for https)", http.StatusBadRequest)
		return
	}
	p.rp.ServeHTTP(w, r)
}

// connect opens a tunnel to the CONNECT request's destination.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	up, err := p.dial(r.Context(), r.Host)
	if err != nil {
		p.fail(w, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "sessiond egress proxy: no tunnel on this connection", http.StatusInternalServerError)
		return
	}
	down, brw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !p.track(down, up) {
		return
	}
	_, err = io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n")
	if err == nil && brw.Reader.Buffered() > 0 {
		// What the client sent after its request, before the answer.
		b, _ := brw.Reader.Peek(brw.Reader.Buffered())
		_, err = up.Write(b)
	}
	if err != nil {
		p.untrack(down, up)
		p.wg.Add(-2) // the pipes track counted will not run
		return
	}
	var once sync.Once
	done := func() { once.Do(func() { p.untrack(down, up) }) }
	pipe := func(dst, src net.Conn) {
		defer p.wg.Done()
		_, err := io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok && err == nil {
			_ = cw.CloseWrite()
			return
		}
		done()
	}
	go func() { pipe(up, down) }()
	go func() {
		pipe(down, up)
		done() // the destination is done: so is the tunnel
	}()
}

// track registers a tunnel's two connections and counts its two pipes in
// wg, under mu, so that Serve's Wait (after it set closed under mu) never
// meets an Add; false (both closed, nothing counted) when the proxy is
// shutting down.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.tunnels[c] = true
	}
	p.wg.Add(len(cs)) // one pipe from each
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(p.tunnels, c)
	}
}

// fail answers a request the proxy could not serve: 403 for a refused
// destination, 502 when it could not be reached.
func (p *Proxy) fail(w http.ResponseWriter, err error) {
	var rf *refusal
	if errors.As(err, &rf) {
		http.Error(w, rf.Error(), http.StatusForbidden)
		return
	}
	http.Error(w, "sessiond egress proxy: "+err.Error(), http.StatusBadGateway)
}

// dial admits addr ("host:port") and connects to one of the addresses it
// admitted, the very ones checked.
func (p *Proxy) dial(ctx context.Context, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		host, portStr = addr, "80"
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return nil, p.refuse(host, "no port")
	}
	ips, err := p.admit(ctx, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, ip := range ips {
		c, err := p.dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(ip, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// admit says which addresses of host the command may reach (see the
// package comment), or why none: a *refusal, remembered.
func (p *Proxy) admit(ctx context.Context, host string) ([]netip.Addr, error) {
	asked := host
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() == "" && p.allow.byAddr(ip) {
			return []netip.Addr{ip.Unmap()}, nil
		}
		return nil, p.refuse(asked, "no CIDR entry holds it")
	}
	name, ok := hostName(host)
	if !ok {
		return nil, p.refuse(asked, "not a host name")
	}
	named := p.allow.byName(name)
	if !named && !p.allow.hasPrefixes() {
		return nil, p.refuse(asked, "not listed")
	}
	addrs, err := p.resolver.LookupNetIP(ctx, "ip", name)
	if err != nil || len(addrs) == 0 {
		if named {
			return nil, fmt.Errorf("resolve %s: %w", name, err)
		}
		return nil, p.refuse(asked, "not listed, and it does not resolve")
	}
	var out []netip.Addr
	for _, a := range addrs {
		a = a.Unmap()
		if p.allow.byAddr(a) || named && !special(a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		if named {
			return nil, p.refuse(asked, "it resolves only to loopback, link-local or other addresses no CIDR entry names")
		}
		return nil, p.refuse(asked, "not listed, and no CIDR entry holds an address it resolves to")
	}
	return out, nil
}

// special addresses are reached by name only where a CIDR entry names
// them.
func special(a netip.Addr) bool {
	return a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsUnspecified() ||
		a.IsMulticast() || a.IsInterfaceLocalMulticast()
}

// refuse remembers a refused destination and returns its error.
func (p *Proxy) refuse(host, why string) error {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	p.mu.Lock()
	if !p.seen[host] && len(p.refused) < maxRefused {
		p.seen[host] = true
		p.refused = append(p.refused, host)
	}
	p.mu.Unlock()
	return &refusal{host: host, why: why}
}
