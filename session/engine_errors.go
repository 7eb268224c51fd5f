package session

import (
	"errors"
	"fmt"
)

// Engine errors, beside the store sentinels in errors.go. Each maps to one
// API error code; invalid paths are *overlay.PathError.
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
