package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
)

// DiffIn is diff's input.
type DiffIn struct {
	SessionArg
	Against string   `json:"against,omitempty" jsonschema:"What to compare the session's current files with: base (the default, the commit the session started from), a checkpoint (its number, id or commit) or any git revision (main~1, v1)."`
	Paths   []string `json:"paths,omitempty" sessiond:"path" jsonschema:"Only show these files, or the files under these directories."`
}

// DiffOut is what diff found.
type DiffOut struct {
	Against   string   `json:"against"`
	Files     []string `json:"files"`
	Shown     []string `json:"shown"`
	Added     int      `json:"insertions"`
	Deleted   int      `json:"deletions"`
	Diff      string   `json:"diff"`
	Truncated bool     `json:"truncated"`
}

// StatusIn is status's input.
type StatusIn struct {
	SessionArg
}

// StatusOut is the session's state for its agent.
type StatusOut struct {
	Session     apitypes.Session      `json:"session"`
	Changes     []Entry               `json:"changes"`
	Checkpoints []apitypes.Checkpoint `json:"checkpoints"`
	Overlaps    []Overlap             `json:"overlaps"`
	// Conflicts are the unresolved conflicts a rebase or merge kept.
	Conflicts []apitypes.Conflict `json:"conflicts"`
	Truncated bool                `json:"truncated,omitempty"`
}

// Overlap is the graph's finding that another live session changed a
// file this one changed too.
type Overlap struct {
	// Other is the other session's id; empty when the token may not see
	// it (a session token: "another session").
	Other      string    `json:"other,omitempty"`
	OtherAgent string    `json:"other_agent,omitempty"`
	Path       string    `json:"path"`
	Symbols    []string  `json:"symbols,omitempty"`
	Merge      string    `json:"merge"`
	At         time.Time `json:"at"`
}

// CheckpointIn is checkpoint's input.
type CheckpointIn struct {
	SessionArg
	Label string `json:"label,omitempty" jsonschema:"A short name for the checkpoint, e.g. before-refactor."`
}

// RollbackIn is rollback's input.
type RollbackIn struct {
	SessionArg
	Checkpoint string `json:"checkpoint" jsonschema:"The checkpoint to return to: its number (as checkpoint and status show it), id or commit."`
}

// LogIn is log's input.
type LogIn struct {
	SessionArg
	Limit int `json:"limit,omitempty" jsonschema:"How many of the latest changes to show (default 20, at most 500)."`
}

// SubmitIn is submit's input.
type SubmitIn struct {
	SessionArg
	Intent       string `json:"intent,omitempty" jsonschema:"What the change does and why, for the reviewer (defaults to the session's intent)."`
	TargetBranch string `json:"target_branch,omitempty" jsonschema:"The branch the change should land on (defaults to the branch the session started from)."`
}

func (s *server) sessionTools(ms *mcp.Server) {
	addTool[DiffOut](s, ms, toolSpec{name: toolDiff, title: "Show changes", kind: readOnly, description: "Show the session's changes as a unified diff (git apply accepts it) against its base commit or a checkpoint, optionally for some paths only."}, (*server).diff)
	addTool[StatusOut](s, ms, toolSpec{name: toolStatus, title: "Session status", kind: readOnly, description: "The session's base commit and branch, intent and state, the paths it changed, its checkpoints, and overlap warnings: other live sessions that changed the same files or functions, and whether a trial merge with theirs is clean."}, (*server).status)
	addTool[apitypes.Checkpoint](s, ms, toolSpec{name: toolCheckpoint, title: "Checkpoint", kind: additive, description: "Save the session's current files as a checkpoint (a git commit) that rollback can return to. Cheap; take one before a risky change."}, (*server).checkpoint)
	addTool[apitypes.RollbackResult](s, ms, toolSpec{name: toolRollback, title: "Roll back", kind: destructive, idempotent: true, description: "Return the session's files to a checkpoint, dropping the changes made after it (they stay in the log, and a later checkpoint can still be restored)."}, (*server).rollback)
	addTool[LogOut](s, ms, toolSpec{name: toolLog, title: "Change log", kind: readOnly, description: "The session's latest changes, newest first: each write, edit, delete, move, command run and rollback, with its paths."}, (*server).log)
	s.runTool(ms)
	s.serviceTools(ms)
	addTool[apitypes.Changeset](s, ms, toolSpec{name: toolSubmit, title: "Submit for review", kind: additive, description: "Open the session's changes as a changeset for review, to land on a branch when accepted. Submitting again updates the changeset with a new revision."}, (*server).submit)
	s.rebaseTool(ms)
}

func (s *server) diff(ctx context.Context, _ *mcp.CallToolRequest, sid string, in DiffIn) (result, error) {
	against := in.Against
	if against == "" {
		against = "base"
	}
	text, err := s.b.Diff(ctx, sid, against)
	if err != nil {
		return result{}, err
	}
	files, err := splitDiff(ctx, string(text))
	if err != nil {
		return result{}, err
	}
	out := DiffOut{Against: against, Files: []string{}, Shown: []string{}}
	var b strings.Builder
	bud := s.budget()
	var left []string
	for _, f := range files {
		out.Files = append(out.Files, f.path)
		if !underAny(f.path, in.Paths) {
			continue
		}
		if len(left) > 0 || !bud.take(len(f.text)) {
			left = append(left, f.path)
			continue
		}
		added, deleted, err := changeCounts(ctx, f.text)
		if err != nil {
			return result{}, err
		}
		b.WriteString(f.text)
		out.Shown = append(out.Shown, f.path)
		out.Added += added
		out.Deleted += deleted
	}
	out.Diff = b.String()
	var head string
	switch {
	case len(files) == 0:
		head = fmt.Sprintf("No changes against %s.\n", against)
	case len(out.Shown) == 0 && len(left) == 0:
		head = fmt.Sprintf("None of the %d changed file(s) is under %s.\n", len(files), strings.Join(in.Paths, ", "))
	default:
		head = fmt.Sprintf("%d file(s) changed against %s; shown: %d (+%d −%d).\n", len(files), against, len(out.Shown), out.Added, out.Deleted)
	}
	if len(left) > 0 {
		out.Truncated = true
		out.Diff += fmt.Sprintf("[cut: %d more file(s) not shown (%s); call diff with paths to see them]\n", len(left), strings.Join(left, ", "))
	}
	return result{text: head + out.Diff, data: out}, nil
}

func underAny(p string, roots []string) bool {
	if len(roots) == 0 {
		return true
	}
	for _, r := range roots {
		r = strings.Trim(r, "/")
		if r == "" || p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

func (s *server) status(ctx context.Context, _ *mcp.CallToolRequest, sid string, _ StatusIn) (result, error) {
	ss, err := s.b.GetSession(ctx, sid)
	if err != nil {
		return result{}, err
	}
	changes, err := s.b.Tree(ctx, sid, client.TreeOptions{Recursive: true, OnlyModified: true})
	if err != nil {
		return result{}, err
	}
	cps, err := s.b.Checkpoints(ctx, sid)
	if err != nil {
		return result{}, err
	}
	overlaps, err := s.overlaps(ctx, sid)
	if err != nil {
		return result{}, err
	}
	conflicts, err := s.b.Conflicts(ctx, sid)
	if err != nil {
		return result{}, err
	}
	ss.Token = ""
	out := StatusOut{Session: ss, Changes: []Entry{}, Checkpoints: cps, Overlaps: overlaps, Conflicts: conflicts.Conflicts}
	var b strings.Builder
	fmt.Fprintf(&b, "Session %s on repository %s, %s (%s).\n", ss.ID, ss.Repo, ss.State, ss.Mode)
	base := short(ss.BaseCommit)
	if ss.BaseRef != "" {
		base = ss.BaseRef + " at " + base
	}
	fmt.Fprintf(&b, "Base: %s.\n", base)
	if ss.Intent != "" {
		fmt.Fprintf(&b, "Intent: %s\n", ss.Intent)
	}
	bud := s.budget()
	fmt.Fprintf(&b, "Changed paths (%d):\n", len(changes))
	for _, e := range changes {
		if e.Type == "dir" {
			continue
		}
		line := fmt.Sprintf("  %s %s\n", e.Status, e.Path)
		if !bud.take(len(line)) {
			out.Truncated = true
			fmt.Fprintf(&b, "  [cut: %d more; diff or list_dir show them]\n", len(changes)-len(out.Changes))
			break
		}
		b.WriteString(line)
		out.Changes = append(out.Changes, Entry{Path: e.Path, Type: e.Type, Size: e.Size, Status: e.Status})
	}
	if len(changes) == 0 {
		b.WriteString("  none\n")
	}
	fmt.Fprintf(&b, "Checkpoints (%d):\n", len(cps))
	for _, c := range cps {
		label := ""
		if c.Label != "" {
			label = " " + c.Label
		}
		fmt.Fprintf(&b, "  %d%s: commit %s at change %d, %s\n", c.N, label, short(c.Commit), c.Seq, c.CreatedAt.UTC().Format(time.RFC3339))
	}
	if len(cps) == 0 {
		b.WriteString("  none\n")
	}
	if len(overlaps) == 0 {
		b.WriteString("Overlaps: no other live session changed the same files.\n")
	} else {
		fmt.Fprintf(&b, "Overlaps (%d): other sessions changed the same files; coordinate or expect a merge.\n", len(overlaps))
		for _, o := range overlaps {
			who := otherSession(o)
			what := ""
			if len(o.Symbols) > 0 {
				what = ", both changed " + strings.Join(o.Symbols, ", ")
			}
			merge := map[string]string{"clean": "a trial merge is clean", "conflict": "a trial merge CONFLICTS",
				"unknown": "no trial merge (different bases)"}[o.Merge]
			if merge == "" {
				merge = "trial merge: " + o.Merge
			}
			fmt.Fprintf(&b, "  %s: %s%s; %s\n", o.Path, who, what, merge)
		}
	}
	writeConflicts(&b, out.Conflicts, bud)
	return result{text: b.String(), data: out}, nil
}

// otherSession is who an overlap is with, as the model reads it: the
// agent and the session id where the token may see it, "another session"
// where it may not (a session token's events name no other session).
func otherSession(o Overlap) string {
	session := "another session"
	if o.Other != "" {
		session = "session " + o.Other
	}
	if o.OtherAgent == "" {
		return session
	}
	return o.OtherAgent + " (" + session + ")"
}

// overlaps reads the session's overlap.detected events and keeps the
// latest finding per other session (or, where the token may not see
// which, per other agent) and path.
func (s *server) overlaps(ctx context.Context, sid string) ([]Overlap, error) {
	type key struct{ other, path string }
	latest := map[key]int{}
	var out []Overlap
	var after int64
	for {
		evs, err := s.b.EventList(ctx, sid, after, 1000, "overlap.detected")
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			after = e.ID
			if e.Type != "overlap.detected" {
				continue
			}
			var p struct {
				Other      string `json:"other"`
				OtherAgent string `json:"other_agent"`
				Path       string `json:"path"`
				Symbols    []struct {
					Kind, Name, Receiver string
				} `json:"symbols"`
				Merge string `json:"merge"`
			}
			raw, _ := json.Marshal(e.Payload)
			if json.Unmarshal(raw, &p) != nil {
				continue
			}
			o := Overlap{Other: p.Other, OtherAgent: p.OtherAgent, Path: p.Path, Merge: p.Merge, At: e.At}
			for _, sym := range p.Symbols {
				name := sym.Name
				if sym.Receiver != "" {
					name = sym.Receiver + "." + name
				}
				o.Symbols = append(o.Symbols, name)
			}
			k := key{p.Other, p.Path}
			if p.Other == "" {
				k.other = "agent:" + p.OtherAgent
			}
			if i, ok := latest[k]; ok {
				out[i] = o
			} else {
				latest[k] = len(out)
				out = append(out, o)
			}
		}
		if len(evs) < 1000 {
			break
		}
	}
	if out == nil {
		out = []Overlap{}
	}
	return out, nil
}

func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}

func (s *server) checkpoint(ctx context.Context, _ *mcp.CallToolRequest, sid string, in CheckpointIn) (result, error) {
	c, err := s.b.Checkpoint(ctx, sid, in.Label, "")
	if err != nil {
		return result{}, err
	}
	text := fmt.Sprintf("Checkpoint %d saved: commit %s at change %d. Return to it with rollback {checkpoint: \"%d\"}.\n", c.N, short(c.Commit), c.Seq, c.N)
	return result{text: text, data: c}, nil
}

func (s *server) rollback(ctx context.Context, _ *mcp.CallToolRequest, sid string, in RollbackIn) (result, error) {
	if in.Checkpoint == "" {
		return result{}, badRequest("checkpoint is required (its number, as status lists them)")
	}
	r, err := s.b.Rollback(ctx, sid, in.Checkpoint)
	if err != nil {
		return result{}, err
	}
	text := fmt.Sprintf("Rolled back to checkpoint %s: %d path(s) changed (change %d). The files are as they were at that checkpoint.\n",
		in.Checkpoint, len(r.Mutation.Paths), r.Mutation.Seq)
	return result{text: text, data: r}, nil
}

// LogOut is what log shows: the latest mutations, newest first, and how
// many there are in all.
type LogOut struct {
	Mutations []apitypes.Mutation `json:"mutations"`
	Total     int64               `json:"total"`
}

func (s *server) log(ctx context.Context, _ *mcp.CallToolRequest, sid string, in LogIn) (result, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, 500)
	ss, err := s.b.GetSession(ctx, sid)
	if err != nil {
		return result{}, err
	}
	ms, err := s.b.Mutations(ctx, sid, max(ss.Seq-int64(limit), 0), limit)
	if err != nil {
		return result{}, err
	}
	out := LogOut{Mutations: []apitypes.Mutation{}, Total: ss.Seq}
	var b strings.Builder
	fmt.Fprintf(&b, "%d change(s) in all; the latest %d, newest first:\n", ss.Seq, min(int64(len(ms)), ss.Seq))
	bud := s.budget()
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		paths := strings.Join(m.Paths, ", ")
		if len(m.Paths) > 10 {
			paths = strings.Join(m.Paths[:10], ", ") + fmt.Sprintf(" and %d more", len(m.Paths)-10)
		}
		line := fmt.Sprintf("  %d %s %s  %s by %s\n", m.Seq, m.At.UTC().Format(time.RFC3339), m.Op, paths, m.Actor)
		if !bud.take(len(line)) {
			b.WriteString("  [cut; ask for a smaller limit]\n")
			break
		}
		b.WriteString(line)
		out.Mutations = append(out.Mutations, m)
	}
	return result{text: b.String(), data: out}, nil
}

func (s *server) submit(ctx context.Context, _ *mcp.CallToolRequest, sid string, in SubmitIn) (result, error) {
	c, err := s.b.Submit(ctx, sid, apitypes.SubmitRequest{Intent: in.Intent, TargetBranch: in.TargetBranch})
	if err != nil {
		return result{}, err
	}
	text := fmt.Sprintf("Submitted: changeset %s (revision %d) onto %s, %s.", c.ID, c.Revision, c.TargetBranch, c.Status)
	if c.Stats != nil {
		text += fmt.Sprintf(" %d file(s), +%d −%d.", c.Stats.Files, c.Stats.Insertions, c.Stats.Deletions)
	}
	text += " A reviewer accepts it onto the branch; keep working and submit again to update it.\n"
	return result{text: text, data: c}, nil
}
