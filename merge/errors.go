package merge

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
	// ErrBadSelection: a selection of files and hunks that names something
	// the patch does not have, or nothing. The error is a *SelectionError.
	ErrBadSelection = errors.New("bad selection")
)

// SelectionError says what is wrong with a Selection: Path is the file
// (empty for the selection as a whole), Hunk the hunk index or -1.
type SelectionError struct {
	Path   string
	Hunk   int
	Reason string
}

func (e *SelectionError) Error() string {
	if e.Path == "" {
		return "select: " + e.Reason
	}
	return fmt.Sprintf("select %q: %s", e.Path, e.Reason)
}

// Unwrap makes errors.Is(err, ErrBadSelection) hold.
func (e *SelectionError) Unwrap() error { return ErrBadSelection }

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
