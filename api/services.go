package api

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/session"
)

// Services and their ports (SPEC §15): the routes that start, list,
// follow and stop a session's services, and the signed links to their
// ports. The port route itself, and preview host names, are in ports.go.

func (s *Server) executor() (*session.Executor, error) {
	if s.runner == nil {
		return nil, session.ErrNoWorkdir
	}
	return s.runner, nil
}

// startService serves POST /v1/sessions/{id}/services.
func (s *Server) startService(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	var req apitypes.ServiceRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	opts := session.ServiceOptions{Name: req.Name, Argv: req.Argv, Command: req.Command, Cwd: req.Cwd, Env: req.Env, Restart: req.Restart, Network: req.Network}
	if req.Port != nil {
		if err := session.CheckPort(*req.Port); err != nil {
			return err
		}
		opts.Port = *req.Port
	}
	if req.Ready != nil {
		if t := req.Ready.TimeoutSeconds; t < 0 || math.IsNaN(t) || t > 3600 {
			return badRequest("ready.timeout_seconds %v: want 0 to 3600", t)
		}
		opts.Ready = session.ServiceReady{HTTP: req.Ready.HTTP, TCP: req.Ready.TCP, Timeout: time.Duration(req.Ready.TimeoutSeconds * float64(time.Second))}
	}
	ex, err := s.executor()
	if err != nil {
		return err
	}
	// Starting (and the ready check) may take longer than a write.
	info, err := ex.StartService(context.WithoutCancel(r.Context()), id, opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, s.toService(r, id, info))
	return nil
}

// toService is info as the API answers it, with its port's URLs.
func (s *Server) toService(r *http.Request, id uuid.UUID, info session.ServiceInfo) apitypes.Service {
	out := apitypes.Service{
		Name: info.Name, Argv: info.Argv, Port: info.Port, State: info.State, Reason: info.Reason, PID: info.PID,
		Started: info.Started, Ended: info.Ended, ExitCode: info.ExitCode, Restart: info.Restart, Restarts: info.Restarts, LogTail: info.LogTail,
		Network: info.Network, NetworkRefused: info.NetworkRefused,
	}
	if out.Argv == nil {
		out.Argv = []string{}
	}
	if info.Port != 0 {
		out.URL = s.baseURL(r) + portPath(id, info.Port)
		if s.previewDomain != "" {
			out.PreviewURL = scheme(r) + "://" + previewHost(id, info.Port, s.previewDomain) + "/"
		}
	}
	return out
}

// listServices serves GET /v1/sessions/{id}/services.
func (s *Server) listServices(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	ex, err := s.executor()
	if err != nil {
		return err
	}
	infos, err := ex.ListServices(r.Context(), id)
	if err != nil {
		return err
	}
	out := apitypes.ServiceList{Services: make([]apitypes.Service, 0, len(infos))}
	for _, in := range infos {
		out.Services = append(out.Services, s.toService(r, id, in))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// stopService serves DELETE /v1/sessions/{id}/services/{name}.
func (s *Server) stopService(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	ex, err := s.executor()
	if err != nil {
		return err
	}
	info, err := ex.StopService(context.WithoutCancel(r.Context()), id, r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.toService(r, id, info))
	return nil
}

// serviceLogs serves GET /v1/sessions/{id}/services/{name}/logs: the
// last tail lines (default 100), then (unless follow=false) each new
// line, as Server-Sent Events (event line), until the service ends
// (event end) or the client leaves.
func (s *Server) serviceLogs(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	tail := 100
	follow := r.URL.Query().Get("follow") != "false"
	if t := r.URL.Query().Get("tail"); t != "" {
		if tail, err = strconv.Atoi(t); err != nil {
			return badRequest("tail %q: want a number of lines", t)
		}
	}
	ex, err := s.executor()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var (
		mu sync.Mutex
		rc *http.ResponseController
	)
	begin := func() {
		if rc == nil {
			rc = beginEventStream(w)
		}
	}
	stopBeat := make(chan struct{})
	defer close(stopBeat)
	go func() {
		tick := time.NewTicker(s.heartbeat)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				mu.Lock()
				if rc != nil {
					fmt.Fprint(w, ": heartbeat\n\n")
					_ = rc.Flush()
				}
				mu.Unlock()
			case <-stopBeat:
				return
			}
		}
	}()
	err = ex.ServiceLogs(ctx, id, r.PathValue("name"), tail, follow, func(line string) error {
		mu.Lock()
		defer mu.Unlock()
		begin()
		data, _ := json.Marshal(apitypes.ServiceLogLine{Line: line})
		if _, err := fmt.Fprintf(w, "event: line\ndata: %s\n\n", data); err != nil {
			return err
		}
		return rc.Flush()
	})
	mu.Lock()
	defer mu.Unlock()
	if err != nil && rc == nil {
		return err
	}
	begin()
	fmt.Fprint(w, "event: end\ndata: {}\n\n")
	_ = rc.Flush()
	return nil
}

// maxLinkTTL bounds a port link's life.
const maxLinkTTL = 7 * 24 * time.Hour

// portLink serves POST /v1/sessions/{id}/ports/{port}/link: a URL that
// opens that port of that session, and nothing else, until it expires.
func (s *Server) portLink(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	port, err := portParam(r.PathValue("port"))
	if err != nil {
		return err
	}
	var req apitypes.PortLinkRequest
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &req); err != nil {
			return err
		}
	}
	ttl := time.Hour
	if req.TTLSeconds != 0 {
		if req.TTLSeconds < 1 || math.IsNaN(req.TTLSeconds) || req.TTLSeconds > maxLinkTTL.Seconds() {
			return badRequest("ttl_seconds %v: want 1 to %d", req.TTLSeconds, int(maxLinkTTL.Seconds()))
		}
		ttl = time.Duration(req.TTLSeconds * float64(time.Second))
	}
	ex, err := s.executor()
	if err != nil {
		return err
	}
	if _, _, err := ex.PortDialer(r.Context(), session.PortRef{Session: id, Port: port}); err != nil {
		return err
	}
	exp := time.Now().Add(ttl).Truncate(time.Second)
	tok := s.auth.linkToken(id, port, exp)
	out := apitypes.PortLink{URL: s.baseURL(r) + "/v1/links/" + tok + "/", ExpiresAt: exp.UTC()}
	if s.previewDomain != "" {
		out.URL = scheme(r) + "://" + previewHost(id, port, s.previewDomain) + "/?" + linkParam + "=" + tok
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func portParam(s string) (int, error) {
	port, err := strconv.Atoi(s)
	if err != nil {
		return 0, badRequest("port %q: want a number from 1 to 65535", s)
	}
	if err := session.CheckPort(port); err != nil {
		return 0, err
	}
	return port, nil
}
