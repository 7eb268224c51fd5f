package session

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
)

// liveOutputCap bounds the output a running command keeps for followers
// that join late: the newest chunks, up to this many bytes.
const liveOutputCap = 256 << 10

// ExecChunk is what a follower of a session's commands gets, in order:
// a start (Argv, At), the output as it comes (Stream "stdout" or
// "stderr", Data), then an end (ExitCode, or Error when the command could
// not run).
type ExecChunk struct {
	Kind     string // "start", "output" or "end"
	Argv     []string
	At       time.Time
	Stream   string
	Data     []byte
	ExitCode int
	Error    string
	// Dropped counts output chunks the follower missed because it joined
	// after they left the bounded buffer.
	Dropped int
}

// liveExec is one command as its followers see it.
type liveExec struct {
	argv []string
	at   time.Time
	// cancel kills the command (Executor.Abandon).
	cancel context.CancelFunc

	mu      sync.Mutex // guards the fields below
	chunks  []ExecChunk
	base    int // absolute index of chunks[0]
	bytes   int
	done    bool
	end     ExecChunk
	changed chan struct{} // closed and replaced on every change
}

func (l *liveExec) write(stream string, p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.chunks = append(l.chunks, ExecChunk{Kind: "output", Stream: stream, Data: append([]byte(nil), p...)})
	l.bytes += len(p)
	for l.bytes > liveOutputCap && len(l.chunks) > 1 {
		l.bytes -= len(l.chunks[0].Data)
		l.chunks = l.chunks[1:]
		l.base++
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *liveExec) finish(end ExecChunk) {
	l.mu.Lock()
	defer l.mu.Unlock()
	end.Kind = "end"
	l.done, l.end = true, end
	close(l.changed)
	l.changed = make(chan struct{})
}

// sessionLive is a session's commands as followers see them: the latest
// (running or just finished) and how many have started.
type sessionLive struct {
	last    *liveExec
	started int
	refs    int           // followers
	next    chan struct{} // closed and replaced when a command starts
}

// liveRegistry holds the sessions that run a command or have followers.
type liveRegistry struct {
	mu       sync.Mutex // guards sessions, running and every sessionLive's fields
	sessions map[uuid.UUID]*sessionLive
	running  int // commands started and not finished
}

func (r *liveRegistry) get(id uuid.UUID) *sessionLive {
	if r.sessions == nil {
		r.sessions = map[uuid.UUID]*sessionLive{}
	}
	sl := r.sessions[id]
	if sl == nil {
		sl = &sessionLive{next: make(chan struct{})}
		r.sessions[id] = sl
	}
	return sl
}

// start records a command starting on session id and returns it.
func (r *liveRegistry) start(id uuid.UUID, argv []string, cancel context.CancelFunc) *liveExec {
	l := &liveExec{argv: argv, at: time.Now().UTC(), cancel: cancel, changed: make(chan struct{})}
	r.mu.Lock()
	defer r.mu.Unlock()
	sl := r.get(id)
	sl.last = l
	sl.started++
	r.running++
	close(sl.next)
	sl.next = make(chan struct{})
	return l
}

// finish ends a command and forgets the session when nobody follows it.
func (r *liveRegistry) finish(id uuid.UUID, l *liveExec, end ExecChunk) {
	l.finish(end)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running--
	if sl := r.sessions[id]; sl != nil && sl.refs == 0 && sl.last == l {
		delete(r.sessions, id)
	}
}

// Abandon kills what runs on session id, for a node that lost the
// session's ownership: the command running now (its end is not recorded:
// the store's fence refuses it) and every service. It returns at once.
func (e *Executor) Abandon(id uuid.UUID) {
	e.live.mu.Lock()
	if sl := e.live.sessions[id]; sl != nil && sl.last != nil && sl.last.cancel != nil {
		sl.last.cancel()
	}
	e.live.mu.Unlock()
	e.stopSession(id, ReasonLost)
}

// Running is the number of commands running on the sessions of this
// process.
func (e *Executor) Running() int {
	e.live.mu.Lock()
	defer e.live.mu.Unlock()
	return e.live.running
}

// ExecFollower follows the commands of one session: the one running when
// it was made, else the next to start. It is not safe for concurrent use;
// Close it when done.
type ExecFollower struct {
	reg  *liveRegistry
	id   uuid.UUID
	sl   *sessionLive
	seen int       // commands started before it attached to one
	cur  *liveExec // the command it follows; nil while it waits for one
	next int       // absolute index of the next output chunk
	sent bool      // the start of cur was returned
}

// FollowExec follows the session's commands: the command running now, or
// the next one to start (Next waits for it). It returns at once, already
// registered, so a command that starts after it returns is seen. It
// fails for a session that does not exist, and with ErrNoWorkdir where
// no command can run.
func (m *Executor) FollowExec(ctx context.Context, id uuid.UUID) (*ExecFollower, error) {
	if m.workdirs == nil {
		return nil, ErrNoWorkdir
	}
	if _, err := m.Get(ctx, id); err != nil {
		return nil, err
	}
	return m.live.follow(id), nil
}

// follow registers a follower of session id's commands.
func (r *liveRegistry) follow(id uuid.UUID) *ExecFollower {
	r.mu.Lock()
	defer r.mu.Unlock()
	sl := r.get(id)
	sl.refs++
	f := &ExecFollower{reg: r, id: id, sl: sl, seen: sl.started}
	if sl.last != nil {
		sl.last.mu.Lock()
		running := !sl.last.done
		sl.last.mu.Unlock()
		if running {
			f.cur = sl.last
		}
	}
	return f
}

// Next returns the next chunk: it waits for a command to start, for its
// output and for its end, until ctx is done (then ctx's error). After an
// end the follower follows the next command.
func (f *ExecFollower) Next(ctx context.Context) (ExecChunk, error) {
	for f.cur == nil {
		f.reg.mu.Lock()
		if f.sl.started > f.seen {
			f.cur, f.seen, f.next, f.sent = f.sl.last, f.sl.started, 0, false
		}
		wait := f.sl.next
		f.reg.mu.Unlock()
		if f.cur != nil {
			break
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return ExecChunk{}, ctx.Err()
		}
	}
	l := f.cur
	if !f.sent {
		f.sent = true
		return ExecChunk{Kind: "start", Argv: l.argv, At: l.at}, nil
	}
	for {
		l.mu.Lock()
		dropped := 0
		if f.next < l.base {
			dropped, f.next = l.base-f.next, l.base
		}
		if i := f.next - l.base; i < len(l.chunks) {
			c := l.chunks[i]
			l.mu.Unlock()
			f.next++
			c.Dropped = dropped
			return c, nil
		}
		if l.done {
			end := l.end
			l.mu.Unlock()
			f.cur = nil
			f.reg.mu.Lock()
			if f.sl.last == l {
				f.seen = f.sl.started
			}
			f.reg.mu.Unlock()
			return end, nil
		}
		wait := l.changed
		l.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return ExecChunk{}, ctx.Err()
		}
	}
}

// Close stops following; the session is forgotten when nobody follows
// it and no command runs.
func (f *ExecFollower) Close() {
	f.reg.mu.Lock()
	defer f.reg.mu.Unlock()
	f.sl.refs--
	if f.sl.refs == 0 && f.reg.sessions[f.id] == f.sl {
		if last := f.sl.last; last == nil || func() bool { last.mu.Lock(); defer last.mu.Unlock(); return last.done }() {
			delete(f.reg.sessions, f.id)
		}
	}
}
