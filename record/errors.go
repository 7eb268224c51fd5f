package record

import (
	"errors"
	"fmt"
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
)

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
