package session

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers test them with errors.Is; each maps to one API
// error code. Store implementations translate their driver errors into these
// at their boundary, so no driver error reaches the engine.
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

// Engine errors, beside the store sentinels above. Each maps to one API
// error code; invalid paths are *overlay.PathError.
var (
	// ErrInvalid: a request the engine cannot act on as given (API
	// bad_request): an unknown op, a missing field, a directory where a
	// file is needed.
	ErrInvalid = errors.New("invalid request")
	// ErrReadOnly: a write to a read_only session (API forbidden).
	ErrReadOnly = errors.New("session is read-only")
	// ErrForbidden: the session's path policy does not allow the access
	// (API forbidden).
	ErrForbidden = errors.New("forbidden by session policy")
	// ErrPrecondition: a stale file version, or a create of a file that
	// exists (API precondition_failed).
	ErrPrecondition = errors.New("precondition failed")
	// ErrTooLarge: over a size or count limit (API too_large).
	ErrTooLarge = errors.New("too large")
	// ErrBusy: a write while a command runs on the session (API
	// session_busy).
	ErrBusy = errors.New("session busy: a command is running")
	// ErrNoWorkdir: running commands is not configured (API unavailable).
	ErrNoWorkdir = errors.New("running commands is not available")
)

// PreconditionError reports a write whose required version did not match.
// Current is the file's blob id, or empty when it does not exist.
type PreconditionError struct {
	Path    string
	Current string
}

func (e *PreconditionError) Error() string {
	if e.Current == "" {
		return fmt.Sprintf("precondition failed: %q does not exist", e.Path)
	}
	return fmt.Sprintf("precondition failed: %q is at version %s", e.Path, e.Current)
}

// Is makes errors.Is(err, ErrPrecondition) true.
func (e *PreconditionError) Is(target error) bool { return target == ErrPrecondition }
