package session

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/sessiond/sessiond/record"
)

// Event types.
const (
	EventFileWritten       = "file.written"
	EventFileDeleted       = "file.deleted"
	EventCheckpointCreated = "checkpoint.created"
	EventSessionState      = "session.state"
	EventExecRecorded      = "exec.recorded"
)

// broker wakes subscribers when events were committed. Events live in the
// store (so a subscriber can resume after any id, across restarts); the
// broker only says "look again".
type broker struct {
	mu   sync.Mutex    // guards wake
	wake chan struct{} // closed and replaced on every notify
}

func newBroker() *broker { return &broker{wake: make(chan struct{})} }

func (b *broker) notify() {
	b.mu.Lock()
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}

func (b *broker) waiter() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.wake
}

// Notify wakes subscribers; for events appended to the store by others
// (package changeset, overlap detection).
func (m *Manager) Notify() { m.events.notify() }

// Subscribe streams events matching f (one session, or one repository with
// all its sessions) with ids after f.After, in order, until ctx ends. The
// channel is closed when ctx ends or the store fails.
func (m *Manager) Subscribe(ctx context.Context, f EventFilter) <-chan Event {
	out := make(chan Event)
	go func() {
		defer close(out)
		after := f.After
		for {
			wake := m.events.waiter()
			q := f
			q.After = after
			q.Limit = 256
			evs, err := m.store.ListEvents(ctx, q)
			if err != nil {
				return
			}
			for _, e := range evs {
				select {
				case out <- e:
					after = e.ID
				case <-ctx.Done():
					return
				}
			}
			if len(evs) == q.Limit {
				continue
			}
			select {
			case <-wake:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// Events returns up to limit events after id, without waiting.
func (m *Manager) Events(ctx context.Context, f EventFilter) ([]Event, error) {
	return m.store.ListEvents(ctx, f)
}

// Payload is an event's payload: v as JSON (record.Payload).
func Payload(v any) json.RawMessage { return record.Payload(v) }

func fileEvent(s Session, seq int64, c change, at time.Time) Event {
	typ := EventFileWritten
	p := map[string]any{"session": s.ID, "seq": seq, "path": c.path}
	if c.deleted {
		typ = EventFileDeleted
	} else {
		p["oid"] = c.new.String()
		p["mode"] = c.newMode.String()
	}
	return Event{Repo: s.Repo, Session: s.ID, Type: typ, Payload: Payload(p), At: at}
}

func stateEvent(s Session, from State, at time.Time) Event {
	return Event{Repo: s.Repo, Session: s.ID, Type: EventSessionState,
		Payload: Payload(map[string]any{"session": s.ID, "state": s.State, "from": from, "seq": s.Seq}), At: at}
}

func checkpointEvent(s Session, c Checkpoint) Event {
	return Event{Repo: s.Repo, Session: s.ID, Type: EventCheckpointCreated,
		Payload: Payload(map[string]any{"session": s.ID, "checkpoint": c.ID, "n": c.N, "commit": c.Commit.String(), "seq": c.Seq, "label": c.Label}), At: c.CreatedAt}
}

func execEvent(s Session, m Mutation, at time.Time) Event {
	return Event{Repo: s.Repo, Session: s.ID, Type: EventExecRecorded,
		Payload: Payload(map[string]any{"session": s.ID, "seq": m.Seq, "argv": m.Exec.Argv,
			"exit_code": m.Exec.ExitCode, "duration_ms": m.Exec.DurationMS, "paths": m.Paths}), At: at}
}
