package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/cluster"
)

// Forwarding in a cluster (SPEC section 16): a session-scoped request
// that reaches a node which does not own the session goes to the owner
// through a reverse proxy (streams, SSE and WebSocket upgrades carried
// as they are); a new session goes where placement puts it. HopHeader
// names the nodes a request passed, so a loop is refused.

// HopHeader lists, comma-separated, the ids of the nodes that forwarded a
// request, in order.
const HopHeader = "Sessiond-Forwarded-By"

// maxHops bounds a forwarding chain even without a repeated node.
const maxHops = 8

// forwarder proxies requests to other nodes.
type forwarder struct {
	router *cluster.Router
	proxy  *httputil.ReverseProxy
}

type forwardKey struct{}

// forwardTo is what the proxy's Rewrite and ErrorHandler need of a
// request: the node it goes to, and the hops to send.
type forwardTo struct {
	node, url string
	hops      []string
	target    *url.URL
	// answered is closed when the target's response headers arrive;
	// abandoned is set when the watch gave up on it first.
	answered  chan struct{}
	abandoned atomic.Bool
}

func newForwarder(r *cluster.Router) *forwarder {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   false,
	}
	f := &forwarder{router: r}
	f.proxy = &httputil.ReverseProxy{
		Transport:     tr,
		FlushInterval: -1, // streams (exec, SSE) flush as they come
		Rewrite: func(pr *httputil.ProxyRequest) {
			to := pr.In.Context().Value(forwardKey{}).(*forwardTo)
			pr.SetURL(to.target)
			if pr.In.Pattern == "preview" {
				pr.Out.Host = pr.In.Host // the owner serves the preview by its host name
			}
			pr.Out.URL.Path, pr.Out.URL.RawPath = pr.In.URL.Path, pr.In.URL.RawPath
			pr.Out.URL.RawQuery = pr.In.URL.RawQuery
			pr.SetXForwarded()
			pr.Out.Header.Set(HopHeader, strings.Join(to.hops, ", "))
		},
		ModifyResponse: func(resp *http.Response) error {
			close(resp.Request.Context().Value(forwardKey{}).(*forwardTo).answered)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			to := r.Context().Value(forwardKey{}).(*forwardTo)
			if to.abandoned.Load() {
				writeError(w, newError(http.StatusServiceUnavailable, apitypes.CodeUnavailable,
					"node %q, which served this session, stopped answering and its lease ran out: retry, and another node takes the session over (hops: %s)",
					to.node, strings.Join(to.hops, ", ")))
				return
			}
			if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
				return // the client left
			}
			writeError(w, newError(http.StatusServiceUnavailable, apitypes.CodeUnavailable,
				"node %q, which serves this, does not answer at its advertised URL %s: %v (hops: %s)",
				to.node, to.url, errors.Unwrap(err), strings.Join(to.hops, ", ")))
		},
	}
	return f
}

// hops reads r's hop list for a forward to node; a loop (this node or
// node in it already: the nodes disagree on who serves it) or a chain too
// long is refused with 508 naming the hops.
func (f *forwarder) hops(r *http.Request, node string) ([]string, *apitypes.Error) {
	var hops []string
	for _, h := range strings.Split(r.Header.Get(HopHeader), ",") {
		if h = strings.TrimSpace(h); h != "" {
			hops = append(hops, h)
		}
	}
	self := f.router.Self()
	if slices.Contains(hops, self) || slices.Contains(hops, node) || len(hops) >= maxHops {
		return nil, newError(http.StatusLoopDetected, apitypes.CodeLoopDetected,
			"forwarding loop: the request passed %s, and node %q would send it on to node %q; the nodes disagree on who serves it",
			strings.Join(append(hops, self), ", "), self, node)
	}
	return hops, nil
}

// forward proxies r to t, adding this node to the hops. With a session,
// the wait for the owner's answer is watched: an owner that does not
// answer until its lease of the session ran out (paused, cut off) is
// given up on with 503, and the client's retry is taken over here. The
// fencing of its writes makes that safe: a request it still applies
// after the takeover writes nothing.
func (f *forwarder) forward(w http.ResponseWriter, r *http.Request, t cluster.Target, hops []string, session uuid.UUID) {
	u, err := url.Parse(t.URL)
	if err != nil || t.URL == "" {
		writeError(w, newError(http.StatusServiceUnavailable, apitypes.CodeUnavailable,
			"node %q, which serves this, has no usable advertised URL %q", t.Node, t.URL))
		return
	}
	// A stream may run for as long as its command: no write deadline.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	to := &forwardTo{node: t.Node, url: t.URL, hops: append(slices.Clone(hops), f.router.Self()), target: u,
		answered: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.WithValue(r.Context(), forwardKey{}, to))
	defer cancel()
	if session != uuid.Nil {
		go f.watch(ctx, cancel, to, session)
	}
	f.proxy.ServeHTTP(w, r.WithContext(ctx))
}

// watch looks at session's owner every renewal interval until the
// target answers: once the target no longer holds a live lease of it,
// the forward is abandoned.
func (f *forwarder) watch(ctx context.Context, cancel func(), to *forwardTo, session uuid.UUID) {
	t := time.NewTicker(f.router.Interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-to.answered:
			return
		case <-t.C:
		}
		if !f.router.Serves(ctx, session, to.node) {
			select {
			case <-to.answered:
				return
			default:
			}
			to.abandoned.Store(true)
			cancel()
			return
		}
	}
}

// route decides, for a request of route rt, whether it is served here
// (true) or was forwarded or refused (false, answered). Only a cluster's
// session-scoped routes, the creation of sessions, a changeset's accept
// and a drain of another node are ever forwarded.
func (s *Server) route(w http.ResponseWriter, r *http.Request, rt *Route) bool {
	if s.fwd == nil {
		return true
	}
	var (
		t   cluster.Target
		err error
	)
	switch {
	case rt.Method == http.MethodPost && rt.Pattern == "/v1/sessions":
		if r.Header.Get(HopHeader) != "" {
			return true // placed by the node that forwarded it
		}
		t, err = s.fwd.router.Place(r.Context())
	case rt.Pattern == "/v1/cluster/nodes/{node}/drain":
		t, err = s.nodeTarget(r.Context(), r.PathValue("node"))
	case rt.Pattern == "/v1/changesets/{id}/accept":
		t, err = s.changesetOwner(r.Context(), r.PathValue("id"))
	case strings.HasPrefix(rt.Pattern, "/mcp") && cluster.MCPSessionNode(r.Header.Get(mcpSessionHeader)) != "":
		t, err = s.mcpHolder(r.Context(), r.Header.Get(mcpSessionHeader))
	case rt.scope == scopeSession && r.PathValue("id") != "":
		id, perr := uuid.Parse(r.PathValue("id"))
		if perr != nil {
			return true // the handler says what is wrong with it
		}
		t, err = s.fwd.router.Session(r.Context(), id)
	default:
		return true
	}
	return s.dispatch(w, r, t, err)
}

// routeSession is route for a request of session id outside the route
// table (a service's port, a port link): true when it is served here.
func (s *Server) routeSession(w http.ResponseWriter, r *http.Request, id uuid.UUID) bool {
	if s.fwd == nil {
		return true
	}
	t, err := s.fwd.router.Session(r.Context(), id)
	return s.dispatch(w, r, t, err)
}

// dispatch serves r here (true), or forwards it to t, or answers err.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, t cluster.Target, err error) bool {
	if err != nil {
		writeError(w, mapError(err))
		return false
	}
	if t.Local {
		return true
	}
	hops, herr := s.fwd.hops(r, t.Node)
	if herr != nil {
		writeError(w, herr)
		return false
	}
	s.fwd.forward(w, r, t, hops, t.Session)
	return false
}

// changesetOwner is where a changeset's accept runs: on the node that
// serves its session (which holds the session's objects).
func (s *Server) changesetOwner(ctx context.Context, id string) (cluster.Target, error) {
	if s.cs == nil {
		return cluster.Target{Local: true}, nil
	}
	cid, err := uuid.Parse(id)
	if err != nil {
		return cluster.Target{Local: true}, nil // the handler says what is wrong with it
	}
	c, err := s.cs.Get(ctx, cid)
	if err != nil {
		return cluster.Target{Local: true}, nil // the handler answers it
	}
	return s.fwd.router.Session(ctx, c.Session)
}

// mcpSessionHeader carries the MCP session of a streamable HTTP request.
const mcpSessionHeader = "Mcp-Session-Id"

// mcpHolder is the node that holds the MCP session id, named in it. A
// node that is gone took the session with it: 404, on which an MCP
// client starts a new session.
func (s *Server) mcpHolder(ctx context.Context, id string) (cluster.Target, error) {
	node := cluster.MCPSessionNode(id)
	if node == s.fwd.router.Self() {
		return cluster.Target{Local: true}, nil
	}
	st, err := s.cluster.Status(ctx)
	if err != nil {
		return cluster.Target{}, err
	}
	for _, n := range st.Nodes {
		if n.ID == node && n.Live {
			return cluster.Target{Node: n.ID, URL: n.AdvertiseURL}, nil
		}
	}
	return cluster.Target{}, newError(http.StatusNotFound, apitypes.CodeNotFound,
		"MCP session %q was held by node %q, which is no longer live: start a new MCP session", id, node)
}

// nodeTarget is the node with id, for a request addressed to it.
func (s *Server) nodeTarget(ctx context.Context, id string) (cluster.Target, error) {
	if id == s.fwd.router.Self() {
		return cluster.Target{Local: true}, nil
	}
	st, err := s.cluster.Status(ctx)
	if err != nil {
		return cluster.Target{}, err
	}
	for _, n := range st.Nodes {
		if n.ID == id {
			if !n.Live {
				return cluster.Target{}, newError(http.StatusServiceUnavailable, apitypes.CodeUnavailable, "node %q is not live", id)
			}
			return cluster.Target{Node: n.ID, URL: n.AdvertiseURL}, nil
		}
	}
	return cluster.Target{}, newError(http.StatusNotFound, apitypes.CodeNotFound, "no node %q in the cluster", id)
}
