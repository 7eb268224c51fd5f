package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sessiond/sessiond/apitypes"
)

// Conflicts a rebase or merge keeps (SPEC §14): --keep-conflicts on
// rebase and merge, sessiond conflicts and sessiond resolve.

// conflictFlags are rebase's and merge's say on conflicts.
type conflictFlags struct {
	KeepConflicts bool `name:"keep-conflicts" help:"On conflict, apply every clean change anyway and leave git's diff3 markers in each conflicted file (sessiond conflicts lists them), instead of refusing."`
	Reuse         bool `name:"reuse-resolutions" help:"As --keep-conflicts, applying resolutions the repository remembers for the same conflicts (git rerere's)."`
}

func (f conflictFlags) mode() string {
	switch {
	case f.Reuse:
		return apitypes.ConflictsReuse
	case f.KeepConflicts:
		return apitypes.ConflictsKeep
	}
	return ""
}

// printKept reports what a rebase or merge left to resolve.
func printKept(w io.Writer, res apitypes.MutationResult) {
	if len(res.Reused) > 0 {
		fmt.Fprintf(w, "resolved by remembered resolutions: %s\n", strings.Join(res.Reused, ", "))
	}
	if len(res.Conflicts) > 0 {
		fmt.Fprintf(w, "%s left with markers to resolve:\n", count(len(res.Conflicts), "conflict"))
		printConflictList(w, res.Conflicts)
		fmt.Fprintf(w, "edit the files until no marker is left (or: sessiond resolve PATH…); submit waits until then\n")
	}
}

func printConflictList(w io.Writer, cs []apitypes.Conflict) {
	for _, c := range cs {
		extra := ""
		if len(c.Hunks) > 0 {
			extra = ", " + count(len(c.Hunks), "hunk")
		}
		if c.OfferedResolution != nil {
			extra += ", a remembered resolution applies (rebase --reuse-resolutions)"
		}
		fmt.Fprintf(w, "  %s\t%s%s\n", c.Path, c.Kind, extra)
	}
}

type conflictsCmd struct {
	ID string `arg:"" optional:"" help:"Session (default: --session)."`
}

func (c *conflictsCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr(c.ID)
	if err != nil {
		return err
	}
	res, err := x.c.Conflicts(ctx, id)
	if err != nil {
		return err
	}
	return x.out(res, func(w io.Writer) {
		if len(res.Conflicts) == 0 {
			fmt.Fprintln(w, "no unresolved conflicts")
			return
		}
		printConflictList(w, res.Conflicts)
	})
}

type resolveCmd struct {
	Paths []string `arg:"" name:"path" help:"Conflicted paths to mark resolved as their files are now."`
}

func (c *resolveCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	res, err := x.c.Resolve(ctx, id, c.Paths)
	if err != nil {
		return err
	}
	return x.out(res, func(w io.Writer) {
		fmt.Fprintf(w, "%s left\n", count(len(res.Conflicts), "unresolved conflict"))
		printConflictList(w, res.Conflicts)
	})
}
