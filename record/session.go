package record

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
)

// State is a session's lifecycle state.
type State string

// Session states. Active and submitted sessions accept writes; the others
// are terminal.
const (
	StateActive    State = "active"
	StateSubmitted State = "submitted"
	StateAccepted  State = "accepted"
	StateRejected  State = "rejected"
	StateAbandoned State = "abandoned"
	StateExpired   State = "expired"
)

// Terminal reports whether a session in state s refuses writes.
func (s State) Terminal() bool { return s != StateActive && s != StateSubmitted }

// SessionInfo is what a changeset needs to know of its session.
type SessionInfo struct {
	ID         uuid.UUID
	Repo       string
	AgentID    string
	AgentName  string
	Intent     string
	BaseCommit gitstore.OID
	// BaseRef is the branch the session started from; empty for a commit.
	BaseRef string
	// Head is the latest checkpoint, or BaseCommit before the first.
	Head  gitstore.OID
	State State
}

// UnnamedAgent is the agent of a session started with neither an agent id
// nor a name.
const UnnamedAgent = "agent"

// AgentIdentity is the one identity of an agent given as an id, a name or
// both: one alone is both, and neither is UnnamedAgent. Every place that
// shows or signs with the agent (session and changeset listings, the
// review page, commit authors and the Sessiond-Agent trailer) then shows
// the same thing.
func AgentIdentity(id, name string) (string, string) {
	id, name = strings.TrimSpace(id), strings.TrimSpace(name)
	switch {
	case id == "" && name == "":
		return UnnamedAgent, UnnamedAgent
	case id == "":
		return name, name
	case name == "":
		return id, id
	}
	return id, name
}

// AgentLabel is how an agent is shown to a person: its name, and its id
// in parentheses when that differs. Sessions recorded before
// AgentIdentity held may have one of them empty.
func AgentLabel(id, name string) string {
	id, name = AgentIdentity(id, name)
	if id == name {
		return name
	}
	return name + " (" + id + ")"
}

// Agent is the session's agent id as commits carry it in the
// Sessiond-Agent trailer.
func (s SessionInfo) Agent() string {
	id, _ := AgentIdentity(s.AgentID, s.AgentName)
	return id
}

// Author is the signature of the session's agent on the commits made of
// its work: its checkpoints and the accepts of its changesets. The email
// is the agent id's, with spaces as dots, at sessiond.
func (s SessionInfo) Author(when time.Time) gitstore.Signature {
	id, name := AgentIdentity(s.AgentID, s.AgentName)
	return gitstore.Signature{Name: name, Email: strings.Join(strings.Fields(id), ".") + "@sessiond", When: when}
}

// StateTx is the part of a store transaction that moves a session's state
// and records its event; the session engine's and the changeset package's
// transactions both have it, so a changeset and its session change at once.
type StateTx interface {
	// SetSessionState moves a session from state from to state to (a
	// compare-and-swap) and touches last_active_at. A *ConflictError with
	// the current state when the session is not in state from.
	SetSessionState(ctx context.Context, id uuid.UUID, from, to State, at time.Time) error
	// AppendEvent assigns the next event id and records e.
	AppendEvent(ctx context.Context, e events.Event) (events.Event, error)
}

// Held is a session held under its lock by a changeset operation (the
// session engine implements it): nothing else runs on the session until
// Release. A state moved with MoveState shows in memory only after
// Committed, once the transaction that moved it committed.
type Held interface {
	// Info is the session as it is now.
	Info() SessionInfo
	// CheckOpen fails with ErrSessionClosed unless the session takes
	// writes (expiring it first when its time is up).
	CheckOpen(ctx context.Context) error
	// Changed reports whether the session's view differs from its base.
	Changed() bool
	// Freeze checkpoints the view with message, unless the latest
	// checkpoint already holds it, and saves the read set; it returns the
	// checkpoint commit and the read set (path → base blob read).
	Freeze(ctx context.Context, message string) (head gitstore.OID, reads map[string]gitstore.OID, err error)
	// MoveState moves the session from its current state to to in tx,
	// with its session.state event.
	MoveState(ctx context.Context, tx StateTx, to State, at time.Time) error
	// Committed makes the state MoveState moved in a committed
	// transaction the session's state in memory too (and tells the
	// engine's observers when the session is closed).
	Committed(ctx context.Context)
	// Rebase moves the session onto commit: with merge, its changes are
	// merged onto commit's tree (a *merge.ConflictError leaves it as it
	// was); without, its view stays and only its base moves (commit holds
	// part of the view). One rebase mutation by actor; branch names the
	// commit's side in conflicts.
	Rebase(ctx context.Context, commit gitstore.OID, merge bool, actor, branch string) error
	// Release lets the session's lock go.
	Release()
}
