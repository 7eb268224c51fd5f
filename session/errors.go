package session

import (
	"errors"
	"fmt"

	"github.com/sessiond/sessiond/record"
)

// Sentinel errors. Callers test them with errors.Is; each maps to one API
// error code. They are package record's values under the engine's names,
// so the store and package changeset return the same ones. Store
// implementations translate their driver errors into these at their
// boundary, so no driver error reaches the engine.
var (
	// ErrNotFound: no repository, session, checkpoint, changeset or layer by
	// that id or name (API not_found).
	ErrNotFound = record.ErrNotFound
	// ErrConflict: a compare-and-swap found another value than expected, or
	// the store could not serialize concurrent writers (API conflict). The
	// error is usually a *ConflictError carrying the current value.
	ErrConflict = record.ErrConflict
	// ErrDuplicate: a row with that id or name already exists.
	ErrDuplicate = record.ErrDuplicate
	// ErrSessionClosed: a write to a session in a terminal state (API
	// session_closed).
	ErrSessionClosed = record.ErrSessionClosed
	// ErrUnavailable: the store cannot be reached or is busy beyond its
	// timeout (API unavailable). Retrying later may succeed.
	ErrUnavailable = record.ErrUnavailable
)

// ConflictError is a failed compare-and-swap. It matches ErrConflict.
type ConflictError = record.ConflictError

// Engine errors, beside the store sentinels above. Each maps to one API
// error code; invalid paths are *overlay.PathError.
var (
	// ErrInvalid: a request the engine cannot act on as given (API
	// bad_request): an unknown op, a missing field, a directory where a
	// file is needed.
	ErrInvalid = record.ErrInvalid
	// ErrReadOnly: a write to a read_only session (API forbidden).
	ErrReadOnly = errors.New("session is read-only")
	// ErrForbidden: the session's path policy does not allow the access
	// (API forbidden).
	ErrForbidden = record.ErrForbidden
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
