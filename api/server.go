package api

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/cluster"
	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
)

// Config configures a Server.
type Config struct {
	Manager *session.Manager
	// Repos serves the repository routes (registry, branches, policies).
	Repos *repos.Registry
	// Events serves the event routes (stored events and streams).
	Events *events.Log
	// Exec runs commands on sessions' views; nil: the exec route answers
	// unavailable.
	Exec *session.Executor
	// Changesets serves the changeset routes (submit, review, accept,
	// layers, undo, policies) over the same engine and store.
	Changesets *changeset.Service
	// AdminToken turns auth on: every /v1 route then needs it, a session
	// token or a reviewer token. Empty: no auth (the daemon then binds to
	// loopback only, and has one identity, LocalUser).
	AdminToken string
	// TokenSecret keys the session and reviewer tokens; required with
	// AdminToken.
	TokenSecret []byte
	// LocalUser is the identity of a daemon without an admin token: every
	// review is by it, so its approvals count once.
	LocalUser string
	// AllowedHosts are names of the daemon beside those Guard knows by
	// itself (the address a request arrived at, localhost and loopback
	// addresses with that port): "name" for any port, "name:port" for one.
	AllowedHosts []string
	// MaxBodyBytes bounds a request body after decompression; default
	// 128 MiB.
	MaxBodyBytes int64
	// Heartbeat is the interval of SSE comment lines; default 15 s.
	Heartbeat time.Duration
	Logger    *slog.Logger
	// Registerer receives the metrics; a new registry when nil (see
	// Server.Gatherer).
	Registry *prometheus.Registry
	// MCP serves the Model Context Protocol at /mcp (admin token) and
	// /mcp/sessions/{id} (that session's token or the admin token), after
	// the same auth as every route; nil answers not_found there.
	MCP http.Handler
	// Store is probed by /readyz once a write found it full; nil: the
	// store is reported ready again at once.
	Store StoreSpace
	// Cluster is this node's membership, for GET /v1/cluster and the
	// nodes' metrics; nil: a single node, reported as itself alone.
	Cluster *cluster.Cluster
	// WriteTimeout bounds every request that writes (Route.writes): it
	// runs under its own deadline, detached from the client's connection
	// so that a client that leaves does not cut a write short, and a
	// request still waiting for a session's lock or the store when it
	// passes fails with a timeout (503). Default DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Router, in a cluster, sends session-scoped requests that this node
	// does not serve to the node that does, and places new sessions
	// (api/forward.go); nil: everything is served here.
	Router *cluster.Router
	// Drainer hands this node's sessions off (POST
	// /v1/cluster/nodes/{node}/drain); nil: the route is unavailable.
	Drainer Drainer
	// URL is the daemon's own, for the URLs answered to in-process
	// clients (MCP over HTTP); empty: the request's host.
	URL string
	// PreviewDomain, when set, serves the ports of sessions' services
	// at host names <port>-<short id>.<PreviewDomain> (api/ports.go).
	PreviewDomain string
}

// DefaultWriteTimeout is Config.WriteTimeout's default.
const DefaultWriteTimeout = 30 * time.Second

// Server is the HTTP API over one Manager.
type Server struct {
	m         *session.Manager
	repos     *repos.Registry
	events    *events.Log
	runner    *session.Executor
	cs        *changeset.Service
	cluster   *cluster.Cluster
	auth      *auth
	hosts     []string // Config.AllowedHosts
	maxBody   int64
	heartbeat time.Duration
	// writeTimeout is Config.WriteTimeout.
	writeTimeout time.Duration
	log          *slog.Logger
	metrics      *metrics
	mcp          http.Handler // nil: no MCP endpoint
	// space is what writes found full, for /readyz; storeSpace probes
	// the store (nil: not probed).
	space      space
	storeSpace StoreSpace
	mux        *http.ServeMux
	files      map[string]*Route // by method: the files route, dispatched by hand
	fwd        *forwarder        // nil: not a cluster
	drainer    Drainer

	// previewDomain is Config.PreviewDomain; ports the transports of
	// the port route (api/ports.go).
	previewDomain string
	url           string
	ports         portTransports

	stopOnce sync.Once
	stop     chan struct{} // closed by Shutdown: ends event streams
}

// Route is one route of the API.
type Route struct {
	Method  string
	Pattern string // a Go 1.22 ServeMux pattern path
	scope   scope
	handle  func(*Server, http.ResponseWriter, *http.Request) error
}

// writes reports whether the route changes state, and so runs under the
// write timeout: every method but GET and HEAD, except search (a read
// sent as POST), exec (bounded by its own timeout, up to
// --exec-max-timeout) and MCP (a stream of tool calls, each of which
// comes back through these routes).
func (rt *Route) writes() bool {
	switch {
	case rt.Method == http.MethodGet || rt.Method == http.MethodHead:
		return false
	case strings.HasPrefix(rt.Pattern, "/mcp"),
		strings.HasSuffix(rt.Pattern, "/search"), strings.HasSuffix(rt.Pattern, "/exec"),
		strings.HasSuffix(rt.Pattern, "/drain"): // waits for commands, bounded by its own timeout
		return false
	}
	return true
}

// Routes returns the API's route table, the one the OpenAPI document must
// describe.
func Routes() []Route { return routes }

// filesPrefix is the route served outside the ServeMux: its path is
// matched segment by segment on the escaped URL, without the mux's path
// cleaning, so that "a/../b" or "a//b" reach the path rules instead of a
// redirect.
const filesPattern = "/v1/sessions/{id}/files/{path...}"

var routes = []Route{
	{"GET", "/healthz", scopePublic, (*Server).healthz},
	{"GET", "/readyz", scopePublic, (*Server).readyz},
	{"GET", "/metrics", scopePublic, nil}, // promhttp, wired in New

	{"POST", "/v1/repos", scopeAdmin, (*Server).createRepo},
	{"GET", "/v1/repos", scopeAdmin, (*Server).listRepos},
	{"GET", "/v1/repos/{repo}", scopeAdmin, (*Server).getRepo},
	{"GET", "/v1/repos/{repo}/branches", scopeAdmin, (*Server).branches},
	{"GET", "/v1/repos/{repo}/events", scopeAdmin, (*Server).repoEvents},

	{"POST", "/v1/sessions", scopeAdmin, (*Server).createSession},
	{"GET", "/v1/sessions", scopeAdmin, (*Server).listSessions},
	{"GET", "/v1/sessions/{id}", scopeSession, (*Server).getSession},
	{"DELETE", "/v1/sessions/{id}", scopeSession, (*Server).abandonSession},
	{"GET", filesPattern, scopeSession, (*Server).readFile},
	{"HEAD", filesPattern, scopeSession, (*Server).statFile},
	{"PUT", filesPattern, scopeSession, (*Server).writeFile},
	{"DELETE", filesPattern, scopeSession, (*Server).deleteFile},
	{"POST", "/v1/sessions/{id}/edits", scopeSession, (*Server).edits},
	{"GET", "/v1/sessions/{id}/tree", scopeSession, (*Server).tree},
	{"GET", "/v1/sessions/{id}/summary", scopeSession, (*Server).summary},
	{"GET", "/v1/sessions/{id}/diff", scopeSession, (*Server).diff},
	{"POST", "/v1/sessions/{id}/search", scopeSession, (*Server).search},
	{"GET", "/v1/sessions/{id}/mutations", scopeSession, (*Server).mutations},
	{"POST", "/v1/sessions/{id}/checkpoints", scopeSession, (*Server).createCheckpoint},
	{"GET", "/v1/sessions/{id}/checkpoints", scopeSession, (*Server).listCheckpoints},
	{"POST", "/v1/sessions/{id}/rollback", scopeSession, (*Server).rollback},
	{"POST", "/v1/sessions/{id}/fork", scopeSession, (*Server).fork},
	{"GET", "/v1/sessions/{id}/events", scopeSession, (*Server).sessionEvents},
	{"POST", "/v1/sessions/{id}/rebase", scopeSession, (*Server).rebase},
	{"POST", "/v1/sessions/{id}/merge", scopeSession, (*Server).merge},
	{"GET", "/v1/sessions/{id}/conflicts", scopeSession, (*Server).conflicts},
	{"POST", "/v1/sessions/{id}/resolve", scopeSession, (*Server).resolve},
	{"POST", "/v1/sessions/{id}/exec", scopeSession, (*Server).exec},
	{"GET", "/v1/sessions/{id}/runs", scopeSession, (*Server).sessionRuns},
	{"GET", "/v1/sessions/{id}/exec", scopeSession, (*Server).followExec},

	// Services and their ports (api/services.go, api/ports.go). The port
	// route and links take every method; they are served outside the
	// ServeMux, and listed here under GET and POST for the document.
	{"POST", "/v1/sessions/{id}/services", scopeSession, (*Server).startService},
	{"GET", "/v1/sessions/{id}/services", scopeSession, (*Server).listServices},
	{"DELETE", "/v1/sessions/{id}/services/{name}", scopeSession, (*Server).stopService},
	{"GET", "/v1/sessions/{id}/services/{name}/logs", scopeSession, (*Server).serviceLogs},
	{"POST", "/v1/sessions/{id}/ports/{port}/link", scopeSession, (*Server).portLink},
	{"GET", portsPattern, scopeSession, nil},
	{"POST", portsPattern, scopeSession, nil},
	{"GET", linksPattern, scopePublic, nil},
	{"POST", linksPattern, scopePublic, nil},

	// Changesets (api/changesets.go).
	{"POST", "/v1/sessions/{id}/changesets", scopeSession, (*Server).submitChangeset},
	// A reviewer token reads changesets, their diffs, revisions and
	// reviews, a branch's layers and the accept policy, and reviews;
	// accept, undo and the policy's changes stay the admin's.
	{"GET", "/v1/changesets", scopeReader, (*Server).listChangesets},
	{"GET", "/v1/changesets/{id}", scopeReader, (*Server).getChangeset},
	{"GET", "/v1/changesets/{id}/diff", scopeReader, (*Server).changesetDiff},
	{"GET", "/v1/changesets/{id}/revisions", scopeReader, (*Server).changesetRevisions},
	{"GET", "/v1/changesets/{id}/checks", scopeReader, (*Server).changesetChecks},
	{"GET", "/v1/changesets/{id}/files/{path...}", scopeReader, (*Server).changesetLines},
	{"GET", "/v1/changesets/{id}/mergeability", scopeReader, (*Server).changesetMergeability},
	{"GET", "/v1/changesets/{id}/timeline", scopeReader, (*Server).changesetTimeline},
	{"POST", "/v1/changesets/{id}/reviews", scopeReview, (*Server).reviewChangeset},
	{"POST", "/v1/changesets/{id}/accept", scopeAdmin, (*Server).acceptChangeset},
	{"POST", "/v1/changesets/{id}/undo", scopeAdmin, (*Server).undoChangeset},
	{"POST", "/v1/repos/{repo}/undo", scopeAdmin, (*Server).undoLayers},
	{"GET", "/v1/repos/{repo}/layers", scopeReader, (*Server).layers},
	{"GET", "/v1/repos/{repo}/policy", scopeReader, (*Server).getPolicy},
	{"PUT", "/v1/repos/{repo}/policy", scopeAdmin, (*Server).putPolicy},
	// A repository's environment: plain variables, and secrets that are
	// written and never read back (api/environment.go).
	{"GET", "/v1/repos/{repo}/environment", scopeReader, (*Server).getEnvironment},
	{"PUT", "/v1/repos/{repo}/environment", scopeAdmin, (*Server).putEnvironment},
	{"GET", "/v1/repos/{repo}/environments", scopeReader, (*Server).listEnvironments},
	{"POST", "/v1/repos/{repo}/environments/rebuild", scopeAdmin, (*Server).rebuildEnvironments},
	{"POST", "/v1/reviewers", scopeAdmin, (*Server).createReviewer},
	{"GET", "/v1/cluster", scopeAdmin, (*Server).clusterStatus},
	{"POST", "/v1/cluster/nodes/{node}/drain", scopeAdmin, (*Server).drainNode},

	// MCP over streamable HTTP (package mcpserver, wired by Config.MCP).
	{"POST", "/mcp", scopeAdmin, (*Server).serveMCP},
	{"GET", "/mcp", scopeAdmin, (*Server).serveMCP},
	{"DELETE", "/mcp", scopeAdmin, (*Server).serveMCP},
	{"POST", "/mcp/sessions/{id}", scopeSession, (*Server).serveMCP},
	{"GET", "/mcp/sessions/{id}", scopeSession, (*Server).serveMCP},
	{"DELETE", "/mcp/sessions/{id}", scopeSession, (*Server).serveMCP},
}

// New builds a Server.
func New(cfg Config) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 128 << 20
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		m: cfg.Manager, repos: cfg.Repos, events: cfg.Events, runner: cfg.Exec, cs: cfg.Changesets, auth: newAuth(cfg.AdminToken, cfg.TokenSecret, cfg.LocalUser), hosts: cfg.AllowedHosts,
		maxBody: cfg.MaxBodyBytes, heartbeat: cfg.Heartbeat, writeTimeout: cfg.WriteTimeout, log: cfg.Logger, mcp: cfg.MCP,
		storeSpace: cfg.Store, previewDomain: strings.TrimPrefix(cfg.PreviewDomain, "."), url: strings.TrimSuffix(cfg.URL, "/"),
		mux: http.NewServeMux(), files: map[string]*Route{}, stop: make(chan struct{}),
	}
	s.metrics = newMetrics(cfg.Registry, cfg.Manager)
	if s.cluster = cfg.Cluster; s.cluster == nil {
		s.cluster = cluster.Single(cluster.Config{})
	} else {
		s.metrics.reg.MustRegister(newClusterCollector(s.cluster))
	}
	if cfg.Router != nil {
		s.fwd = newForwarder(cfg.Router)
	}
	s.drainer = cfg.Drainer
	for i := range routes {
		rt := &routes[i]
		if rt.Pattern == filesPattern {
			s.files[rt.Method] = rt
			continue
		}
		if rt.Pattern == portsPattern || rt.Pattern == linksPattern {
			continue // servePorts
		}
		if rt.Pattern == "/metrics" {
			s.mux.Handle("GET /metrics", s.metrics.handler())
			continue
		}
		s.mux.Handle(rt.Method+" "+rt.Pattern, s.handlerFor(rt))
	}
	s.mux.Handle("/", http.HandlerFunc(s.noRoute))
	return s
}

// noRoute answers a request no route takes: 405 with Allow when the path
// is a route's under another method, else 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	if allow := s.allowed(r); len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, newError(http.StatusMethodNotAllowed, apitypes.CodeMethodNotAllowed,
			"method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")))
		return
	}
	writeError(w, newError(http.StatusNotFound, apitypes.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
}

// allowed lists the methods whose routes match r's path, by asking the
// mux about each method the route table uses.
func (s *Server) allowed(r *http.Request) []string {
	var allow []string
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	return allow
}

// Shutdown ends the event streams, so that http.Server.Shutdown can wait
// for the other requests to finish. Register it with RegisterOnShutdown.
func (s *Server) Shutdown() { s.stopOnce.Do(func() { close(s.stop) }) }

// ServeHTTP serves the API: metrics and logging around every request, the
// files route by hand, everything else through the ServeMux.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	if port, short, ok := s.previewOf(r.Host); ok {
		r.Pattern = "preview"
		s.servePreview(rec, r, port, short)
	} else if portRequest(r) {
		s.servePorts(rec, r)
	} else if id, p, ok := splitFilesPath(r.URL.EscapedPath()); ok {
		r.Pattern = filesPattern
		if rt := s.files[r.Method]; rt != nil {
			r.SetPathValue("id", id)
			r.SetPathValue("path", p)
			s.handlerFor(rt).ServeHTTP(rec, r)
		} else {
			rec.Header().Set("Allow", "GET, HEAD, PUT, DELETE")
			writeError(rec, newError(http.StatusMethodNotAllowed, apitypes.CodeMethodNotAllowed, "method %s not allowed", r.Method))
		}
	} else {
		s.mux.ServeHTTP(rec, r)
	}
	route := r.Pattern
	if route == "" || route == "/" {
		route = "unmatched"
	}
	s.metrics.observe(r.Method, route, rec.status, time.Since(start))
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
		slog.String("method", r.Method), slog.String("route", route), slog.String("path", r.URL.Path),
		slog.Int("status", rec.status), slog.Int64("bytes", rec.bytes), slog.Duration("duration", time.Since(start)))
}

// splitFilesPath matches /v1/sessions/{id}/files/{path...} on the escaped
// path and unescapes each segment of the file path.
func splitFilesPath(escaped string) (id, p string, ok bool) {
	rest, ok := strings.CutPrefix(escaped, "/v1/sessions/")
	if !ok {
		return "", "", false
	}
	id, rest, ok = strings.Cut(rest, "/")
	if !ok {
		return "", "", false
	}
	rest, ok = strings.CutPrefix(rest, "files/")
	if !ok {
		if rest == "files" {
			return id, "", true
		}
		return "", "", false
	}
	segs := strings.Split(rest, "/")
	for i, seg := range segs {
		if u, err := url.PathUnescape(seg); err == nil {
			segs[i] = u
		} // else the path rules reject the raw segment
	}
	if u, err := url.PathUnescape(id); err == nil {
		id = u
	}
	return id, strings.Join(segs, "/"), true
}

// handlerFor wraps a route's handler with auth, the body limit and error
// writing.
func (s *Server) handlerFor(rt *Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rt.scope != scopePublic {
			p, aerr := s.auth.authenticate(r)
			if aerr == nil {
				aerr = p.authorize(rt.scope, r.PathValue("id"))
			}
			if aerr != nil {
				writeError(w, aerr)
				return
			}
			r = r.WithContext(withPrincipal(r.Context(), p))
		}
		if !s.route(w, r, rt) {
			return // forwarded to the node that serves it, or refused
		}
		if e := checkContentType(r); e != nil {
			writeError(w, e)
			return
		}
		if err := s.limitBody(w, r); err != nil {
			writeError(w, mapError(err))
			return
		}
		if rt.writes() {
			// Its own deadline, not the client's: a write either
			// finishes or fails whole, whoever is still listening.
			ctx, cancel := context.WithTimeoutCause(context.WithoutCancel(r.Context()), s.writeTimeout,
				&WriteTimeoutError{Timeout: s.writeTimeout})
			defer cancel()
			r = r.WithContext(context.WithValue(ctx, writeDeadlineKey{}, true))
		}
		if err := rt.handle(s, w, r); err != nil {
			err = timedOut(r.Context(), err)
			s.space.note(err)
			e := mapError(err)
			if e.Status >= 500 {
				s.log.LogAttrs(r.Context(), slog.LevelError, "request failed",
					slog.String("method", r.Method), slog.String("route", rt.Pattern), slog.String("error", err.Error()))
			}
			writeError(w, e)
		}
	})
}

// limitBody decompresses a gzip body and bounds what the handler can read
// of it: the limit applies to the decompressed bytes.
func (s *Server) limitBody(w http.ResponseWriter, r *http.Request) error {
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return badRequest("gzip body: %v", err)
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{zr, r.Body}
		r.Header.Del("Content-Encoding")
		r.ContentLength = -1
	default:
		return newError(http.StatusUnsupportedMediaType, apitypes.CodeUnsupportedMediaType, "unsupported Content-Encoding %q", enc)
	}
	if r.ContentLength > s.maxBody {
		return &http.MaxBytesError{Limit: s.maxBody}
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
	return nil
}

func writeError(w http.ResponseWriter, e *apitypes.Error) {
	w.Header().Del("ETag")
	w.Header().Del("Content-Length")
	writeJSON(w, e.Status, apitypes.ErrorBody{Error: e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

// decodeJSON reads the body as exactly one JSON value of v's type;
// unknown fields, wrong types and trailing data are bad requests. An empty
// POST body is the empty object (SPEC §5): v keeps its zero value, and
// the handler's own checks say which fields are required. A string that
// is not valid Unicode (which encoding/json would turn into U+FFFD) is
// refused as it is read: invalid_path (badPathChar) in a path field,
// bad_request elsewhere (apitypes.CheckedReader).
func decodeJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(apitypes.NewCheckedReader(r.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return err
		}
		if bad := (*apitypes.BadStringError)(nil); errors.As(err, &bad) {
			return badStringError(bad, v)
		}
		if errors.Is(err, io.EOF) {
			if r.Method == http.MethodPost {
				return nil
			}
			return badRequest("empty request body, want JSON")
		}
		return badRequest("malformed JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return err
		}
		if bad := (*apitypes.BadStringError)(nil); errors.As(err, &bad) {
			return badStringError(bad, v)
		}
		return badRequest("malformed JSON: data after the value")
	}
	return nil
}

// badStringError is the answer to a JSON string that is not valid
// Unicode: a path breaks the path rule badPathChar, as it does in a URL;
// anything else is malformed JSON.
func badStringError(bad *apitypes.BadStringError, v any) error {
	bad.Classify(v)
	if bad.Path {
		return &overlay.PathError{Rule: overlay.RuleBadPathChar, Path: bad.Value,
			Message: fmt.Sprintf("%s at %s", bad.Why, bad.Where())}
	}
	return badRequest("malformed JSON: %v", bad)
}

// recorder keeps the status and size of a response for logs and metrics.
type recorder struct {
	http.ResponseWriter
	status  int
	bytes   int64
	written bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.written {
		r.status, r.written = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.written = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// query helpers.

func queryBool(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest("query %s=%q: want true or false", name, v)
	}
	return b, nil
}

func queryInt(r *http.Request, name string) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("query %s=%q: want a non-negative integer", name, v)
	}
	return n, nil
}

// queryPage reads the ?after= and ?limit= of a paged listing; a limit of
// 0 or over max becomes def.
func queryPage(r *http.Request, def, max int64) (after int64, limit int, err error) {
	if after, err = queryInt(r, "after"); err != nil {
		return 0, 0, err
	}
	n, err := queryInt(r, "limit")
	if err != nil {
		return 0, 0, err
	}
	if n == 0 || n > max {
		n = def
	}
	return after, int(n), nil
}

// serveMCP hands an authorized request to the MCP handler. A tool call
// may stream progress for as long as its command runs, so the server's
// write deadline does not apply.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) error {
	if s.mcp == nil {
		return newError(http.StatusNotFound, apitypes.CodeNotFound, "this server does not serve MCP")
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	s.mcp.ServeHTTP(w, r)
	return nil
}

// ctxWithoutCancel is where a write must finish even when the client goes
// away: a half-sent response is the client's loss, a half-applied write
// would be ours. The engine's writes are atomic anyway; this keeps the
// acknowledgement and the state in step for a client that retries. A
// route that writes already runs detached, under the write timeout
// (handlerFor), which this keeps.
func ctxWithoutCancel(r *http.Request) context.Context {
	if r.Context().Value(writeDeadlineKey{}) != nil {
		return r.Context()
	}
	return context.WithoutCancel(r.Context())
}

// writeDeadlineKey marks a request context that handlerFor detached from
// the client and bounded by the write timeout.
type writeDeadlineKey struct{}
