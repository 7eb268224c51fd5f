package merge

import (
	"bytes"
	"strings"
)

// A three-way line merge that makes git's choices (xdiff's xdl_merge at
// the level git's merges use, XDL_MERGE_ZEALOUS): both sides are diffed
// against the base, changes that do not touch are taken, identical
// changes are taken once, and overlapping changes are narrowed by diffing
// the two sides against each other before they are declared conflicts.

// binaryProbe is how many leading bytes git looks at for a NUL byte when
// it decides whether content is binary.
const binaryProbe = 8000

// IsBinary reports whether git would treat data as binary: a NUL byte in
// its first 8,000 bytes.
func IsBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binaryProbe)], 0) >= 0
}

// defaultMarkerSize is the length of git's conflict markers.
const defaultMarkerSize = 7

// LineMergeOptions label the conflict markers of a line merge. Empty
// labels leave the marker bare, as git does.
type LineMergeOptions struct {
	OursLabel   string
	TheirsLabel string
	// MarkerSize is the length of the marker runs; 0 means git's 7.
	MarkerSize int
	// Histogram diffs with git's histogram algorithm, as git's tree
	// merges (merge-ort) do; without it the merge uses Myers, as git
	// merge-file does.
	Histogram bool
	// Diff3 writes git's diff3 conflict style (merge.conflictStyle=diff3):
	// each conflict shows the base's lines after a "|||||||" marker
	// labelled BaseLabel. As in git, conflicts are then not narrowed to
	// where ours and theirs differ (xdiff's level drops to EAGER).
	Diff3     bool
	BaseLabel string
}

// ConflictHunk is one conflicting region of a line merge. Line numbers are
// 1-based positions in each version; a region with no lines has Lines
// empty and Start at the line before which it sits.
type ConflictHunk struct {
	BaseStart   int      `json:"base_start"`
	BaseLines   []string `json:"base_lines"`
	OursStart   int      `json:"ours_start"`
	OursLines   []string `json:"ours_lines"`
	TheirsStart int      `json:"theirs_start"`
	TheirsLines []string `json:"theirs_lines"`
}

// LineMergeResult is the outcome of MergeLines.
type LineMergeResult struct {
	// Content is the merged file: when there are conflicts, with git-style
	// conflict markers around each conflicting region.
	Content []byte
	// Conflicts lists the conflicting regions; empty for a clean merge.
	Conflicts []ConflictHunk
	// Binary is set when a side is binary and could not be merged line by
	// line; Content is then ours and the merge is a conflict.
	Binary bool
}

// Clean reports whether the merge had no conflicts.
func (r *LineMergeResult) Clean() bool { return len(r.Conflicts) == 0 && !r.Binary }

// MergeLines merges ours and theirs, both descended from base, line by
// line with git's rules. It never fails; binary input is a conflict that
// keeps ours.
func MergeLines(base, ours, theirs []byte, opts LineMergeOptions) *LineMergeResult {
	if IsBinary(base) || IsBinary(ours) || IsBinary(theirs) {
		return &LineMergeResult{Content: ours, Binary: true}
	}
	l0, l1, l2 := splitLines(base), splitLines(ours), splitLines(theirs)
	c := newClassifier(len(l0) + len(l1) + len(l2))
	c0, c1, c2 := c.classify(l0), c.classify(l1), c.classify(l2)
	do := diffOptions{histogram: opts.Histogram}
	x1 := diffClasses(l0, l1, c0, c1, do)
	x2 := diffClasses(l0, l2, c0, c2, do)
	if len(x1) == 0 {
		return &LineMergeResult{Content: theirs}
	}
	if len(x2) == 0 {
		return &LineMergeResult{Content: ours}
	}
	m := &xmerge{l0: l0, l1: l1, l2: l2, c1: c1, c2: c2, opts: opts}
	m.collect(x1, x2)
	if !opts.Diff3 {
		m.refine()
		m.simplify()
	}
	return m.output()
}

// mergeRec is one region of a merge (xdmerge_t).
type mergeRec struct {
	// mode: 0 conflict, 1 take ours, 2 take theirs, 3 both, 4 identical
	// after refinement (take ours).
	mode             int
	i0, chg0         int // base region
	i1, chg1         int // ours region
	i2, chg2         int // theirs region
	baseI0, baseChg0 int // the base region before refinement split it
}

type xmerge struct {
	l0, l1, l2 [][]byte
	c1, c2     []int
	opts       LineMergeOptions
	recs       []mergeRec
}

func (m *xmerge) append(mode, i0, chg0, i1, chg1, i2, chg2 int) {
	if n := len(m.recs); n > 0 {
		r := &m.recs[n-1]
		if i1 <= r.i1+r.chg1 || i2 <= r.i2+r.chg2 {
			if mode != r.mode {
				r.mode = 0
			}
			r.chg0 = i0 + chg0 - r.i0
			r.chg1 = i1 + chg1 - r.i1
			r.chg2 = i2 + chg2 - r.i2
			return
		}
	}
	m.recs = append(m.recs, mergeRec{mode: mode, i0: i0, chg0: chg0, i1: i1, chg1: chg1, i2: i2, chg2: chg2})
}

func (m *xmerge) sameLines(i1, i2, n int) bool {
	for k := 0; k < n; k++ {
		if m.c1[i1+k] != m.c2[i2+k] {
			return false
		}
	}
	return true
}

func (m *xmerge) collect(x1, x2 []edit) {
	n1, n2 := len(m.l1)-len(m.l0), len(m.l2)-len(m.l0)
	for len(x1) > 0 && len(x2) > 0 {
		a, b := x1[0], x2[0]
		if a.i1+a.chg1 < b.i1 {
			m.append(1, a.i1, a.chg1, a.i2, a.chg2, b.i2-b.i1+a.i1, a.chg1)
			x1 = x1[1:]
			continue
		}
		if b.i1+b.chg1 < a.i1 {
			m.append(2, b.i1, b.chg1, a.i2-a.i1+b.i1, b.chg1, b.i2, b.chg2)
			x2 = x2[1:]
			continue
		}
		if a.i1 != b.i1 || a.chg1 != b.chg1 || a.chg2 != b.chg2 || !m.sameLines(a.i2, b.i2, a.chg2) {
			off := a.i1 - b.i1
			ffo := off + a.chg1 - b.chg1
			i0, i1, i2 := a.i1, a.i2, b.i2
			if off > 0 {
				i0 -= off
				i1 -= off
			} else {
				i2 += off
			}
			chg0 := a.i1 + a.chg1 - i0
			chg1 := a.i2 + a.chg2 - i1
			chg2 := b.i2 + b.chg2 - i2
			if ffo < 0 {
				chg0 -= ffo
				chg1 -= ffo
			} else {
				chg2 += ffo
			}
			m.append(0, i0, chg0, i1, chg1, i2, chg2)
		}
		e1, e2 := a.i1+a.chg1, b.i1+b.chg1
		if e1 >= e2 {
			x2 = x2[1:]
		}
		if e2 >= e1 {
			x1 = x1[1:]
		}
	}
	for _, a := range x1 {
		m.append(1, a.i1, a.chg1, a.i2, a.chg2, a.i1+n2, a.chg1)
	}
	for _, b := range x2 {
		m.append(2, b.i1, b.chg1, b.i1+n1, b.chg1, b.i2, b.chg2)
	}
	for i := range m.recs {
		m.recs[i].baseI0, m.recs[i].baseChg0 = m.recs[i].i0, m.recs[i].chg0
	}
}

// refine narrows each conflict to the lines where ours and theirs really
// differ (xdl_refine_conflicts).
func (m *xmerge) refine() {
	out := make([]mergeRec, 0, len(m.recs))
	for _, r := range m.recs {
		if r.mode != 0 || r.chg1 == 0 || r.chg2 == 0 {
			out = append(out, r)
			continue
		}
		s := diffClasses(m.l1[r.i1:r.i1+r.chg1], m.l2[r.i2:r.i2+r.chg2],
			m.c1[r.i1:r.i1+r.chg1], m.c2[r.i2:r.i2+r.chg2], diffOptions{histogram: m.opts.Histogram})
		if len(s) == 0 {
			r.mode = 4
			out = append(out, r)
			continue
		}
		for _, e := range s {
			n := r
			n.i1, n.chg1 = e.i1+r.i1, e.chg1
			n.i2, n.chg2 = e.i2+r.i2, e.chg2
			out = append(out, n)
		}
	}
	m.recs = out
}

// simplify joins conflicts separated by at most three lines
// (xdl_simplify_non_conflicts at git's level).
func (m *xmerge) simplify() {
	if len(m.recs) == 0 {
		return
	}
	out := m.recs[:1]
	for _, n := range m.recs[1:] {
		r := &out[len(out)-1]
		if r.mode != 0 || n.mode != 0 || n.i1-(r.i1+r.chg1) > 3 {
			out = append(out, n)
			continue
		}
		r.chg1 = n.i1 + n.chg1 - r.i1
		r.chg2 = n.i2 + n.chg2 - r.i2
		r.baseChg0 = max(r.baseChg0, n.baseI0+n.baseChg0-r.baseI0)
	}
	m.recs = out
}

// isEOLCRLF reports whether line i of lines ends in CRLF, -1 when that
// cannot be told (is_eol_crlf).
func isEOLCRLF(lines [][]byte, i int) int {
	b2i := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	if i < len(lines)-1 {
		l := lines[i]
		return b2i(len(l) > 1 && l[len(l)-2] == '\r')
	}
	if len(lines) == 0 {
		return -1
	}
	l := lines[i]
	if len(l) > 0 && l[len(l)-1] == '\n' {
		return b2i(len(l) > 1 && l[len(l)-2] == '\r')
	}
	if i == 0 {
		return -1
	}
	p := lines[i-1]
	return b2i(len(p) > 1 && p[len(p)-2] == '\r')
}

func (m *xmerge) crNeeded(r *mergeRec) bool {
	at := func(i int) int {
		if i > 0 {
			return i - 1
		}
		return 0
	}
	n := isEOLCRLF(m.l1, at(r.i1))
	if n != 0 {
		n = isEOLCRLF(m.l2, at(r.i2))
	}
	if n != 0 {
		n = isEOLCRLF(m.l0, 0)
	}
	return n > 0
}

// copyLines appends lines, adding a line end to a last line without one
// when addNL is set.
func copyLines(dst []byte, lines [][]byte, needsCR, addNL bool) []byte {
	if len(lines) == 0 {
		return dst
	}
	for _, l := range lines {
		dst = append(dst, l...)
	}
	if addNL {
		last := lines[len(lines)-1]
		if len(last) == 0 || last[len(last)-1] != '\n' {
			if needsCR {
				dst = append(dst, '\r')
			}
			dst = append(dst, '\n')
		}
	}
	return dst
}

func (m *xmerge) marker(dst []byte, c byte, label string, needsCR bool) []byte {
	size := m.opts.MarkerSize
	if size <= 0 {
		size = defaultMarkerSize
	}
	dst = append(dst, strings.Repeat(string(c), size)...)
	if label != "" {
		dst = append(dst, ' ')
		dst = append(dst, label...)
	}
	if needsCR {
		dst = append(dst, '\r')
	}
	return append(dst, '\n')
}

func linesText(lines [][]byte) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l)
	}
	return out
}

func (m *xmerge) output() *LineMergeResult {
	res := &LineMergeResult{}
	var dst []byte
	i := 0
	for k := range m.recs {
		r := &m.recs[k]
		switch {
		case r.mode == 0:
			cr := m.crNeeded(r)
			dst = copyLines(dst, m.l1[i:r.i1], false, false)
			dst = m.marker(dst, '<', m.opts.OursLabel, cr)
			dst = copyLines(dst, m.l1[r.i1:r.i1+r.chg1], cr, true)
			if m.opts.Diff3 {
				dst = m.marker(dst, '|', m.opts.BaseLabel, cr)
				dst = copyLines(dst, m.l0[r.i0:r.i0+r.chg0], cr, true)
			}
			dst = m.marker(dst, '=', "", cr)
			dst = copyLines(dst, m.l2[r.i2:r.i2+r.chg2], cr, true)
			dst = m.marker(dst, '>', m.opts.TheirsLabel, cr)
			res.Conflicts = append(res.Conflicts, ConflictHunk{
				BaseStart:   r.baseI0 + 1,
				BaseLines:   linesText(m.l0[r.baseI0 : r.baseI0+r.baseChg0]),
				OursStart:   r.i1 + 1,
				OursLines:   linesText(m.l1[r.i1 : r.i1+r.chg1]),
				TheirsStart: r.i2 + 1,
				TheirsLines: linesText(m.l2[r.i2 : r.i2+r.chg2]),
			})
		case r.mode&3 != 0:
			dst = copyLines(dst, m.l1[i:r.i1], false, false)
			if r.mode&1 != 0 {
				dst = copyLines(dst, m.l1[r.i1:r.i1+r.chg1], m.crNeeded(r), r.mode&2 != 0)
			}
			if r.mode&2 != 0 {
				dst = copyLines(dst, m.l2[r.i2:r.i2+r.chg2], false, false)
			}
		default:
			continue
		}
		i = r.i1 + r.chg1
	}
	dst = copyLines(dst, m.l1[i:], false, false)
	res.Content = dst
	if dst == nil {
		res.Content = []byte{}
	}
	return res
}
