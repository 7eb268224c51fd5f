package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/session"
)

// Server-Sent Events. Events live in the store, so a stream resumes after
// any id (Last-Event-ID, or ?after=) across restarts of the daemon. A
// comment line every heartbeat keeps proxies from closing an idle stream
// and finds a dead client; the stream ends when the client goes away or
// the server shuts down.

func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	ss, err := s.m.Get(r.Context(), id)
	if err != nil {
		return err
	}
	types, err := queryEventTypes(r)
	if err != nil {
		return err
	}
	f := events.Filter{Repo: ss.Repo, Session: id, Types: types}
	if wantsJSON(r) {
		return s.listEvents(w, r, f)
	}
	return s.stream(w, r, f)
}

// eventTypes are the types of event the engines append.
var eventTypes = []string{
	session.EventFileWritten, session.EventFileDeleted, session.EventCheckpointCreated,
	session.EventSessionState, session.EventExecRecorded,
	changeset.EventSubmitted, changeset.EventUpdated, changeset.EventReviewed,
	changeset.EventAccepted, changeset.EventUndone,
	graph.EventOverlapDetected,
}

// queryEventTypes reads ?type=: event types, comma-separated or the
// parameter repeated; none means every type.
func queryEventTypes(r *http.Request) ([]string, error) {
	var types []string
	for _, v := range r.URL.Query()["type"] {
		for t := range strings.SplitSeq(v, ",") {
			t = strings.TrimSpace(t)
			if !slices.Contains(eventTypes, t) {
				return nil, badRequest("query type=%q: not an event type (%s)", t, strings.Join(eventTypes, ", "))
			}
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	return types, nil
}

// wantsJSON reports whether an events request asks for the stored events
// as one JSON document instead of a stream.
func wantsJSON(r *http.Request) bool {
	a := r.Header.Get("Accept")
	return strings.Contains(a, "application/json") && !strings.Contains(a, "text/event-stream")
}

// listEvents answers with the stored events after ?after= (at most
// ?limit=, default and cap 1,000), oldest first.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, f events.Filter) error {
	after, limit, err := queryPage(r, 1000, 1000)
	if err != nil {
		return err
	}
	f.After, f.Limit = after, limit
	evs, err := s.events.List(r.Context(), f)
	if err != nil {
		return err
	}
	p := principalFrom(r.Context())
	out := apitypes.Events{Events: make([]apitypes.Event, 0, len(evs))}
	for _, e := range evs {
		out.Events = append(out.Events, eventFor(p, e))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func toEvent(e events.Event) apitypes.Event {
	ev := apitypes.Event{ID: e.ID, Type: e.Type, Repo: e.Repo, Payload: e.Payload, At: e.At}
	if e.Session != uuid.Nil {
		ev.Session = e.Session.String()
	}
	return ev
}

// otherSessionFields are, per event type, the payload fields that may
// name a session other than the event's own. Every other event a session
// receives names its own session only (TestEventsNameNoOtherSession checks
// each type).
var otherSessionFields = map[string][]string{
	graph.EventOverlapDetected: {"other", "by"},
}

// eventFor is e as p may see it, the one place events are narrowed: the
// admin sees every event whole; any other token (a session's, which
// receives only its own session's events) sees no other session's id.
// An overlap then tells that another session changed the path, with what
// overlaps (path, symbols, trial merge, the other agent), but not which.
func eventFor(p principal, e events.Event) apitypes.Event {
	ev := toEvent(e)
	fields := otherSessionFields[e.Type]
	if p.admin || len(fields) == 0 {
		return ev
	}
	var payload map[string]any
	if err := json.Unmarshal(e.Payload, &payload); err != nil {
		ev.Payload = map[string]any{}
		return ev
	}
	for _, f := range fields {
		if id, _ := payload[f].(string); id != "" && (p.session == uuid.Nil || id != p.session.String()) {
			delete(payload, f)
		}
	}
	ev.Payload = payload
	return ev
}

func (s *Server) repoEvents(w http.ResponseWriter, r *http.Request) error {
	rp, err := s.repos.Get(r.Context(), r.PathValue("repo"))
	if err != nil {
		return err
	}
	types, err := queryEventTypes(r)
	if err != nil {
		return err
	}
	return s.stream(w, r, events.Filter{Repo: rp.Name, Types: types})
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, f events.Filter) error {
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("after")
	}
	// after=now starts after the newest event instead of replaying the
	// log; the stream then names that id first (an id-only block), so a
	// client resuming with Last-Event-ID misses nothing in between.
	now := last == "now" && r.Header.Get("Last-Event-ID") == ""
	if now {
		n, err := s.events.Latest(r.Context())
		if err != nil {
			return err
		}
		f.After, last = n, ""
	}
	if last != "" {
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			return badRequest("Last-Event-ID %q: want an event id", last)
		}
		f.After = n
	}
	rc := beginEventStream(w)
	head := "retry: 2000\n\n"
	if now {
		head = fmt.Sprintf("retry: 2000\nid: %d\n\n", f.After)
	}
	if _, err := fmt.Fprint(w, head); err != nil {
		return nil
	}
	if err := rc.Flush(); err != nil {
		return nil
	}
	s.metrics.streams.Inc()
	defer s.metrics.streams.Dec()

	ctx := r.Context()
	p := principalFrom(ctx)
	events := s.events.Subscribe(ctx, f)
	tick := time.NewTicker(s.heartbeat)
	defer tick.Stop()
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return nil
			}
			if err := writeEvent(w, eventFor(p, e)); err != nil {
				return nil
			}
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return nil
			}
		case <-s.stop:
			return nil
		case <-ctx.Done():
			return nil
		}
		if err := rc.Flush(); err != nil {
			return nil // the client went away; the deferred cancel ends Subscribe
		}
	}
}

func writeEvent(w http.ResponseWriter, e apitypes.Event) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.ID, e.Type, data)
	return err
}

// beginEventStream answers 200 with a Server-Sent Events stream: without
// the server's read and write deadlines (a stream outlives them), with the
// headers that keep caches and proxies from holding it back. It returns
// the controller that flushes each event.
func beginEventStream(w http.ResponseWriter) *http.ResponseController {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return rc
}
