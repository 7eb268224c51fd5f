package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/session"
)

// The port route: /v1/sessions/{id}/ports/{port}/… reaches port of the
// session's running service inside its sandbox (HTTP, streamed
// responses, WebSocket upgrades, the original path below the prefix and
// query), with the session's token or the admin token; /v1/links/{token}/…
// does the same with a port link's token in the path, so a browser
// follows the page's relative links without a bearer header. Both are
// served under the daemon's own origin, so their pages get
// Content-Security-Policy: sandbox (an opaque origin: a page cannot read
// what the daemon's own pages keep, nor call the API as them). With
// --preview-domain, <port>-<short id>.<domain> serves the port at its
// root, as its own origin (for pages that use absolute paths); a link
// there sets a cookie for that host alone.

const (
	portsPattern = "/v1/sessions/{id}/ports/{port}/{path...}"
	linksPattern = "/v1/links/{token}/{path...}"
	// linkParam carries a port link's token to a preview host, which
	// keeps it in linkCookie.
	linkParam  = "sessiond_link"
	linkCookie = "sessiond_link"
	// portSandbox is the policy of pages served under the daemon's
	// origin.
	portSandbox = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads allow-popups-to-escape-sandbox"
)

func portPath(id uuid.UUID, port int) string {
	return "/v1/sessions/" + id.String() + "/ports/" + strconv.Itoa(port) + "/"
}

func previewHost(id uuid.UUID, port int, domain string) string {
	return strconv.Itoa(port) + "-" + session.ShortID(id) + "." + domain
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// baseURL is the daemon's URL as r reached it; for a request of an
// in-process client (MCP over HTTP), the daemon's own (Config.URL).
func (s *Server) baseURL(r *http.Request) string {
	if s.url != "" && (r.Host == "" || r.Host == "in-process") {
		return s.url
	}
	return scheme(r) + "://" + r.Host
}

// splitPortPath matches the port route on the escaped path: the
// session, the port's text, and the rest (escaped, from its "/").
func splitPortPath(escaped string) (id, port, rest string, ok bool) {
	r, ok := strings.CutPrefix(escaped, "/v1/sessions/")
	if !ok {
		return "", "", "", false
	}
	id, r, ok = strings.Cut(r, "/")
	if !ok {
		return "", "", "", false
	}
	r, ok = strings.CutPrefix(r, "ports/")
	if !ok {
		return "", "", "", false
	}
	port, rest, _ = strings.Cut(r, "/")
	return id, port, "/" + rest, true
}

// splitLinkPath matches /v1/links/{token}/….
func splitLinkPath(escaped string) (tok, rest string, ok bool) {
	r, ok := strings.CutPrefix(escaped, "/v1/links/")
	if !ok {
		return "", "", false
	}
	tok, rest, _ = strings.Cut(r, "/")
	return tok, "/" + rest, true
}

// portRequest reports whether r is for the port route or a link (served
// by servePorts, outside the ServeMux).
func portRequest(r *http.Request) bool {
	p := r.URL.EscapedPath()
	if _, _, rest, ok := splitPortPath(p); ok {
		return !(rest == "/link" && r.Method == http.MethodPost)
	}
	_, _, ok := splitLinkPath(p)
	return ok
}

// servePorts serves the port route and links.
func (s *Server) servePorts(w http.ResponseWriter, r *http.Request) {
	p := r.URL.EscapedPath()
	if idText, portText, rest, ok := splitPortPath(p); ok {
		r.Pattern = portsPattern
		pr, aerr := s.auth.authenticate(r)
		if aerr == nil {
			aerr = pr.authorize(scopeSession, idText)
		}
		if aerr != nil {
			writeError(w, aerr)
			return
		}
		id, err := uuid.Parse(idText)
		if err != nil {
			writeError(w, badRequest("session id %q: not a UUID", idText))
			return
		}
		port, err := portParam(portText)
		if err != nil {
			writeError(w, mapError(err))
			return
		}
		if !s.routeSession(w, r, id) {
			return // forwarded to the node that serves the session
		}
		if rest == "/" && !strings.HasSuffix(p, "/") {
			// Relative links resolve against the port's root.
			http.Redirect(w, r, p+"/"+query(r), http.StatusTemporaryRedirect)
			return
		}
		s.proxyPort(w, r, session.PortRef{Session: id, Port: port}, rest, true)
		return
	}
	tok, rest, _ := splitLinkPath(p)
	r.Pattern = linksPattern
	id, port, aerr := s.auth.linkOf(tok, time.Now())
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if !s.routeSession(w, r, id) {
		return
	}
	if rest == "/" && !strings.HasSuffix(p, "/") {
		http.Redirect(w, r, p+"/"+query(r), http.StatusTemporaryRedirect)
		return
	}
	s.proxyPort(w, r, session.PortRef{Session: id, Port: port}, rest, true)
}

func query(r *http.Request) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	return "?" + r.URL.RawQuery
}

// previewOf parses a preview host name: <port>-<short id>.<domain>.
func (s *Server) previewOf(host string) (port int, short string, ok bool) {
	if s.previewDomain == "" {
		return 0, "", false
	}
	label, ok := strings.CutSuffix(strings.ToLower(host), "."+strings.ToLower(s.previewDomain))
	if !ok {
		return 0, "", false
	}
	portText, short, ok := strings.Cut(label, "-")
	if !ok || len(short) != 8 || strings.Contains(short, ".") {
		return 0, "", false
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return 0, "", false
	}
	return port, short, true
}

// servePreview serves a preview host: the port at its root, with a
// bearer token (the session's or the admin's), or a port link (in the
// query once, then a cookie of this host).
func (s *Server) servePreview(w http.ResponseWriter, r *http.Request, port int, short string) {
	ref := session.PortRef{Short: short, Port: port}
	if tok := r.URL.Query().Get(linkParam); tok != "" {
		id, lport, aerr := s.auth.linkOf(tok, time.Now())
		if aerr == nil && (lport != port || session.ShortID(id) != short) {
			aerr = newError(http.StatusForbidden, apitypes.CodeForbidden, "this port link opens another port")
		}
		if aerr != nil {
			writeError(w, aerr)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: linkCookie, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil})
		q := r.URL.Query()
		q.Del(linkParam)
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return
	}
	if c, err := r.Cookie(linkCookie); err == nil {
		id, lport, aerr := s.auth.linkOf(c.Value, time.Now())
		if aerr == nil && (lport != port || session.ShortID(id) != short) {
			aerr = newError(http.StatusForbidden, apitypes.CodeForbidden, "this port link opens another port")
		}
		if aerr != nil {
			writeError(w, aerr)
			return
		}
		ref.Session = id
	} else {
		pr, aerr := s.auth.authenticate(r)
		if aerr == nil && !pr.admin && session.ShortID(pr.session) != short {
			aerr = newError(http.StatusForbidden, apitypes.CodeForbidden, "this token is for another session")
		}
		if aerr != nil {
			writeError(w, aerr)
			return
		}
		if !pr.admin {
			ref.Session = pr.session
		}
	}
	// In a cluster a preview of a known session is served by its owner
	// (the admin's, named by its short id alone, is served here).
	if ref.Session != uuid.Nil && !s.routeSession(w, r, ref.Session) {
		return
	}
	s.proxyPort(w, r, ref, r.URL.EscapedPath(), false)
}

// portTransports keeps one transport per session and port, so that
// connections to a service are reused.
type portTransports struct {
	mu sync.Mutex
	by map[string]*http.Transport
}

func (t *portTransports) get(key string, dial func(context.Context) (net.Conn, error)) *http.Transport {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.by == nil {
		t.by = map[string]*http.Transport{}
	}
	tr := t.by[key]
	if tr == nil {
		tr = &http.Transport{
			DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     30 * time.Second,
		}
		t.by[key] = tr
	}
	return tr
}

// proxyPort passes r to the port ref names, at path rest (escaped).
func (s *Server) proxyPort(w http.ResponseWriter, r *http.Request, ref session.PortRef, rest string, sandbox bool) {
	if s.runner == nil {
		writeError(w, mapError(session.ErrNoWorkdir))
		return
	}
	id, dial, err := s.runner.PortDialer(r.Context(), ref)
	if err != nil {
		writeError(w, mapError(err))
		return
	}
	// A long response or a WebSocket outlives the server's deadlines.
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	target := "127.0.0.1:" + strconv.Itoa(ref.Port)
	tr := s.ports.get(id.String()+"/"+strconv.Itoa(ref.Port), dial)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetXForwarded()
			out := pr.Out
			out.URL.Scheme, out.URL.Host, out.Host = "http", target, target
			out.URL.RawPath = rest
			if p, err := url.PathUnescape(rest); err == nil {
				out.URL.Path = p
			} else {
				out.URL.Path = rest
			}
			if out.URL.Path == out.URL.RawPath {
				out.URL.RawPath = ""
			}
			// The daemon's credentials stay with the daemon.
			out.Header.Del("Authorization")
			removeCookie(out, linkCookie)
		},
		Transport:     tr,
		FlushInterval: -1,
		ModifyResponse: func(res *http.Response) error {
			if sandbox {
				res.Header.Add("Content-Security-Policy", portSandbox)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			writeError(w, newError(http.StatusBadGateway, apitypes.CodeUnavailable, "port %d of session %s: %v", ref.Port, id, err))
		},
	}
	rp.ServeHTTP(w, r)
}

// removeCookie drops the cookie called name from r's Cookie headers.
func removeCookie(r *http.Request, name string) {
	cs := r.Cookies()
	r.Header.Del("Cookie")
	for _, c := range cs {
		if c.Name != name {
			r.AddCookie(c)
		}
	}
}
