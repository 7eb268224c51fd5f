package changeset

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Callers test them with errors.Is.
var (
	// ErrConflict: a merge, rebase, cherry-pick or revert that does not
	// apply cleanly. The error is a *ConflictError with the details.
	ErrConflict = errors.New("merge conflict")
	// ErrMergeCommit: cherry-pick or revert of a commit with more than one
	// parent, which needs a mainline.
	ErrMergeCommit = errors.New("commit is a merge")
)

// ConflictError lists the conflicts of an operation that was not applied.
type ConflictError struct {
	Conflicts []Conflict
}

func (e *ConflictError) Error() string {
	paths := make([]string, 0, len(e.Conflicts))
	for _, c := range e.Conflicts {
		paths = append(paths, fmt.Sprintf("%s (%s)", c.Path, c.Kind))
	}
	return fmt.Sprintf("%d conflicts: %s", len(e.Conflicts), strings.Join(paths, ", "))
}

// Unwrap makes errors.Is(err, ErrConflict) hold.
func (e *ConflictError) Unwrap() error { return ErrConflict }
