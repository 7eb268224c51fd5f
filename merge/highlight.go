package merge

import "github.com/sessiond/sessiond/highlight"

// Highlight gives each line of the patch's hunks its syntax tokens
// (Hunk.Spans), lexing each side of a text file whole, so a line inside a
// multi-line comment or string is classed as such: removed lines from the
// old side, added and context lines from the new one. Files chroma has no
// lexer for, over highlight.MaxFileBytes, or past highlight.MaxPatchBytes
// of the patch are left without spans.
func (p *Patch) Highlight() {
	budget := highlight.MaxPatchBytes
	for i := range p.Files {
		f := &p.Files[i]
		if f.Binary || len(f.Hunks) == 0 || !highlight.Known(f.Path()) {
			continue
		}
		var wantOld, wantNew bool
		for _, h := range f.Hunks {
			for _, l := range h.Lines {
				if l[0] == '-' {
					wantOld = true
				} else {
					wantNew = true
				}
			}
		}
		size := 0
		if wantOld {
			size += len(f.old)
		}
		if wantNew {
			size += len(f.new)
		}
		if size > budget {
			continue
		}
		budget -= size
		var old, new [][]highlight.Span
		if wantOld {
			old = highlight.Lines(f.oldName(), f.old)
		}
		if wantNew {
			new = highlight.Lines(f.Path(), f.new)
		}
		if old == nil && new == nil {
			continue
		}
		at := func(side [][]highlight.Span, n int) []highlight.Span {
			if n < 1 || n > len(side) {
				return nil
			}
			return side[n-1]
		}
		for k := range f.Hunks {
			h := &f.Hunks[k]
			o, n := h.OldStart, h.NewStart
			if h.OldLines == 0 {
				o++
			}
			if h.NewLines == 0 {
				n++
			}
			h.Spans = make([][]highlight.Span, len(h.Lines))
			for j, l := range h.Lines {
				switch l[0] {
				case '-':
					h.Spans[j] = at(old, o)
					o++
				case '+':
					h.Spans[j] = at(new, n)
					n++
				default:
					h.Spans[j] = at(new, n)
					o++
					n++
				}
			}
		}
	}
}

// oldName is the name the old side's lexer is chosen by.
func (f *FileDiff) oldName() string {
	if f.OldPath != "" {
		return f.OldPath
	}
	return f.Path()
}

// Only keeps the files of the patch whose path (new or old) is one of
// paths, and sums the stats again over them.
func (p *Patch) Only(paths []string) {
	want := make(map[string]bool, len(paths))
	for _, q := range paths {
		want[q] = true
	}
	kept := p.Files[:0]
	var stats Stats
	for _, f := range p.Files {
		if !want[f.NewPath] && !want[f.OldPath] {
			continue
		}
		kept = append(kept, f)
		stats.Files++
		stats.Insertions += f.Insertions
		stats.Deletions += f.Deletions
	}
	p.Files, p.Stats = kept, stats
}
