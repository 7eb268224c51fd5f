package changeset

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/record"
)

// Errors are package record's kinds (ErrNotFound, ErrConflict with
// *record.ConflictError, ErrInvalid, ErrForbidden), so the API maps them as
// it maps the session engine's; bad merges are *merge.ConflictError. The
// errors of changesets' own are below.

// statusError is a changeset whose status refuses what was asked. Its
// message says it once ("changeset … is already accepted"); it matches
// record.ErrConflict and is a *record.ConflictError (Field "status") for
// errors.As, so the API answers 409 with the current status.
type statusError struct {
	msg      string
	conflict *record.ConflictError
}

func (e *statusError) Error() string { return e.msg }
func (e *statusError) Unwrap() error { return e.conflict }

// StaleReadsError is an accept refused because files the session read
// changed on the branch since its base.
type StaleReadsError struct {
	Branch string
	Reads  []StaleRead
}

func (e *StaleReadsError) Error() string {
	paths := make([]string, len(e.Reads))
	for i, r := range e.Reads {
		paths[i] = fmt.Sprintf("%q", r.Path)
	}
	return fmt.Sprintf("stale reads: %s changed on %s since the session read them", strings.Join(paths, ", "), e.Branch)
}

// Is makes errors.Is(err, record.ErrConflict) true.
func (e *StaleReadsError) Is(target error) bool { return target == record.ErrConflict }

// StaleRead is a file the session read at its base that is different on
// the branch now: Current is its blob there, zero when it is gone.
type StaleRead struct {
	Path    string       `json:"path"`
	Read    gitstore.OID `json:"read"`
	Current gitstore.OID `json:"current"`
}

// ChecksRequiredError is an accept refused because a check its
// repository's policy requires is missing, failed or stale on the
// revision. It matches ErrChecksRequired.
type ChecksRequiredError struct {
	Changeset uuid.UUID
	Revision  int
	// Checks are the required checks that do not pass, in policy order.
	Checks []Check
}

// ErrChecksRequired is the kind of a *ChecksRequiredError.
var ErrChecksRequired = errors.New("required checks do not pass")

func (e *ChecksRequiredError) Error() string {
	parts := make([]string, len(e.Checks))
	for i, c := range e.Checks {
		parts[i] = fmt.Sprintf("%q is %s", strings.Join(c.Argv, " "), c.State)
	}
	return fmt.Sprintf("changeset %s revision %d: required checks do not pass: %s", e.Changeset, e.Revision, strings.Join(parts, ", "))
}

// Is makes errors.Is(err, ErrChecksRequired) true.
func (e *ChecksRequiredError) Is(target error) bool { return target == ErrChecksRequired }
