package record

import (
	"errors"
	"fmt"

	"github.com/sessiond/sessiond/gitstore"
)

// Sentinel errors. Callers test them with errors.Is; each maps to one API
// error code. Store implementations translate their driver errors into these
// at their boundary, so no driver error reaches the engines.
var (
	// ErrNotFound: no repository, session, checkpoint, changeset or layer by
	// that id or name (API not_found).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a compare-and-swap found another value than expected, or
	// the store could not serialize concurrent writers (API conflict). The
	// error is usually a *ConflictError carrying the current value.
	ErrConflict = errors.New("conflict")
	// ErrDuplicate: a row with that id or name already exists.
	ErrDuplicate = errors.New("already exists")
	// ErrSessionClosed: a write to a session in a terminal state (API
	// session_closed).
	ErrSessionClosed = errors.New("session closed")
	// ErrUnavailable: the store cannot be reached or is busy beyond its
	// timeout (API unavailable). Retrying later may succeed.
	ErrUnavailable = errors.New("store unavailable")
	// ErrInvalid: a request an engine cannot act on as given (API
	// bad_request): an unknown op, a missing field, a directory where a
	// file is needed.
	ErrInvalid = errors.New("invalid request")
	// ErrForbidden: the session's path policy, or the repository's accept
	// policy, does not allow the access (API forbidden).
	ErrForbidden = errors.New("forbidden by session policy")
	// ErrNoSpace: a write failed because the device or the quota holding
	// what it writes is full (API insufficient_storage, 507). Nothing of
	// the write was acknowledged; it succeeds again once space is freed.
	// It comes as a *NoSpaceError naming what filled.
	ErrNoSpace = errors.New("insufficient storage")
)

// What a write can find full, in NoSpaceError.What.
const (
	// SpaceStore is the database of sessions, changesets and events.
	SpaceStore = "store"
	// SpaceObjects is a repository's object directory.
	SpaceObjects = gitstore.SpaceObjects
	// SpaceRefs is a repository's refs.
	SpaceRefs = gitstore.SpaceRefs
)

// NoSpaceError is a write refused for lack of space (ENOSPC, EDQUOT,
// SQLITE_FULL, Postgres disk_full), naming what filled. It matches
// ErrNoSpace.
type NoSpaceError struct {
	// What filled: SpaceStore, SpaceObjects or SpaceRefs.
	What string
	// Repo is the repository whose objects or refs filled; "" for the
	// store.
	Repo string
	// Err is the write's own error, for the logs (no driver error: the
	// store keeps only its words).
	Err error
}

func (e *NoSpaceError) Error() string {
	var what string
	switch e.What {
	case SpaceStore:
		what = "the store"
	case SpaceRefs:
		what = fmt.Sprintf("the refs of repository %q", e.Repo)
	default:
		what = fmt.Sprintf("the object directory of repository %q", e.Repo)
	}
	if e.Err == nil {
		return "no space left for " + what
	}
	return "no space left for " + what + ": " + e.Err.Error()
}

// Is makes errors.Is(err, ErrNoSpace) true for a *NoSpaceError.
func (e *NoSpaceError) Is(target error) bool { return target == ErrNoSpace }

func (e *NoSpaceError) Unwrap() error { return e.Err }

// ConflictError is a failed compare-and-swap. It matches ErrConflict.
type ConflictError struct {
	// Field names what was compared: "state", "head", "seq", "status".
	Field string
	// Current is the value found, in its text form (a state name, an object
	// id, a decimal sequence number); empty when the row is gone.
	Current string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("conflict: %s is %q", e.Field, e.Current)
}

// Is makes errors.Is(err, ErrConflict) true for a *ConflictError.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// UnknownRepoFilter is the error of a listing filtered by a repository
// that is not registered. The filter is what is wrong, not the route, so it
// is ErrInvalid (API bad_request), as an unknown state or status is, and
// never an empty list.
func UnknownRepoFilter(repo string) error {
	return fmt.Errorf("%w: filter repo=%q: no such repository", ErrInvalid, repo)
}
