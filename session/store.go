package session

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/record"
)

// Store is the metadata store behind the engine: sessions,
// overlays and their mutation logs, checkpoints, and the events their
// transactions append. Package db implements it for Postgres and SQLite;
// both pass one conformance suite. Changesets, reviews and layers are
// package changeset's store, over the same database.
//
// Every Tx method called on a Store is atomic on its own. InTx groups
// several calls into one transaction (for example: record a mutation and
// append its events). Store is safe for concurrent use, also
// by several processes sharing one database.
type Store interface {
	Tx
	// InTx runs fn in one transaction and commits when fn returns nil. fn
	// may run more than once when the database asks for a retry
	// (serialization failures), so it must not have other side effects.
	// The Tx is valid only inside fn and is not safe for concurrent use.
	InTx(ctx context.Context, fn func(Tx) error) error
	// Close releases the store's connections. Writes committed before Close
	// stay; a store opened again on the same database sees them.
	Close() error
}

// Tx is the set of store operations; each runs inside the transaction it was
// obtained from, or alone when called on a Store. Errors are record's
// kinds, wrapped with context; a failed compare-and-swap is a
// *record.ConflictError.
type Tx interface {
	// CreateSession inserts a session row. Seq and Checkpoints start at 0;
	// a zero Head is stored as BaseCommit. record.ErrNotFound when the repository
	// (or the fork parent) does not exist, record.ErrDuplicate when the id does.
	CreateSession(ctx context.Context, s Session) error
	GetSession(ctx context.Context, id uuid.UUID) (Session, error)
	// ListSessions returns sessions matching every set field of f, oldest
	// first.
	ListSessions(ctx context.Context, f SessionFilter) ([]Session, error)
	// SetSessionState moves a session from state from to state to (a
	// compare-and-swap) and touches last_active_at. A *record.ConflictError with
	// the current state when the session is not in state from.
	SetSessionState(ctx context.Context, id uuid.UUID, from, to State, at time.Time) error
	// SetSessionHead moves the session head from old to new by
	// compare-and-swap; a *record.ConflictError carries the current head.
	SetSessionHead(ctx context.Context, id uuid.UUID, old, new gitstore.OID) error
	// SetSessionBase moves the session's base commit from old to new by
	// compare-and-swap (rebase); a *record.ConflictError carries the current base.
	SetSessionBase(ctx context.Context, id uuid.UUID, old, new gitstore.OID) error
	// TouchSession sets last_active_at (never backwards) and, when
	// expiresAt is not zero, expires_at.
	TouchSession(ctx context.Context, id uuid.UUID, at, expiresAt time.Time) error

	// AppendMutation assigns m the session's next sequence number, records
	// it, applies changes to the overlay and touches last_active_at, all
	// at once. When m.Seq is not zero it is an expectation: the append
	// fails with a *record.ConflictError (Field "seq", Current the last sequence)
	// unless m.Seq is exactly the next number. Sequence numbers start at 1
	// and never repeat or skip, also with writers in several processes.
	// record.ErrSessionClosed when the session is in a terminal state.
	AppendMutation(ctx context.Context, m MutationRecord, changes []OverlayChange) (MutationRecord, error)
	// ReplaceOverlay is AppendMutation that replaces the whole overlay with
	// entries (rollback, rebase).
	ReplaceOverlay(ctx context.Context, m MutationRecord, entries []OverlayEntry) (MutationRecord, error)
	// ListOverlay returns the session's overlay entries ordered by path
	// (byte order).
	ListOverlay(ctx context.Context, session uuid.UUID) ([]OverlayEntry, error)
	// RecordReads adds to the session's read set: path → the base blob the
	// session read there. A path already recorded keeps its first blob.
	RecordReads(ctx context.Context, session uuid.UUID, reads map[string]gitstore.OID) error
	// ListReads returns the session's read set.
	ListReads(ctx context.Context, session uuid.UUID) (map[string]gitstore.OID, error)
	// ListMutations returns up to limit mutations with Seq > after in
	// sequence order; limit <= 0 means no limit.
	ListMutations(ctx context.Context, session uuid.UUID, after int64, limit int) ([]MutationRecord, error)

	// CreateCheckpoint records a checkpoint, assigns its number N (1, 2, …
	// per session) and moves the session head from c.Parent to c.Commit by
	// compare-and-swap (a *record.ConflictError with the current head otherwise).
	// A zero c.ID gets a new UUID; c.CreatedAt is kept as given.
	CreateCheckpoint(ctx context.Context, c Checkpoint) (Checkpoint, error)
	GetCheckpoint(ctx context.Context, id uuid.UUID) (Checkpoint, error)
	// ListCheckpoints returns a session's checkpoints by number.
	ListCheckpoints(ctx context.Context, session uuid.UUID) ([]Checkpoint, error)

	// PutConflicts replaces the session's kept conflicts with cs (none
	// clears them). ListConflicts returns them by path; DeleteConflicts
	// removes those at paths (absent ones are ignored).
	PutConflicts(ctx context.Context, session uuid.UUID, cs []KeptConflict) error
	ListConflicts(ctx context.Context, session uuid.UUID) ([]KeptConflict, error)
	DeleteConflicts(ctx context.Context, session uuid.UUID, paths []string) error
	// PutResolution remembers a resolution under its repository and
	// rerere id, replacing one remembered before; GetResolution returns
	// it, record.ErrNotFound when there is none.
	PutResolution(ctx context.Context, r Resolution) error
	GetResolution(ctx context.Context, repo, id string) (Resolution, error)

	// AppendEvent records an event of the transaction's change (see
	// events.Appender). Ids increase in commit order, so a reader resuming
	// after id n never misses an event committed later with a smaller id.
	events.Appender
}

// State is a session's lifecycle state (package record's).
type State = record.State

// Session states. Active and submitted sessions accept writes; the others
// are terminal.
const (
	StateActive    = record.StateActive
	StateSubmitted = record.StateSubmitted
	StateAccepted  = record.StateAccepted
	StateRejected  = record.StateRejected
	StateAbandoned = record.StateAbandoned
	StateExpired   = record.StateExpired
)

// Mode says whether a session may write.
type Mode string

// Session modes.
const (
	ModeReadWrite Mode = "read_write"
	ModeReadOnly  Mode = "read_only"
)

// Policy is a session's access policy: glob patterns (see Glob) for paths
// it may read, may write and may never touch. Deny wins; an empty Read
// allows every read and Write globs are readable too; a path is writable
// when it is readable and Write is empty or matches it. Parent, set on a
// fork that asked for its own lists, is the policy inherited from the
// session it was forked from: a path must pass it as well, so a fork is
// never wider than its parent.
type Policy struct {
	Read   []string `json:"read,omitempty"`
	Write  []string `json:"write,omitempty"`
	Deny   []string `json:"deny,omitempty"`
	Parent *Policy  `json:"parent,omitempty"`
}

func (p Policy) empty() bool {
	return len(p.Read) == 0 && len(p.Write) == 0 && len(p.Deny) == 0 && p.Parent == nil
}

// Session is one agent's isolated view of a repository.
type Session struct {
	ID uuid.UUID
	// Repo is the repository name.
	Repo string
	// Parent is the session this one was forked from, uuid.Nil if none.
	Parent     uuid.UUID
	AgentID    string
	AgentName  string
	Intent     string
	BaseCommit gitstore.OID
	// BaseRef is the branch the session started from; empty for a commit.
	BaseRef string
	Mode    Mode
	State   State
	// Caches is "private" when every command gets the session's own tool
	// caches; empty: the repository's shared ones (ExecOptions.Caches).
	Caches string
	// Env are the session's own plain variables, given at creation:
	// every command gets them, over the repository's (a request's own
	// win over both).
	Env    map[string]string
	Policy Policy
	// Head is the commit the next checkpoint builds on: the latest
	// checkpoint, or BaseCommit before the first. It moves only by
	// compare-and-swap.
	Head gitstore.OID
	// Seq is the sequence number of the latest mutation, 0 for none.
	Seq int64
	// Checkpoints is the number of the latest checkpoint, 0 for none.
	Checkpoints  int
	CreatedAt    time.Time
	LastActiveAt time.Time
	// ExpiresAt is when an idle session expires; zero for never.
	ExpiresAt time.Time
}

// SessionFilter selects sessions; zero fields match everything.
type SessionFilter struct {
	Repo    string
	State   State
	AgentID string
	// ExpiredBy selects non-terminal sessions whose ExpiresAt is at or
	// before it.
	ExpiredBy time.Time
	Limit     int
}

// EntryStatus is what an overlay entry does to the base.
type EntryStatus string

// Overlay entry statuses. A deleted entry is a whiteout: it hides the path,
// and everything under it when the path is a directory in the base.
const (
	StatusAdded    EntryStatus = "added"
	StatusModified EntryStatus = "modified"
	StatusDeleted  EntryStatus = "deleted"
)

// OverlayEntry is one path of a session's overlay. Blob and Mode are zero
// for a deleted entry.
type OverlayEntry struct {
	Path   string
	Status EntryStatus
	Blob   gitstore.OID
	Mode   gitstore.Mode
}

// OverlayChange is one change to an overlay: put Entry (insert or replace
// the entry at Entry.Path), or, with Remove, drop the entry at Entry.Path so
// the path shows the base again. Removing is not deleting: a deletion is a
// put of an entry with StatusDeleted.
type OverlayChange struct {
	Entry  OverlayEntry
	Remove bool
}

// Op names what a mutation did.
type Op string

// Mutation ops.
const (
	OpWrite    Op = "write"
	OpAppend   Op = "append"
	OpDelete   Op = "delete"
	OpMove     Op = "move"
	OpCopy     Op = "copy"
	OpReplace  Op = "replace"
	OpEdits    Op = "edits"
	OpRollback Op = "rollback"
	OpRebase   Op = "rebase"
	OpMerge    Op = "merge"
	OpFork     Op = "fork"
	OpExec     Op = "exec"
)

// MutationRecord is a committed mutation as the store keeps it: one entry
// of a session's mutation log (the mutation in flight is a draft). Old[i]
// and New[i] are the blob ids of Paths[i] before and after (zero for none).
type MutationRecord struct {
	Session uuid.UUID
	Seq     int64
	Op      Op
	Paths   []string
	Old     []gitstore.OID
	New     []gitstore.OID
	Actor   string
	At      time.Time
	// Exec describes the command of an exec mutation; nil for other ops.
	Exec *ExecInfo
}

// ExecInfo is what an exec mutation records of its command.
type ExecInfo struct {
	Argv       []string `json:"argv"`
	ExitCode   int      `json:"exit_code"`
	DurationMS int64    `json:"duration_ms"`
	// Service names the services whose changes a service mutation
	// records (op service; comma-separated when several ran).
	Service string `json:"service,omitempty"`
}

// Checkpoint is a commit of base tree plus overlay at mutation Seq.
type Checkpoint struct {
	ID      uuid.UUID
	Session uuid.UUID
	// N is the checkpoint's number in its session, from 1.
	N      int
	Commit gitstore.OID
	Tree   gitstore.OID
	// Parent is the commit Commit builds on: the previous checkpoint or the
	// base; the session head must be Parent when the checkpoint is created.
	Parent    gitstore.OID
	Seq       int64
	Label     string
	Message   string
	CreatedAt time.Time
}
