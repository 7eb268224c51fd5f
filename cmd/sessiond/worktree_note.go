package main

import (
	"fmt"
	"io"
)

// workTreeNote says, after an accept or undo, what became of the work
// tree that has the branch checked out.
func workTreeNote(w io.Writer, branch string, updated bool, problem string) {
	switch {
	case problem != "":
		fmt.Fprintf(w, "  the work tree that has %s checked out was not fully updated: %s\n", branch, problem)
	case updated:
		fmt.Fprintf(w, "  the work tree that has %s checked out was updated with it\n", branch)
	}
}
