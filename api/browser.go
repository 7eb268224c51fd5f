package api

import (
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sessiond/sessiond/apitypes"
)

// Browser safety. A web page the daemon's user opens can make the browser
// send requests to the daemon: with a name that resolves to it (DNS
// rebinding: the page's own host name, now pointing at 127.0.0.1), or to
// it directly from another origin. Three rules keep such pages out, and
// leave the review page (same origin), the CLI and Go client and MCP
// clients (no Origin), and event streams as they are:
//
//   - Host must be one of the daemon's names: the address the request
//     arrived at, localhost and loopback addresses with that port, and the
//     names of Config.AllowedHosts. A rebinding page's requests carry its
//     own host name.
//   - Origin, when present, must be the daemon's own: http or https on
//     one of those names. Browsers send it on every cross-origin request
//     and on same-origin ones other than GET and HEAD.
//   - A POST with a body must be Content-Type: application/json (415
//     otherwise): a "simple" POST (text/plain, form types) is the one
//     request a foreign page can send without a CORS preflight, which the
//     daemon never answers. PUT and DELETE keep any body type, since
//     browsers preflight them. This rule is the API's own and holds
//     in-process too (handlerFor); the other two are Guard's.

// Guard wraps the daemon's whole handler (the API and the review page) in
// the Host and Origin rules. Requests that never crossed a network, such
// as client.NewInProcess's, go to the Server directly.
func (s *Server) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if _, _, ok := s.previewOf(r.Host); ok {
			// A preview host is the service's own origin: its pages
			// call it (api/ports.go has its auth).
			s.ServeHTTP(w, r)
			return
		}
		if !s.ownHost(r.Host, local, r.TLS != nil) {
			s.refuse(w, r, newError(http.StatusForbidden, apitypes.CodeForbidden,
				"Host %q is not a name of this daemon (name it with --allowed-host)", r.Host))
			return
		}
		// The port route and links answer pages of the services (in an
		// opaque origin): no cookie or token of the daemon's pages
		// reaches them, so their origin needs no check.
		if origin := r.Header.Get("Origin"); origin != "" && !portRequest(r) && !s.ownOrigin(origin, local) {
			s.refuse(w, r, newError(http.StatusForbidden, apitypes.CodeForbidden,
				"requests from the web origin %q are refused: only the daemon's own pages may call it", origin))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, e *apitypes.Error) {
	s.log.LogAttrs(r.Context(), slog.LevelWarn, "request refused",
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("host", r.Host),
		slog.String("origin", r.Header.Get("Origin")), slog.String("reason", e.Message))
	writeError(w, e)
}

// ownHost reports whether host (a Host header, or an Origin's host) names
// this daemon for a request that arrived at local (nil when unknown).
func (s *Server) ownHost(host string, local net.Addr, tls bool) bool {
	name, port := splitHost(host, tls)
	if name == "" {
		return false
	}
	for _, a := range s.hosts {
		if h, p, err := net.SplitHostPort(a); err == nil {
			if strings.EqualFold(h, name) && p == port {
				return true
			}
		} else if strings.EqualFold(strings.Trim(a, "[]"), name) {
			return true
		}
	}
	tcp, ok := local.(*net.TCPAddr)
	if !ok || port != strconv.Itoa(tcp.Port) {
		return false
	}
	if strings.EqualFold(name, "localhost") {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && (ip.IsLoopback() || ip.Equal(tcp.IP))
}

// ownOrigin reports whether a request's Origin is one of the daemon's own
// pages: http or https on one of its names. "null" (a sandboxed or local
// document) is not.
func (s *Server) ownOrigin(origin string, local net.Addr) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.User != nil {
		return false
	}
	return s.ownHost(u.Host, local, u.Scheme == "https")
}

// splitHost splits a Host value into a lower-case name (an IPv6 address
// without its brackets) and a port, the scheme's default when absent.
func splitHost(host string, tls bool) (name, port string) {
	port = "80"
	if tls {
		port = "443"
	}
	if h, p, err := net.SplitHostPort(host); err == nil {
		return strings.ToLower(h), p
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		return strings.ToLower(host[1 : len(host)-1]), port
	}
	if strings.Contains(host, ":") {
		return "", "" // an IPv6 address needs brackets; anything else is malformed
	}
	return strings.ToLower(host), port
}

// checkContentType is the rule for request bodies: a POST with a body is
// JSON. A body-less POST (no Content-Length, or 0) is the empty object.
func checkContentType(r *http.Request) *apitypes.Error {
	if r.Method != http.MethodPost || r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	if ct == "" {
		ct = "none"
	}
	return newError(http.StatusUnsupportedMediaType, apitypes.CodeUnsupportedMediaType,
		"a POST body must be Content-Type: application/json (got %s)", ct)
}
