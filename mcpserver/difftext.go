package mcpserver

import (
	"context"
	"strings"
)

// checkEvery is how many lines (or entries) a loop over a request's input
// handles between looks at the request's context: often enough that a
// client that leaves stops the work within milliseconds, rarely enough
// that the look costs nothing.
const checkEvery = 1 << 12

// diffFile is one file of a unified diff: its b/ path and its text, from
// its "diff --git" line to the next file's.
type diffFile struct{ path, text string }

// splitDiff cuts a unified diff into its files in one pass over its
// lines. Each file's text is a slice of d, never a copy grown line by
// line, so the cost is d's length whatever the size of one file; text
// before the first "diff --git" line belongs to no file. It stops with
// ctx's error when ctx ends.
func splitDiff(ctx context.Context, d string) ([]diffFile, error) {
	var out []diffFile
	start, n := 0, 0
	for off := 0; off < len(d); n++ {
		if n%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		end := len(d)
		if i := strings.IndexByte(d[off:], '\n'); i >= 0 {
			end = off + i + 1
		}
		if line := d[off:end]; strings.HasPrefix(line, "diff --git ") {
			if len(out) > 0 {
				out[len(out)-1].text = d[start:off]
			}
			out = append(out, diffFile{path: diffPath(line)})
			start = off
		}
		off = end
	}
	if len(out) > 0 {
		out[len(out)-1].text = d[start:]
	}
	return out, nil
}

// changeCounts counts the added and deleted lines of one file's diff:
// the lines of its hunks (from its first "@@" on) that start with '+' or
// '-'. The header's "--- a/…" and "+++ b/…" lines come before the first
// hunk, so an added line that itself starts with "++" still counts. It
// stops with ctx's error when ctx ends.
func changeCounts(ctx context.Context, text string) (added, deleted int, err error) {
	inHunks, n := false, 0
	for line := range strings.Lines(text) {
		if n++; n%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return 0, 0, err
			}
		}
		switch {
		case !inHunks:
			inHunks = strings.HasPrefix(line, "@@")
		case line[0] == '+':
			added++
		case line[0] == '-':
			deleted++
		}
	}
	return added, deleted, nil
}

// diffPath is the b/ path of a diff --git header.
func diffPath(header string) string {
	h := strings.TrimSuffix(strings.TrimPrefix(header, "diff --git "), "\n")
	if i := strings.Index(h, " b/"); i >= 0 {
		return strings.Trim(h[i+3:], `"`)
	}
	return h
}
