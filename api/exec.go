package api

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/session"
)

// exec runs a command on the session's view (section 9). With Accept:
// text/event-stream the output streams as stdout and stderr events and
// the answer is one result event; bad input is still a plain error
// answer, since nothing streams before the command starts.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	var req apitypes.ExecRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.TimeoutSeconds < 0 || math.IsNaN(req.TimeoutSeconds) || req.TimeoutSeconds > 1e7 {
		return badRequest("timeout_seconds %v: want a positive number of seconds (0 or absent: the default, 600), at most the daemon's --exec-max-timeout", req.TimeoutSeconds)
	}
	opts := session.ExecOptions{
		Argv: req.Argv, Command: req.Command, Cwd: req.Cwd, Env: req.Env, Stdin: []byte(req.Stdin),
		Timeout: time.Duration(req.TimeoutSeconds * float64(time.Second)),
		Network: req.Network != nil && *req.Network, Record: session.RecordMode(req.Record),
		Caches: req.Caches,
	}
	stream := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	var (
		mu      sync.Mutex
		started bool
	)
	rc := http.NewResponseController(w)
	// A command may run longer than the server's write timeout.
	_ = rc.SetWriteDeadline(time.Time{})
	startStream := func() {
		if started {
			return
		}
		started = true
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
	}
	event := func(name string, v any) {
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		_ = rc.Flush()
	}
	if stream {
		opts.Output = func(name string, p []byte) {
			mu.Lock()
			defer mu.Unlock()
			startStream()
			event(name, apitypes.ExecOutput{Data: string(p)})
		}
	}
	res, err := s.runExec(r.Context(), id, opts)
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		if !started {
			return err
		}
		s.space.note(err)
		event("error", apitypes.ErrorBody{Error: mapError(err)})
		return nil
	}
	out := toExecResponse(res)
	if !stream {
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	startStream()
	event("result", out)
	return nil
}

func toExecResponse(res session.ExecResult) apitypes.ExecResponse {
	out := apitypes.ExecResponse{
		ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut, DurationMS: res.Duration.Milliseconds(),
		Stdout: string(res.Stdout), Stderr: string(res.Stderr), OutputTruncated: res.OutputTruncated,
		Changes: make([]apitypes.ExecChange, 0, len(res.Changes)), Rejected: make([]apitypes.ExecRejection, 0, len(res.Rejected)),
		Recorded: res.Recorded, NotRecorded: res.NotRecorded, Isolated: res.Isolated,
		Limits: make([]apitypes.ExecLimit, 0, len(res.Limits)), LimitExceeded: res.Exceeded, LandlockABI: res.Landlock,
		Checkpoints: make([]apitypes.Checkpoint, 0, len(res.Checkpoints)), GitNote: res.GitNote, GitAbsent: res.GitAbsent,
		NetworkRefused: res.NetworkRefused,
	}
	for _, c := range res.Checkpoints {
		out.Checkpoints = append(out.Checkpoints, toCheckpoint(c))
	}
	for _, l := range res.Limits {
		out.Limits = append(out.Limits, apitypes.ExecLimit{Name: l.Name, Value: l.Value, Via: l.Via})
	}
	for _, c := range res.Changes {
		ec := apitypes.ExecChange{Path: c.Path, Status: c.Status.String()}
		if c.Mode != 0 {
			ec.Mode = c.Mode.String()
		}
		out.Changes = append(out.Changes, ec)
	}
	for _, rj := range res.Rejected {
		out.Rejected = append(out.Rejected, apitypes.ExecRejection(rj))
	}
	if res.Mutation != nil {
		m := toMutation(*res.Mutation)
		out.Mutation = &m
	}
	env := toExecEnvironment(res.Environment)
	out.Environment, out.EnvironmentStale = &env, res.EnvironmentStale
	return out
}

// runExec runs the command through the Executor; without one the daemon
// runs no commands.
func (s *Server) runExec(ctx context.Context, id uuid.UUID, opts session.ExecOptions) (session.ExecResult, error) {
	if s.runner == nil {
		return session.ExecResult{}, session.ErrNoWorkdir
	}
	return s.runner.Exec(ctx, id, opts)
}

// followExec serves GET /v1/sessions/{id}/exec: the output of the
// session's command running now, or of the next to start, as
// Server-Sent Events (start, output, end), command after command until
// the client leaves. Another client's way to watch a command that a
// caller of POST …/exec runs.
func (s *Server) followExec(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	if s.runner == nil {
		return session.ErrNoWorkdir
	}
	f, err := s.runner.FollowExec(r.Context(), id)
	if err != nil {
		return err
	}
	defer f.Close()
	rc := beginEventStream(w)
	// The follower is registered: a command that starts from now on is
	// seen. Say so at once, so a client knows it is following.
	if _, err := fmt.Fprint(w, "retry: 2000\n\n"); err != nil {
		return nil
	}
	if err := rc.Flush(); err != nil {
		return nil
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
	chunks := make(chan session.ExecChunk)
	go func() {
		defer close(chunks)
		for {
			c, err := f.Next(ctx)
			if err != nil {
				return
			}
			select {
			case chunks <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	tick := time.NewTicker(s.heartbeat)
	defer tick.Stop()
	for {
		select {
		case c, ok := <-chunks:
			if !ok {
				return nil
			}
			ev := apitypes.ExecFollowEvent{Type: c.Kind, Argv: c.Argv, Stream: c.Stream, Data: string(c.Data), Dropped: c.Dropped, Error: c.Error}
			switch c.Kind {
			case "start":
				at := c.At
				ev.At = &at
			case "end":
				code := c.ExitCode
				ev.ExitCode = &code
			}
			data, _ := json.Marshal(ev)
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", c.Kind, data); err != nil {
				return nil
			}
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
	}
}
