package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/record"
)

// Edit is one step of a batch. Ops: write (Path, Content, Mode), append
// (Path, Content, Mode), delete (Path, Recursive), move and copy (Path →
// To, Overwrite), replace (Path or Glob, Old → New, at most Count times
// per file; 0 is all); IfMatch on any. A field the op does not take is
// refused (editFields), not ignored.
type Edit struct {
	// Op is one of OpWrite, OpAppend, OpDelete, OpMove, OpCopy, OpReplace.
	Op        Op            `json:"op"`
	Path      string        `json:"path,omitempty"`
	To        string        `json:"to,omitempty"`
	Content   string        `json:"content,omitempty"`
	Mode      gitstore.Mode `json:"mode,omitempty"`
	Recursive bool          `json:"recursive,omitempty"`
	Glob      string        `json:"glob,omitempty"`
	Old       string        `json:"old,omitempty"`
	New       string        `json:"new,omitempty"`
	Count     int           `json:"count,omitempty"`
	// Overwrite lets a move or copy replace a file at To (never a
	// directory); without it an existing To is a conflict.
	Overwrite bool `json:"overwrite,omitempty"`
	// IfMatch requires the file at Path to be this version: the file
	// written, appended to, deleted or replaced in, or the source of a
	// move or copy. A directory (a recursive delete or move) and a glob
	// replace have no one version, so a batch that sets it there is
	// refused (record.ErrInvalid), never run without it.
	IfMatch *gitstore.OID `json:"if_match,omitempty"`
}

// EditResult is what one edit did.
type EditResult struct {
	Index        int      `json:"index"`
	Op           string   `json:"op"`
	Paths        []string `json:"paths"`
	Replacements int      `json:"replacements,omitempty"`
	// Skipped lists what a replace by glob matched and would have changed
	// but left alone: binary files and symlinks (rewrite them by naming
	// them in "path"), and base files whose names the write rules refuse.
	Skipped []Skipped `json:"skipped,omitempty"`
}

// Skipped is a file a replace by glob matched and did not touch, and why:
// "binary", "symlink" or "invalid_path" (with the rule the name breaks).
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	Rule   string `json:"rule,omitempty"`
}

// BatchResult is what a batch did (or, in a dry run, would do).
type BatchResult struct {
	DryRun   bool            `json:"dry_run"`
	Seq      int64           `json:"seq"`
	Results  []EditResult    `json:"results"`
	Changes  []FileChange    `json:"changes"`
	Mutation *MutationRecord `json:"-"`

	// patch builds the batch's diff on demand, so a write that does not
	// ask for it does not pay for it.
	patch func(context.Context) (*merge.Patch, error)
}

// Patch is the diff of what the batch changed (or, in a dry run, would
// change), file by file in path order, as the session's diff shows them:
// hunks with function context, files the session may not read left out.
// It reads the batch's new contents from memory, so a dry run's diff
// needs nothing written.
func (r BatchResult) Patch(ctx context.Context) (*merge.Patch, error) {
	if r.patch == nil {
		return &merge.Patch{}, nil
	}
	return r.patch(ctx)
}

// FileChange is one file a batch changed: its blob before and after (zero
// for none).
type FileChange struct {
	Path string       `json:"path"`
	Old  gitstore.OID `json:"old"`
	New  gitstore.OID `json:"new"`
}

// Edits applies a batch atomically: every edit or none. With dryRun it
// returns the same result and changes nothing. The batch's paths are all
// validated before anything is applied.
func (m *Manager) Edits(ctx context.Context, id uuid.UUID, edits []Edit, dryRun bool, actor string) (BatchResult, error) {
	if len(edits) == 0 {
		return BatchResult{}, fmt.Errorf("%w: no edits", record.ErrInvalid)
	}
	var paths, reads []string
	for i, e := range edits {
		if err := checkEditFields(e); err != nil {
			return BatchResult{}, fmt.Errorf("%w: edit %d: %w", record.ErrInvalid, i, err)
		}
		switch e.Op {
		case OpWrite, OpAppend:
			paths = append(paths, e.Path)
			if int64(len(e.Content)) > m.limits.MaxFileBytes {
				return BatchResult{}, fmt.Errorf("%w: edit %d: %q is %d bytes, the limit is %d", ErrTooLarge, i, e.Path, len(e.Content), m.limits.MaxFileBytes)
			}
		case OpDelete:
			paths = append(paths, e.Path)
		case OpMove, OpCopy:
			if e.To == "" {
				return BatchResult{}, fmt.Errorf("%w: edit %d: %s needs \"to\"", record.ErrInvalid, i, e.Op)
			}
			// A copy reads its source; a move writes it too.
			paths = append(paths, e.To)
			if e.Op == OpMove {
				paths = append(paths, e.Path)
			} else {
				reads = append(reads, e.Path)
			}
		case OpReplace:
			if e.Old == "" {
				return BatchResult{}, fmt.Errorf("%w: edit %d: replace needs \"old\"", record.ErrInvalid, i)
			}
			if e.Count < 0 {
				return BatchResult{}, fmt.Errorf("%w: edit %d: count %d: want 0 (all) or more", record.ErrInvalid, i, e.Count)
			}
			if (e.Path == "") == (e.Glob == "") {
				return BatchResult{}, fmt.Errorf("%w: edit %d: replace needs exactly one of \"path\" and \"glob\"", record.ErrInvalid, i)
			}
			if e.Glob != "" {
				if e.IfMatch != nil {
					return BatchResult{}, fmt.Errorf("%w: edit %d: if_match names one file's version and cannot apply to a glob replace", record.ErrInvalid, i)
				}
				if _, err := CompileGlob(e.Glob); err != nil {
					return BatchResult{}, fmt.Errorf("edit %d: %w", i, err)
				}
			} else {
				paths = append(paths, e.Path)
			}
		}
	}
	ls, err := m.openEdit(ctx, id, reads, paths)
	if err != nil {
		return BatchResult{}, err
	}
	defer ls.unlock()
	res := BatchResult{DryRun: dryRun, Results: make([]EditResult, len(edits))}
	var d *draft // for the batch's patch, which reads the contents it queued
	before, pol, repo := ls.tree, ls.policy, ls.repo
	rec, changes, err := m.recorder.mutate(ctx, ls, OpEdits, actorOf(ls, actor), dryRun, func(mu *draft) error {
		d = mu
		for i, e := range edits {
			if i%checkEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			r, err := ls.applyEdit(ctx, mu, e)
			if err != nil {
				return fmt.Errorf("edit %d (%s): %w", i, e.Op, err)
			}
			r.Index, r.Op = i, string(e.Op)
			res.Results[i] = r
		}
		return nil
	})
	if err != nil {
		return BatchResult{}, err
	}
	res.Seq = rec.Seq
	res.Changes = []FileChange{}
	fcs := make([]merge.FileChange, 0, len(changes))
	for _, c := range changes {
		res.Changes = append(res.Changes, FileChange{Path: c.path, Old: c.old, New: c.new})
		fcs = append(fcs, merge.PathChange(c.path, c.oldMode, c.old, c.newMode, c.new))
	}
	// In path order, as the session's diff lists them.
	slices.SortStableFunc(fcs, func(a, b merge.FileChange) int { return strings.Compare(a.Path(), b.Path()) })
	res.patch = func(ctx context.Context) (*merge.Patch, error) {
		if len(fcs) == 0 {
			return &merge.Patch{}, nil
		}
		p, err := merge.BuildPatch(ctx, repo, fcs, merge.PatchOptions{AttrTree: before, Read: d.readBlob})
		if err != nil {
			return nil, err
		}
		pol.hideUnreadable(p)
		return p, nil
	}
	if !dryRun {
		res.Mutation = &rec
	}
	return res, nil
}

// editFields says, for each field of an Edit, whether an edit sets it and
// which ops take it. An edit that sets a field its op does not take is
// refused, so nothing a client sends is silently ignored.
var editFields = []struct {
	name string
	set  func(Edit) bool
	ops  []Op
}{
	{"to", func(e Edit) bool { return e.To != "" }, []Op{OpMove, OpCopy}},
	{"overwrite", func(e Edit) bool { return e.Overwrite }, []Op{OpMove, OpCopy}},
	{"content", func(e Edit) bool { return e.Content != "" }, []Op{OpWrite, OpAppend}},
	{"mode", func(e Edit) bool { return e.Mode != 0 }, []Op{OpWrite, OpAppend}},
	{"recursive", func(e Edit) bool { return e.Recursive }, []Op{OpDelete}},
	{"glob", func(e Edit) bool { return e.Glob != "" }, []Op{OpReplace}},
	{"old", func(e Edit) bool { return e.Old != "" }, []Op{OpReplace}},
	{"new", func(e Edit) bool { return e.New != "" }, []Op{OpReplace}},
	{"count", func(e Edit) bool { return e.Count != 0 }, []Op{OpReplace}},
}

// editOps are the ops a batch takes.
var editOps = []Op{OpWrite, OpAppend, OpDelete, OpMove, OpCopy, OpReplace}

// checkEditFields refuses an edit whose op is unknown or that sets a field
// its op does not take.
func checkEditFields(e Edit) error {
	if !slices.Contains(editOps, e.Op) {
		return fmt.Errorf("unknown op %q", e.Op)
	}
	for _, f := range editFields {
		if !f.set(e) || slices.Contains(f.ops, e.Op) {
			continue
		}
		names := make([]string, len(f.ops))
		for i, op := range f.ops {
			names[i] = string(op)
		}
		only := names[0] + " does"
		if len(names) > 1 {
			only = strings.Join(names, " and ") + " do"
		}
		return fmt.Errorf("%s takes no %q (only %s)", e.Op, f.name, only)
	}
	return nil
}

func (ls *live) applyEdit(ctx context.Context, mu *draft, e Edit) (EditResult, error) {
	r := EditResult{Paths: []string{e.Path}}
	switch e.Op {
	case OpWrite:
		data := []byte(e.Content)
		return r, ls.put(ctx, mu, e.Path, func([]byte) []byte { return data }, WriteOptions{Mode: e.Mode, IfMatch: e.IfMatch})
	case OpAppend:
		return r, ls.put(ctx, mu, e.Path, func(old []byte) []byte {
			return append(append(make([]byte, 0, len(old)+len(e.Content)), old...), e.Content...)
		}, WriteOptions{Mode: e.Mode, IfMatch: e.IfMatch})
	case OpDelete:
		if err := checkIfMatch(ctx, mu, e.Path, e.IfMatch); err != nil {
			return r, err
		}
		return r, ls.remove(ctx, mu, e.Path, e.Recursive)
	case OpMove, OpCopy:
		r.Paths = []string{e.Path, e.To}
		if err := checkIfMatch(ctx, mu, e.Path, e.IfMatch); err != nil {
			return r, err
		}
		return r, ls.relocateIn(ctx, mu, e.Path, e.To, e.Op == OpMove, e.Overwrite)
	case OpReplace:
		if err := checkIfMatch(ctx, mu, e.Path, e.IfMatch); err != nil {
			return r, err
		}
		targets := []string{e.Path}
		var symlinks map[string]bool
		if e.Glob != "" {
			g, err := CompileGlob(e.Glob)
			if err != nil {
				return r, err
			}
			targets, symlinks = nil, map[string]bool{}
			err = ls.listFilesIn(ctx, mu, g, func(n overlayNode) {
				targets = append(targets, n.Path)
				if n.Mode == gitstore.ModeSymlink {
					symlinks[n.Path] = true
				}
			})
			if err != nil {
				return r, err
			}
		}
		r.Paths = []string{}
		for _, p := range targets {
			cur, err := mu.read(ctx, p)
			if err != nil {
				return r, err
			}
			out, n := replaceN(cur, []byte(e.Old), []byte(e.New), e.Count)
			if n == 0 {
				continue
			}
			if e.Glob != "" {
				// A glob never rewrites where a link points, bytes of a
				// binary file, or a base file it may not write; it says
				// which files it left.
				var pe *overlay.PathError
				switch {
				case symlinks[p]:
					r.Skipped = append(r.Skipped, Skipped{Path: p, Reason: "symlink"})
					continue
				case merge.IsBinary(cur):
					r.Skipped = append(r.Skipped, Skipped{Path: p, Reason: "binary"})
					continue
				case errors.As(overlay.ValidatePath(p), &pe):
					r.Skipped = append(r.Skipped, Skipped{Path: p, Reason: "invalid_path", Rule: string(pe.Rule)})
					continue
				}
			}
			if err := ls.put(ctx, mu, p, func([]byte) []byte { return out }, WriteOptions{}); err != nil {
				return r, err
			}
			r.Paths = append(r.Paths, p)
			r.Replacements += n
		}
		if r.Replacements == 0 && len(r.Skipped) > 0 {
			return r, fmt.Errorf("%w: %q found only in files a glob replace skips (binary, symlinks, names the write rules refuse), such as %q", record.ErrInvalid, e.Old, r.Skipped[0].Path)
		}
		if r.Replacements == 0 {
			return r, fmt.Errorf("%w: %q not found", record.ErrInvalid, e.Old)
		}
		return r, nil
	}
	return r, fmt.Errorf("%w: unknown op %q", record.ErrInvalid, e.Op)
}

// listFilesIn calls fn for the files of the mutation's view matching g
// that the policy lets the session write.
func (ls *live) listFilesIn(ctx context.Context, mu *draft, g *Glob, fn func(overlayNode)) error {
	err := listGlob(ctx, mu.ov, listAll(g.Prefix()), func(n overlayNode) error {
		if !n.IsDir() && n.Mode != gitstore.ModeGitlink && g.Match(n.Path) && ls.policy.canWrite(n.Path) {
			fn(n)
		}
		return nil
	})
	return notFound(err)
}

// replaceN replaces up to n (all when n <= 0) occurrences of old in s.
func replaceN(s, old, new []byte, n int) ([]byte, int) {
	count := bytes.Count(s, old)
	if n > 0 && count > n {
		count = n
	}
	if count == 0 {
		return s, 0
	}
	return bytes.Replace(s, old, new, count), count
}
