package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiond/sessiond/apitypes"
)

// The rebase tool, and the conflicts status lists (SPEC §14).

// RebaseIn is rebase's input.
type RebaseIn struct {
	SessionArg
	Onto      string `json:"onto,omitempty" jsonschema:"The branch, tag or commit to move the session onto (defaults to the branch it started from, as it is now)."`
	Conflicts string `json:"conflicts,omitempty" jsonschema:"What a conflict does: refuse (the default: nothing changes and the conflicts are listed), keep (apply every clean change and leave git's conflict markers, with the base's section, in each conflicted file, to resolve by editing), or reuse (keep, applying resolutions remembered from earlier sessions)."`
}

func (s *server) rebaseTool(ms *mcp.Server) {
	addTool[apitypes.MutationResult](s, ms, toolSpec{name: toolRebase, title: "Rebase", kind: destructive, description: "Move the session onto the current state of its branch (or onto a given revision), re-applying its changes by three-way merge. " +
		"With conflicts keep, conflicted files get git's markers (<<<<<<< HEAD: the branch, ||||||| the base, =======, >>>>>>> the session); edit them until no marker is left, then status shows what remains. Submit waits until every conflict is resolved."}, (*server).rebase)
}

func (s *server) rebase(ctx context.Context, _ *mcp.CallToolRequest, sid string, in RebaseIn) (result, error) {
	r, err := s.b.RebaseWith(ctx, sid, in.Onto, in.Conflicts)
	if err != nil {
		return result{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Rebased onto %s.\n", short(r.Session.BaseCommit))
	if len(r.Reused) > 0 {
		fmt.Fprintf(&b, "Resolved by remembered resolutions: %s.\n", strings.Join(r.Reused, ", "))
	}
	writeConflicts(&b, r.Conflicts, s.budget())
	return result{text: b.String(), data: r}, nil
}

// writeConflicts renders unresolved conflicts with each hunk's three
// sides, within the budget.
func writeConflicts(b *strings.Builder, cs []apitypes.Conflict, bud *budget) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintf(b, "Unresolved conflicts (%d): remove the markers (or delete the file) to resolve; submit waits until none is left. In a rebase ours is the branch and theirs the session; in a merge ours is this session.\n", len(cs))
	for i, c := range cs {
		var one strings.Builder
		fmt.Fprintf(&one, "  %s (%s): %s\n", c.Path, c.Kind, c.Message)
		for _, h := range c.Hunks {
			side := func(name string, start int, lines []string) {
				fmt.Fprintf(&one, "    %s from line %d:\n", name, start)
				for _, l := range lines {
					fmt.Fprintf(&one, "      |%s", strings.TrimSuffix(l, "\n")+"\n")
				}
			}
			side("ours", h.OursStart, h.OursLines)
			side("base", h.BaseStart, h.BaseLines)
			side("theirs", h.TheirsStart, h.TheirsLines)
		}
		if c.OfferedResolution != nil {
			one.WriteString("    a resolution remembered from an earlier session applies: rebase with conflicts reuse, or write it yourself\n")
		}
		if !bud.take(one.Len()) {
			fmt.Fprintf(b, "  [cut: %d more conflict(s)]\n", len(cs)-i)
			return
		}
		b.WriteString(one.String())
	}
}
