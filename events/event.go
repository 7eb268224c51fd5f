package events

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Event is one entry of the event log.
type Event struct {
	// ID increases by one per event in the store, in commit order.
	ID   int64
	Repo string
	// Session is uuid.Nil for repository events.
	Session uuid.UUID
	Type    string
	Payload json.RawMessage
	At      time.Time
}

// Filter selects events after an id, for one session or, when Session is
// uuid.Nil, for one repository (including its sessions' events).
type Filter struct {
	Repo    string
	Session uuid.UUID
	After   int64
	Limit   int
	// Types, when set, keeps only events of these types.
	Types []string
}

// Payload is an event's payload: v as JSON. Only plain values built by
// the engines and their observers (maps, structs of strings and numbers)
// reach it, which always encode; anything else is a programming error.
func Payload(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
