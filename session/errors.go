package session

import (
	"errors"
	"fmt"

	"github.com/sessiond/sessiond/workdir"
)

// The session engine's own error kinds. Each maps to one API error code
// (api/errors.go). The kinds the engines and the store share (not found,
// conflict, duplicate, session closed, unavailable, invalid, forbidden)
// are package record's, under their one name there; invalid paths are
// *overlay.PathError.
var (
	// ErrReadOnly: a write to a read_only session (API forbidden).
	ErrReadOnly = errors.New("session is read-only")
	// ErrPrecondition: a stale file version, or a create of a file that
	// exists (API precondition_failed).
	ErrPrecondition = errors.New("precondition failed")
	// ErrTooLarge: over a size or count limit (API too_large).
	ErrTooLarge = errors.New("too large")
	// ErrBusy: a write while a command runs on the session (API
	// session_busy).
	ErrBusy = errors.New("session busy: a command is running")
	// ErrServicesHoldView: a command on another base or environment
	// layer while the session's services run on its view as it was
	// (overlay mode; API conflict).
	ErrServicesHoldView = workdir.ErrViewHeld
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
