package changeset

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/record"
)

// Store is where changesets, their reviews, the layers of branches and the
// repositories' accept policies are kept, beside the sessions and events
// of the same database. Package db implements it for Postgres and SQLite;
// both pass one conformance suite.
//
// Every Tx method called on a Store is atomic on its own. InTx groups
// several calls into one transaction (for example: set a changeset
// accepted, add its layer, move its session and append the events). A
// Store is safe for concurrent use, also by several processes sharing one
// database.
type Store interface {
	Tx
	// InTx runs fn in one transaction and commits when fn returns nil. fn
	// may run more than once when the database asks for a retry
	// (serialization failures), so it must not have other side effects.
	// The Tx is valid only inside fn and is not safe for concurrent use.
	InTx(ctx context.Context, fn func(Tx) error) error
}

// Tx is the set of store operations; each runs inside the transaction it
// was obtained from, or alone when called on a Store. Errors are record's
// sentinels, wrapped with context; a failed compare-and-swap is a
// *record.ConflictError.
type Tx interface {
	// StateTx moves the changeset's session and appends events in the
	// same transaction.
	record.StateTx
	// ListEvents returns up to f.Limit events with ID > f.After, oldest
	// first (the revisions are read from them).
	ListEvents(ctx context.Context, f events.Filter) ([]events.Event, error)

	// CreateChangeset inserts a changeset; ErrNotFound when its session or
	// repository does not exist.
	CreateChangeset(ctx context.Context, c Changeset) error
	GetChangeset(ctx context.Context, id uuid.UUID) (Changeset, error)
	// ListChangesets returns changesets matching every set field of f,
	// oldest first.
	ListChangesets(ctx context.Context, f Filter) ([]Changeset, error)
	// SetChangesetStatus moves a changeset from status from to status to by
	// compare-and-swap; a non-zero accepted sets AcceptedCommit. A
	// *ConflictError carries the current status.
	SetChangesetStatus(ctx context.Context, id uuid.UUID, from, to Status, accepted gitstore.OID, at time.Time) error
	// ReviseChangeset replaces what a changeset puts under review (head,
	// base, intent, target branch, revision, read set, stats, status,
	// UpdatedAt) by compare-and-swap on its head commit: a *ConflictError
	// (Field "head") when the head is not oldHead, (Field "status") when
	// the changeset is accepted or undone, or (Field "accepting", the
	// commit) while an accept of it is in flight. Its reviews stay.
	ReviseChangeset(ctx context.Context, c Changeset, oldHead gitstore.OID) error
	// BeginAccept records an accept in flight (Changeset.Accepting) by
	// compare-and-swap: a *ConflictError (Field "revision") when the
	// changeset is at another revision, (Field "status") when it is
	// accepted or undone, or (Field "accepting", the commit) when another
	// accept of it is in flight; ErrNotFound when there is no such
	// changeset.
	BeginAccept(ctx context.Context, id uuid.UUID, a Accepting) error
	// ClearAccepting forgets the accept in flight of a changeset, if any
	// (its branch did not move, or the accept is recorded).
	ClearAccepting(ctx context.Context, id uuid.UUID) error
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
	// accepted, and clears its undo in flight; a *ConflictError when it is
	// already undone.
	UndoLayer(ctx context.Context, changeset uuid.UUID, revert gitstore.OID, at time.Time) error
	// BeginUndo records an undo in flight of the changeset's layer
	// (Layer.Reverting) by compare-and-swap: a *ConflictError (Field
	// "state") when the layer is undone, (Field "reverting", the commit)
	// when another undo of it is in flight; ErrNotFound when there is no
	// such layer.
	BeginUndo(ctx context.Context, changeset uuid.UUID, revert gitstore.OID) error
	// ClearReverting forgets the undo in flight of the changeset's layer,
	// if any.
	ClearReverting(ctx context.Context, changeset uuid.UUID) error
	// InFlight lists the branches with an accept or an undo in flight,
	// each once, by repository and branch.
	InFlight(ctx context.Context) ([]BranchName, error)

	// AddRun keeps a command a session ran and assigns Run.ID;
	// ErrNotFound when the session does not exist.
	AddRun(ctx context.Context, r Run) (Run, error)
	// ListRuns returns the commands a session ran, oldest first.
	ListRuns(ctx context.Context, session uuid.UUID) ([]Run, error)
	// CheckpointSeq returns the seq of the session's newest checkpoint
	// with commit commit; ErrNotFound when it has none.
	CheckpointSeq(ctx context.Context, session uuid.UUID, commit gitstore.OID) (int64, error)
}

// BranchName is a branch of a repository.
type BranchName struct {
	Repo   string
	Branch string
}

// Sessions is the session engine as changesets use it; session.Manager
// implements it. Its types are package record's, so that neither package
// imports the other.
type Sessions interface {
	// Hold loads a session and takes its lock; the caller releases it.
	Hold(ctx context.Context, id uuid.UUID) (record.Held, error)
	// SessionInfo reads a session without loading or locking it.
	SessionInfo(ctx context.Context, id uuid.UUID) (record.SessionInfo, error)
	// CheckWrites holds a change from tree base to tree head to the
	// session's write policy (ErrForbidden for a path it may not write).
	CheckWrites(ctx context.Context, id uuid.UUID, repo *gitstore.Repo, base, head gitstore.OID) error
	// ResolveRevision resolves a revision the caller of ctx gave as field
	// to a commit of repo, within the caller's reach (record.Reach): the
	// one resolver of callers' revisions.
	ResolveRevision(ctx context.Context, repo *gitstore.Repo, field, rev string) (gitstore.OID, error)
	// CheckResolved fails (errors.Is session.ErrUnresolvedConflicts, a
	// 409 listing them) while the session has unresolved conflicts; what
	// names the operation they stop.
	CheckResolved(ctx context.Context, id uuid.UUID, what string) error
	// Claim makes this node the session's owner before an accept moves
	// its branch (a cluster's; record.ErrUnavailable naming the live
	// node that owns it), so that the accept can record what it pushed.
	Claim(ctx context.Context, id uuid.UUID) error
}
