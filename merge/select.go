package merge

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sessiond/sessiond/gitstore"
)

// Selection names part of a patch: files taken whole by path, and single
// hunks by their index into that file's Hunks (FileDiff.Path() is the
// path; hunk indexes are positions in FileDiff.Hunks, which BuildPatch
// computes the same way every time for the same two trees).
type Selection struct {
	Files []string         `json:"files,omitempty"`
	Hunks map[string][]int `json:"hunks,omitempty"`
}

// IsEmpty reports whether s names nothing.
func (s Selection) IsEmpty() bool {
	if len(s.Files) > 0 {
		return false
	}
	for _, h := range s.Hunks {
		if len(h) > 0 {
			return false
		}
	}
	return true
}

// Selected is a Selection resolved against a patch.
type Selected struct {
	// Taken is what the selection takes, normalized: whole files sorted,
	// and only files taken in part under Hunks.
	Taken Selection
	// LeftOut is the rest of the patch: the files not taken at all, and
	// the hunks not taken of the files taken in part.
	LeftOut Selection
	// All says the selection takes the whole patch.
	All bool

	changes []gitstore.Change
	blobs   map[string][]byte // path → content of a file taken in part
}

// Partial reports whether a file can be taken hunk by hunk: a text file
// whose content was modified in place. Added, deleted, renamed, copied,
// binary, mode-only and type changes are taken whole.
func (f *FileDiff) Partial() bool {
	return f.Status == StatusModified && !f.Binary && f.OldMode.IsBlob() && f.NewMode.IsBlob() &&
		f.OldMode != gitstore.ModeSymlink && f.NewMode != gitstore.ModeSymlink
}

// Select resolves sel against p. It fails with a *SelectionError (which
// is ErrBadSelection) when sel names a file that is not in the patch, a
// hunk that does not exist, hunks of a file that is taken whole without
// naming all of them, a file both whole and by hunks, or nothing at all;
// nothing is read or written for it.
func Select(p *Patch, sel Selection) (*Selected, error) {
	byPath := make(map[string]int, len(p.Files))
	for i := range p.Files {
		byPath[p.Files[i].Path()] = i
	}
	whole := map[string]bool{}
	for _, f := range sel.Files {
		if _, ok := byPath[f]; !ok {
			return nil, &SelectionError{Path: f, Hunk: -1, Reason: "not a file of the changeset's diff"}
		}
		if len(sel.Hunks[f]) > 0 {
			return nil, &SelectionError{Path: f, Hunk: -1, Reason: "named in both files and hunks"}
		}
		whole[f] = true
	}
	part := map[string][]int{}
	for path, idx := range sel.Hunks {
		i, ok := byPath[path]
		if !ok {
			return nil, &SelectionError{Path: path, Hunk: -1, Reason: "not a file of the changeset's diff"}
		}
		if len(idx) == 0 || whole[path] {
			continue
		}
		f := &p.Files[i]
		idx = slices.Clone(idx)
		slices.Sort(idx)
		idx = slices.Compact(idx)
		for _, h := range idx {
			if h < 0 || h >= len(f.Hunks) {
				return nil, &SelectionError{Path: path, Hunk: h, Reason: fmt.Sprintf("no hunk %d: the file has %d", h, len(f.Hunks))}
			}
		}
		if len(idx) == len(f.Hunks) {
			whole[path] = true
			continue
		}
		if !f.Partial() {
			return nil, &SelectionError{Path: path, Hunk: -1, Reason: fmt.Sprintf("the file is %s and is taken whole: name it in files", describe(f))}
		}
		part[path] = idx
	}
	s := &Selected{blobs: map[string][]byte{}}
	for i := range p.Files {
		f := &p.Files[i]
		path := f.Path()
		switch {
		case whole[path]:
			s.Taken.Files = append(s.Taken.Files, path)
			s.changes = append(s.changes, wholeChange(f)...)
		case part[path] != nil:
			idx := part[path]
			if s.Taken.Hunks == nil {
				s.Taken.Hunks, s.LeftOut.Hunks = map[string][]int{}, map[string][]int{}
			}
			s.Taken.Hunks[path] = idx
			var left []int
			for h := range f.Hunks {
				if !slices.Contains(idx, h) {
					left = append(left, h)
				}
			}
			s.LeftOut.Hunks[path] = left
			s.blobs[path] = applyHunks(f.old, f.Hunks, idx)
			s.changes = append(s.changes, gitstore.Change{Path: path, Mode: f.NewMode})
		default:
			s.LeftOut.Files = append(s.LeftOut.Files, path)
		}
	}
	if s.Taken.IsEmpty() {
		return nil, &SelectionError{Hunk: -1, Reason: "the selection takes no change"}
	}
	s.All = s.LeftOut.IsEmpty()
	return s, nil
}

func describe(f *FileDiff) string {
	switch {
	case f.Binary:
		return "binary"
	case f.Status == StatusModified:
		return "not a text file"
	}
	return strings.ReplaceAll(string(f.Status), "_", " ")
}

// wholeChange is a file's change as tree changes over the old tree.
func wholeChange(f *FileDiff) []gitstore.Change {
	switch f.Status {
	case StatusDeleted:
		return []gitstore.Change{{Path: f.OldPath, Delete: true}}
	case StatusRenamed:
		return []gitstore.Change{{Path: f.OldPath, Delete: true}, {Path: f.NewPath, Mode: f.NewMode, OID: f.NewOID}}
	}
	return []gitstore.Change{{Path: f.NewPath, Mode: f.NewMode, OID: f.NewOID}}
}

// applyHunks returns old with the hunks at indexes take (sorted) applied.
// The hunks of one diff do not overlap, so any subset applies.
func applyHunks(old []byte, hunks []Hunk, take []int) []byte {
	lines := splitLines(old)
	var out []byte
	pos := 0 // next old line to copy, 0-based
	for _, i := range take {
		h := hunks[i]
		start := h.OldStart - 1
		if h.OldLines == 0 {
			start = h.OldStart // an insertion after line OldStart
		}
		for ; pos < start; pos++ {
			out = append(out, lines[pos]...)
		}
		for _, l := range h.Lines {
			if l[0] != '-' {
				out = append(out, l[1:]...)
			}
		}
		pos = start + h.OldLines
	}
	for ; pos < len(lines); pos++ {
		out = append(out, lines[pos]...)
	}
	return out
}

// BuildSelected writes the tree that is base with the selected changes
// applied: the blobs of files taken in part and the directories on
// changed paths, durably. base is the tree (or commit) the patch was
// computed from.
func BuildSelected(ctx context.Context, repo *gitstore.Repo, base gitstore.OID, s *Selected) (gitstore.OID, error) {
	b := repo.NewBatch()
	changes := slices.Clone(s.changes)
	for i := range changes {
		if data, ok := s.blobs[changes[i].Path]; ok && !changes[i].Delete {
			changes[i].OID = b.AddBlob(data)
		}
	}
	tree, err := b.BuildTree(ctx, base, changes)
	if err != nil {
		return gitstore.OID{}, fmt.Errorf("build selection: %w", err)
	}
	if err := b.Flush(ctx); err != nil {
		return gitstore.OID{}, fmt.Errorf("build selection: %w", err)
	}
	return tree, nil
}

// SortedPaths returns the paths a Selection names, sorted.
func (s Selection) SortedPaths() []string {
	out := slices.Clone(s.Files)
	for p := range s.Hunks {
		out = append(out, p)
	}
	sort.Strings(out)
	return slices.Compact(out)
}
