package worktree

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrLocked: the index's lock file exists; another git process (or
	// one that crashed) holds it.
	ErrLocked = errors.New("index.lock exists: another git process seems to be running in this repository")
	// ErrUnsupported: the work tree needs something sessiond does not do
	// as git would (a sparse checkout, content conversion, an index
	// format it cannot write back).
	ErrUnsupported = errors.New("work tree not supported")
)

// Why a path makes a work tree dirty, in the words of git status
// --porcelain's columns.
const (
	Modified    = "modified"     // a tracked file differs from its index entry
	Deleted     = "deleted"      // a tracked file is missing
	TypeChanged = "type_changed" // a tracked file is now a symlink, a directory, …
	Staged      = "staged"       // the index differs from the head's tree
	Unmerged    = "unmerged"     // the index holds a conflict
	IntentToAdd = "intent_to_add"
	Untracked   = "untracked" // an untracked file the update would overwrite or lose
)

// DirtyPath is one path in the way of an update, and why.
type DirtyPath struct {
	Path   string `json:"path"`
	Status string `json:"status"`
}

// DirtyError refuses an update because the index or the work tree has
// changes of its own, or untracked files in the way; Paths names every
// one, sorted.
type DirtyError struct {
	Paths []DirtyPath
}

// maxNamed is how many paths the message names; Paths has them all.
const maxNamed = 20

func (e *DirtyError) Error() string {
	var b strings.Builder
	b.WriteString("the work tree has changes that the update would lose or mix in: ")
	for i, p := range e.Paths {
		if i == maxNamed {
			fmt.Fprintf(&b, ", and %d more", len(e.Paths)-maxNamed)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", p.Path, strings.ReplaceAll(p.Status, "_", " "))
	}
	b.WriteString("; commit, stash or remove them and try again")
	return b.String()
}
