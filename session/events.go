package session

import (
	"time"

	"github.com/sessiond/sessiond/events"
)

// Event types.
const (
	EventFileWritten       = "file.written"
	EventFileDeleted       = "file.deleted"
	EventCheckpointCreated = "checkpoint.created"
	EventSessionState      = "session.state"
	EventExecRecorded      = "exec.recorded"
)

func fileEvent(s Session, seq int64, c change, at time.Time) events.Event {
	typ := EventFileWritten
	p := map[string]any{"session": s.ID, "seq": seq, "path": c.path}
	if c.deleted {
		typ = EventFileDeleted
	} else {
		p["oid"] = c.new.String()
		p["mode"] = c.newMode.String()
	}
	return events.Event{Repo: s.Repo, Session: s.ID, Type: typ, Payload: events.Payload(p), At: at}
}

func stateEvent(s Session, from State, at time.Time) events.Event {
	return events.Event{Repo: s.Repo, Session: s.ID, Type: EventSessionState,
		Payload: events.Payload(map[string]any{"session": s.ID, "state": s.State, "from": from, "seq": s.Seq}), At: at}
}

func checkpointEvent(s Session, c Checkpoint) events.Event {
	return events.Event{Repo: s.Repo, Session: s.ID, Type: EventCheckpointCreated,
		Payload: events.Payload(map[string]any{"session": s.ID, "checkpoint": c.ID, "n": c.N, "commit": c.Commit.String(), "seq": c.Seq, "label": c.Label}), At: c.CreatedAt}
}

func execEvent(s Session, m MutationRecord, at time.Time) events.Event {
	return events.Event{Repo: s.Repo, Session: s.ID, Type: EventExecRecorded,
		Payload: events.Payload(map[string]any{"session": s.ID, "seq": m.Seq, "argv": m.Exec.Argv,
			"exit_code": m.Exec.ExitCode, "duration_ms": m.Exec.DurationMS, "paths": m.Paths}), At: at}
}
