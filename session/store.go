package session

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
)

// Store is the metadata store behind the engine: repositories, sessions,
// overlays and their mutation logs, checkpoints, changesets with reviews,
// layers and events. Package db implements it for Postgres and SQLite; both
// pass one conformance suite.
//
// Every Tx method called on a Store is atomic on its own. InTx groups
// several calls into one transaction (for example: set a changeset accepted,
// add its layer and append the event). Store is safe for concurrent use, also
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
// obtained from, or alone when called on a Store. Errors are the sentinels in
// errors.go, wrapped with context; a failed compare-and-swap is a
// *ConflictError.
type Tx interface {
	// CreateRepo registers a repository; ErrDuplicate when the name is taken.
	CreateRepo(ctx context.Context, r Repo) error
	GetRepo(ctx context.Context, name string) (Repo, error)
	// ListRepos returns all repositories ordered by name.
	ListRepos(ctx context.Context) ([]Repo, error)

	// CreateSession inserts a session row. Seq and Checkpoints start at 0;
	// a zero Head is stored as BaseCommit. ErrNotFound when the repository
	// (or the fork parent) does not exist, ErrDuplicate when the id does.
	CreateSession(ctx context.Context, s Session) error
	GetSession(ctx context.Context, id uuid.UUID) (Session, error)
	// ListSessions returns sessions matching every set field of f, oldest
	// first.
	ListSessions(ctx context.Context, f SessionFilter) ([]Session, error)
	// SetSessionState moves a session from state from to state to (a
	// compare-and-swap) and touches last_active_at. A *ConflictError with
	// the current state when the session is not in state from.
	SetSessionState(ctx context.Context, id uuid.UUID, from, to State, at time.Time) error
	// SetSessionHead moves the session head from old to new by
	// compare-and-swap; a *ConflictError carries the current head.
	SetSessionHead(ctx context.Context, id uuid.UUID, old, new gitstore.OID) error
	// SetSessionBase moves the session's base commit from old to new by
	// compare-and-swap (rebase); a *ConflictError carries the current base.
	SetSessionBase(ctx context.Context, id uuid.UUID, old, new gitstore.OID) error
	// TouchSession sets last_active_at (never backwards) and, when
	// expiresAt is not zero, expires_at.
	TouchSession(ctx context.Context, id uuid.UUID, at, expiresAt time.Time) error

	// AppendMutation assigns m the session's next sequence number, records
	// it, applies changes to the overlay and touches last_active_at, all
	// at once. When m.Seq is not zero it is an expectation: the append
	// fails with a *ConflictError (Field "seq", Current the last sequence)
	// unless m.Seq is exactly the next number. Sequence numbers start at 1
	// and never repeat or skip, also with writers in several processes.
	// ErrSessionClosed when the session is in a terminal state.
	AppendMutation(ctx context.Context, m Mutation, changes []OverlayChange) (Mutation, error)
	// ReplaceOverlay is AppendMutation that replaces the whole overlay with
	// entries (rollback, rebase).
	ReplaceOverlay(ctx context.Context, m Mutation, entries []OverlayEntry) (Mutation, error)
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
	ListMutations(ctx context.Context, session uuid.UUID, after int64, limit int) ([]Mutation, error)

	// CreateCheckpoint records a checkpoint, assigns its number N (1, 2, …
	// per session) and moves the session head from c.Parent to c.Commit by
	// compare-and-swap (a *ConflictError with the current head otherwise).
	// A zero c.ID gets a new UUID; c.CreatedAt is kept as given.
	CreateCheckpoint(ctx context.Context, c Checkpoint) (Checkpoint, error)
	GetCheckpoint(ctx context.Context, id uuid.UUID) (Checkpoint, error)
	// ListCheckpoints returns a session's checkpoints by number.
	ListCheckpoints(ctx context.Context, session uuid.UUID) ([]Checkpoint, error)

	// CreateChangeset inserts a changeset; ErrNotFound when its session or
	// repository does not exist.
	CreateChangeset(ctx context.Context, c Changeset) error
	GetChangeset(ctx context.Context, id uuid.UUID) (Changeset, error)
	// ListChangesets returns changesets matching every set field of f,
	// oldest first.
	ListChangesets(ctx context.Context, f ChangesetFilter) ([]Changeset, error)
	// SetChangesetStatus moves a changeset from status from to status to by
	// compare-and-swap; a non-zero accepted sets AcceptedCommit. A
	// *ConflictError carries the current status.
	SetChangesetStatus(ctx context.Context, id uuid.UUID, from, to ChangesetStatus, accepted gitstore.OID, at time.Time) error
	// ReviseChangeset replaces what a changeset puts under review (head,
	// base, intent, target branch, revision, read set, status, UpdatedAt)
	// by compare-and-swap on its head commit: a *ConflictError (Field
	// "head") when the head is not oldHead or the changeset is accepted or
	// undone. Its reviews stay.
	ReviseChangeset(ctx context.Context, c Changeset, oldHead gitstore.OID) error
	// SetChangesetSelection records what a partial accept took of the
	// changeset and what it left out; ErrNotFound when there is no such
	// changeset.
	SetChangesetSelection(ctx context.Context, id uuid.UUID, sel AcceptedSelection) error
	// AddReview records a review with its line comments. A zero r.ID gets a
	// new UUID.
	AddReview(ctx context.Context, r Review) (Review, error)
	// ListReviews returns a changeset's reviews oldest first, with comments.
	ListReviews(ctx context.Context, changeset uuid.UUID) ([]Review, error)

	// AddLayer records an accepted changeset as the newest layer of its
	// branch and assigns Layer.ID; ErrDuplicate when the changeset already
	// has a layer.
	AddLayer(ctx context.Context, l Layer) (Layer, error)
	// ListLayers returns the layers of a branch, newest first.
	ListLayers(ctx context.Context, repo, branch string) ([]Layer, error)
	// UndoLayer marks the changeset's layer undone by compare-and-swap from
	// accepted; a *ConflictError when it is already undone.
	UndoLayer(ctx context.Context, changeset uuid.UUID, revert gitstore.OID, at time.Time) error

	// SetRepoPolicy creates or replaces a repository's accept policy;
	// ErrNotFound when the repository does not exist.
	SetRepoPolicy(ctx context.Context, p RepoPolicy) error
	// GetRepoPolicy returns a repository's accept policy; ErrNotFound when
	// none was set.
	GetRepoPolicy(ctx context.Context, repo string) (RepoPolicy, error)

	// AppendEvent assigns the next event id and records e. Ids increase in
	// commit order, so a reader resuming after id n never misses an event
	// committed later with a smaller id. In a transaction, append events
	// last: the id counter stays locked until commit.
	AppendEvent(ctx context.Context, e Event) (Event, error)
	// ListEvents returns up to f.Limit events with ID > f.After, oldest
	// first, for one session (f.Session) or one repository (f.Repo).
	ListEvents(ctx context.Context, f EventFilter) ([]Event, error)
}

// Repo is a git repository registered by name.
type Repo struct {
	Name      string
	Path      string
	CreatedAt time.Time
}

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
	Policy  Policy
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

// Mutation is one entry of a session's mutation log. Old[i] and New[i] are
// the blob ids of Paths[i] before and after (zero for none).
type Mutation struct {
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

// ChangesetStatus is a changeset's review state.
type ChangesetStatus string

// Changeset statuses.
const (
	ChangesetOpen             ChangesetStatus = "open"
	ChangesetApproved         ChangesetStatus = "approved"
	ChangesetChangesRequested ChangesetStatus = "changes_requested"
	ChangesetRejected         ChangesetStatus = "rejected"
	ChangesetAccepted         ChangesetStatus = "accepted"
	ChangesetUndone           ChangesetStatus = "undone"
)

// Changeset is a session's diff against its base, submitted for review.
type Changeset struct {
	ID           uuid.UUID
	Session      uuid.UUID
	Repo         string
	TargetBranch string
	Intent       string
	Status       ChangesetStatus
	BaseCommit   gitstore.OID
	// HeadCommit is the checkpoint commit under review.
	HeadCommit gitstore.OID
	// AcceptedCommit is the commit on the target branch, once accepted.
	AcceptedCommit gitstore.OID
	AgentID        string
	// Revision counts the submissions of the session this changeset
	// carries: 1 at first, one more each time it is submitted again.
	Revision int
	// ReadSet is the base blob id of every base file the session had read
	// when it was (last) submitted; nil for none.
	ReadSet map[string]gitstore.OID
	// Selection is what a partial accept took and left out; nil when the
	// changeset was accepted whole (or not yet).
	Selection *AcceptedSelection
	CreatedAt time.Time
	UpdatedAt time.Time
}

// AcceptedSelection is the part of a changeset a partial accept took
// (files whole, hunks by index into the revision's diff) and the part it
// left out, which stays in the session.
type AcceptedSelection struct {
	Taken   merge.Selection `json:"taken"`
	LeftOut merge.Selection `json:"left_out"`
}

// ChangesetFilter selects changesets; zero fields match everything.
type ChangesetFilter struct {
	Repo    string
	Status  ChangesetStatus
	Session uuid.UUID
	Limit   int
}

// Verdict is a review's outcome.
type Verdict string

// Review verdicts.
const (
	VerdictApprove        Verdict = "approve"
	VerdictRequestChanges Verdict = "request_changes"
	VerdictReject         Verdict = "reject"
	VerdictComment        Verdict = "comment"
)

// Review is one review of a changeset.
type Review struct {
	ID        uuid.UUID
	Changeset uuid.UUID
	Verdict   Verdict
	Body      string
	Author    string
	Comments  []LineComment
	// Revision is the changeset revision the review looked at.
	Revision  int
	CreatedAt time.Time
}

// LineComment is a review comment on one line of a file.
type LineComment struct {
	Path string
	Line int
	Body string
}

// RepoPolicy is a repository's accept policy. A repository without one
// uses the Manager's ChangesetConfig.
type RepoPolicy struct {
	Repo string
	// RequiredApprovals is how many distinct approvals (on the current
	// revision, none outstanding against) an accept needs; 0: none.
	RequiredApprovals int
	// AllowCheckedOut lets an accept move the branch a non-bare
	// repository has checked out (its work tree is not updated), as git's
	// receive.denyCurrentBranch=ignore.
	AllowCheckedOut bool
	// RefuseStaleReads makes an accept fail when a file the session read
	// changed on the branch since its base, instead of only reporting it.
	RefuseStaleReads bool
}

// LayerState says whether a layer is on its branch or was undone.
type LayerState string

// Layer states.
const (
	LayerAccepted LayerState = "accepted"
	LayerUndone   LayerState = "undone"
)

// Layer is an accepted changeset on a branch.
type Layer struct {
	// ID orders the layers of a store; a newer layer has a larger ID.
	ID        int64
	Repo      string
	Branch    string
	Changeset uuid.UUID
	// Commit is the commit the accept wrote on the branch.
	Commit gitstore.OID
	State  LayerState
	// RevertCommit is the commit that undid the layer, once undone.
	RevertCommit gitstore.OID
	AcceptedAt   time.Time
	UndoneAt     time.Time
}

// Event is one entry of the event log that SSE clients follow.
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

// EventFilter selects events after an id, for one session or, when Session
// is uuid.Nil, for one repository (including its sessions' events).
type EventFilter struct {
	Repo    string
	Session uuid.UUID
	After   int64
	Limit   int
}
