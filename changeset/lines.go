package changeset

import (
	"bytes"
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/highlight"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
)

// Side names a side of a revision's diff.
type Side string

const (
	SideBase Side = "base" // the revision's base: the diff's old side
	SideHead Side = "head" // the revision's head: the new side
)

// FileLines are some lines of a file at one side of a revision: what a
// reviewer expands around a hunk.
type FileLines struct {
	Revision int
	Side     Side
	Path     string
	OID      gitstore.OID
	// Start and End are the first and last line given (1-based, End
	// inclusive; End < Start when none are, past the end of the file);
	// Total is the file's number of lines.
	Start, End, Total int
	Lines             []string // with their newline, as a diff's lines
	// Spans are the lines' syntax tokens, as Hunk.Spans (nil when the
	// file is left plain).
	Spans [][]highlight.Span
}

// RevisionLines reads lines [from, to] (1-based, inclusive; to past the
// end of the file stops at its end) of path at one side of revision n (0:
// the current one). Only a path the revision changes can be read, at
// the side where it exists: a reviewer sees what the diff shows and its
// surroundings, not the rest of the tree. A range that starts past the
// end of the file is invalid.
func (s *Service) RevisionLines(ctx context.Context, id uuid.UUID, n int, side Side, path string, from, to int) (FileLines, error) {
	if side != SideBase && side != SideHead {
		return FileLines{}, fmt.Errorf("side %q: use base or head: %w", side, record.ErrInvalid)
	}
	if from < 1 || to < from {
		return FileLines{}, fmt.Errorf("lines %d-%d: want a-b with 1 <= a <= b: %w", from, to, record.ErrInvalid)
	}
	c, err := s.revision(ctx, id, n)
	if err != nil {
		return FileLines{}, err
	}
	r, err := s.openChangeset(ctx, c)
	if err != nil {
		return FileLines{}, err
	}
	trees := [2]gitstore.OID{}
	for i, oid := range []gitstore.OID{c.BaseCommit, c.HeadCommit} {
		cm, err := r.Commit(ctx, oid)
		if err != nil {
			return FileLines{}, err
		}
		trees[i] = cm.Tree
	}
	changes, err := merge.DiffTrees(ctx, r, trees[0], trees[1], merge.DiffOptions{NoRenames: true})
	if err != nil {
		return FileLines{}, fmt.Errorf("changeset %s: %w", id, err)
	}
	var blob gitstore.OID
	for _, ch := range changes {
		if side == SideBase && ch.OldPath == path && regular(ch.OldMode) {
			blob = ch.OldOID
		}
		if side == SideHead && ch.NewPath == path && regular(ch.NewMode) {
			blob = ch.NewOID
		}
	}
	if blob.IsZero() {
		return FileLines{}, fmt.Errorf("%q is not a file revision %d of changeset %s changes at its %s: %w", path, c.Revision, id, side, record.ErrNotFound)
	}
	data, err := r.ReadBlob(ctx, blob)
	if err != nil {
		return FileLines{}, err
	}
	if merge.IsBinary(data) {
		return FileLines{}, fmt.Errorf("%q is binary at the %s: %w", path, side, record.ErrInvalid)
	}
	var lines []string
	for rest := data; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			lines = append(lines, string(rest))
			break
		}
		lines = append(lines, string(rest[:i+1]))
		rest = rest[i+1:]
	}
	out := FileLines{Revision: c.Revision, Side: side, Path: path, OID: blob, Start: from, Total: len(lines)}
	if from > len(lines) {
		return FileLines{}, fmt.Errorf("lines %d-%d: %q has %d lines at the %s: %w", from, to, path, len(lines), side, record.ErrInvalid)
	}
	out.End = min(to, len(lines))
	out.Lines = lines[from-1 : out.End]
	if spans := highlight.Lines(path, data); spans != nil {
		out.Spans = make([][]highlight.Span, len(out.Lines))
		for i := range out.Lines {
			if k := from - 1 + i; k < len(spans) {
				out.Spans[i] = spans[k]
			}
		}
	}
	return out, nil
}

func regular(m gitstore.Mode) bool { return m == gitstore.ModeFile || m == gitstore.ModeExec }
