package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// EditOp is one replacement of edit_file.
type EditOp struct {
	OldText    string `json:"old_text" jsonschema:"The exact text to replace, copied from the file as read_file shows it (without the line-number prefix), including indentation. It must occur exactly once in the file (after the previous edits of this call) unless replace_all is true; include a few surrounding lines to make it unique."`
	NewText    string `json:"new_text" jsonschema:"The text to put in its place (empty to delete it)."`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"Replace every occurrence of old_text instead of requiring exactly one (for renames within the file)."`
}

// candidate is one place an old_text matched (or nearly matched).
type candidate struct {
	Line    int     `json:"line"`            // 1-based line of the match's start
	EndLine int     `json:"end_line"`        // 1-based line of its end
	Context string  `json:"context"`         // numbered lines around it
	Score   float64 `json:"score,omitempty"` // for a near-match, its similarity (0–1)
	Reason  string  `json:"reason,omitempty"`
}

const (
	maxCandidates = 10
	contextLines  = 2
)

// applyEdits applies ops in order to content and returns the result and
// the replacements of each op. Nothing is partial: the first op that does
// not match exactly once (or at least once with replace_all) fails the
// whole list with a no_match or ambiguous_match error naming the
// candidates. A file with CRLF line endings takes old and new texts
// written with LF, and keeps its CRLF, on the lines it had and on those
// the edits add.
func applyEdits(ctx context.Context, content string, ops []EditOp) (string, []int, error) {
	if len(ops) == 0 {
		return "", nil, badRequest("edits is empty: give at least one {old_text, new_text}")
	}
	counts := make([]int, len(ops))
	crlf := isCRLF(content)
	for i, op := range ops {
		old, new := op.OldText, op.NewText
		if crlf {
			new = toCRLF(new) // the lines it adds end as the file's do
		}
		if old == "" {
			if content == "" && len(ops) == 1 {
				counts[i] = 1
				content = new
				continue
			}
			return "", nil, badRequest("edit %d: old_text is empty; to write a whole file use write_file", i+1)
		}
		n := strings.Count(content, old)
		if n == 0 && strings.Contains(content, "\r\n") && strings.Contains(old, "\n") && !strings.Contains(old, "\r\n") {
			old, new = toCRLF(old), toCRLF(new)
			n = strings.Count(content, old)
		}
		if old == new {
			return "", nil, badRequest("edit %d: old_text and new_text are the same", i+1)
		}
		switch {
		case n == 0:
			e := noMatch(ctx, content, i, len(ops), op.OldText)
			if err := ctx.Err(); err != nil {
				return "", nil, err
			}
			return "", nil, e
		case n > 1 && !op.ReplaceAll:
			return "", nil, ambiguous(content, i, len(ops), old, n)
		}
		if op.ReplaceAll {
			content = strings.ReplaceAll(content, old, new)
		} else {
			content = strings.Replace(content, old, new, 1)
		}
		counts[i] = n
	}
	return content, counts, nil
}

// isCRLF reports whether content's lines all end in CRLF: the file
// whose edits keep CRLF. A file that mixes line endings is edited as
// given.
func isCRLF(content string) bool {
	n := strings.Count(content, "\r\n")
	return n > 0 && n == strings.Count(content, "\n")
}

func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

func which(i, n int) string {
	if n == 1 {
		return "old_text"
	}
	return fmt.Sprintf("edit %d's old_text", i+1)
}

func ambiguous(content string, i, nops int, old string, n int) *Error {
	lines := splitKeep(content)
	var cands []candidate
	var b strings.Builder
	fmt.Fprintf(&b, "%s matches %d times; it must match exactly once. Nothing was changed. Add surrounding lines to old_text to pick one, or set replace_all to change them all.", which(i, nops), n)
	if i > 0 {
		b.WriteString(" (Matched against the file after the previous edits of this call.)")
	}
	off, line := 0, 1 // line is the line at off
	for k := 0; k < min(n, maxCandidates) && off <= len(content); k++ {
		j := strings.Index(content[off:], old)
		if j < 0 {
			break
		}
		start := off + j
		line += strings.Count(content[off:start], "\n")
		first := line
		off = start + len(old)
		line += strings.Count(old, "\n")
		last := first + strings.Count(strings.TrimSuffix(old, "\n"), "\n")
		c := candidate{Line: first, EndLine: last, Context: numbered(lines, first, last, contextLines)}
		cands = append(cands, c)
		fmt.Fprintf(&b, "\n\nmatch %d at line %d:\n%s", k+1, first, c.Context)
	}
	if n > maxCandidates {
		fmt.Fprintf(&b, "\n\n(%d more matches not shown)", n-maxCandidates)
	}
	return &Error{Code: CodeAmbiguousMatch, Message: b.String(),
		Details: map[string]any{"edit": i + 1, "matches": n, "candidates": cands}}
}

func noMatch(ctx context.Context, content string, i, nops int, old string) *Error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s was not found in the file. Nothing was changed.", which(i, nops))
	if i > 0 {
		b.WriteString(" (Matched against the file after the previous edits of this call.)")
	}
	d := map[string]any{"edit": i + 1, "matches": 0}
	if c, ok := nearMatch(ctx, content, old); ok {
		fmt.Fprintf(&b, "\n\nThe closest text is at line %d (%s):\n%s\nCopy old_text exactly from there (read_file shows the current text).", c.Line, c.Reason, c.Context)
		d["near_match"] = c
	} else {
		b.WriteString(" Nothing similar is in the file; read it again with read_file.")
	}
	return &Error{Code: CodeNoMatch, Message: b.String(), Details: d}
}

// splitKeep cuts content into lines without their line endings.
func splitKeep(content string) []string {
	content = strings.TrimSuffix(content, "\n")
	ls := strings.Split(content, "\n")
	for i, l := range ls {
		ls[i] = strings.TrimSuffix(l, "\r")
	}
	return ls
}

// numbered shows lines first..last (1-based) with ctx lines around them,
// each with its number, the matched ones marked with '>'.
func numbered(lines []string, first, last, ctx int) string {
	var b strings.Builder
	from, to := max(first-ctx, 1), min(last+ctx, len(lines))
	for n := from; n <= to; n++ {
		mark := " "
		if n >= first && n <= last {
			mark = ">"
		}
		fmt.Fprintf(&b, "%s%6d\t%s\n", mark, n, cutLine(lines[n-1], 200))
	}
	return b.String()
}

// cutLine is l cut to its first n characters, marked … when cut.
func cutLine(l string, n int) string {
	if p, cut := firstChars(l, n); cut {
		return p + "…"
	}
	return l
}

// firstChars is l's first n characters (not bytes: a cut never splits
// one), and whether that left any out.
func firstChars(l string, n int) (string, bool) {
	if len(l) <= n {
		return l, false
	}
	k := 0
	for i := range l {
		if k == n {
			return l[:i], true
		}
		k++
	}
	return l, false
}

// nearCandidates is how many windows the bigram prefilter of nearMatch
// hands to the line-by-line score.
const nearCandidates = 8

// nearMatch finds the window of the file's lines closest to old: first
// the same lines with other whitespace, else the most similar window by
// line similarity, if it is similar enough to help. The cost is linear
// in the file and old_text: the whitespace match is a KMP search over
// line ids, and the similar window is found by sliding a window of
// len(old) lines down the file while keeping the Dice coefficient of the
// window's and old_text's character bigrams up to date (each line's
// bigrams enter once and leave once); only the few best windows by that
// measure are scored line by line. ok is false when nothing is similar
// enough, or ctx ended.
func nearMatch(ctx context.Context, content, old string) (candidate, bool) {
	lines := splitKeep(content)
	want := splitKeep(old)
	if len(want) == 0 || len(want) > len(lines) {
		return candidate{}, false
	}
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	nw := make([]string, len(want))
	for i, w := range want {
		nw[i] = norm(w)
	}
	nl := make([]string, len(lines))
	for i, l := range lines {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return candidate{}, false
		}
		nl[i] = norm(l)
	}
	if at := indexLines(nl, nw); at >= 0 {
		return candidate{Line: at + 1, EndLine: at + len(want), Score: 1, Reason: "the same text with different whitespace or indentation",
			Context: numbered(lines, at+1, at+len(want), contextLines)}, true
	}
	best, bestAt := 0.0, -1
	for _, at := range bigramWindows(ctx, nl, nw, nearCandidates) {
		score := 0.0
		for k := range nw {
			score += similarity(nl[at+k], nw[k])
		}
		if score /= float64(len(nw)); score > best || score == best && at < bestAt {
			best, bestAt = score, at
		}
	}
	if bestAt < 0 || best < 0.5 || ctx.Err() != nil {
		return candidate{}, false
	}
	return candidate{Line: bestAt + 1, EndLine: bestAt + len(want), Score: best,
		Reason: fmt.Sprintf("%.0f%% similar", best*100), Context: numbered(lines, bestAt+1, bestAt+len(want), contextLines)}, true
}

// indexLines is the first index at which want occurs in lines as a run
// of equal lines, or -1: Knuth-Morris-Pratt over line ids, so the cost
// is len(lines) + len(want) whatever the lines repeat.
func indexLines(lines, want []string) int {
	ids := make(map[string]int, len(want))
	w := make([]int, len(want))
	for i, s := range want {
		id, ok := ids[s]
		if !ok {
			id = len(ids)
			ids[s] = id
		}
		w[i] = id
	}
	// fail[i] is the length of the longest proper border of w[:i+1].
	fail := make([]int, len(w))
	for i, k := 1, 0; i < len(w); i++ {
		for k > 0 && w[i] != w[k] {
			k = fail[k-1]
		}
		if w[i] == w[k] {
			k++
		}
		fail[i] = k
	}
	k := 0
	for i, s := range lines {
		id, ok := ids[s]
		if !ok {
			k = 0
			continue
		}
		for k > 0 && id != w[k] {
			k = fail[k-1]
		}
		if id == w[k] {
			k++
		}
		if k == len(w) {
			return i - len(w) + 1
		}
	}
	return -1
}

// bigram is a pair of adjacent bytes.
type bigram = uint16

// lineBigrams calls fn for each bigram of line framed by newlines (so
// that a short or empty line still has one, and lines are told apart by
// how they start and end).
func lineBigrams(line string, fn func(bigram)) {
	prev := byte('\n')
	for i := 0; i < len(line); i++ {
		fn(bigram(prev)<<8 | bigram(line[i]))
		prev = line[i]
	}
	fn(bigram(prev)<<8 | '\n')
}

// bigramWindows returns the starts of the (at most n) windows of
// len(want) lines whose bag of bigrams is most like want's (by the Dice
// coefficient; ties to the earlier window), best first. It slides the
// window down lines once, so each line's bigrams are counted in and out
// once. It returns nil when ctx ends.
func bigramWindows(ctx context.Context, lines, want []string, n int) []int {
	wantN, winN := new([1 << 16]int32), new([1 << 16]int32)
	total := 0 // bigrams of want plus bigrams of the window
	for _, w := range want {
		lineBigrams(w, func(g bigram) { wantN[g]++; total++ })
	}
	common := 0 // Σ min(wantN, winN)
	enter := func(l string) {
		lineBigrams(l, func(g bigram) {
			if winN[g] < wantN[g] {
				common++
			}
			winN[g]++
			total++
		})
	}
	leave := func(l string) {
		lineBigrams(l, func(g bigram) {
			winN[g]--
			if winN[g] < wantN[g] {
				common--
			}
			total--
		})
	}
	type scored struct {
		at    int
		score float64
	}
	var top []scored
	for i := range want {
		enter(lines[i])
	}
	for at := 0; at+len(want) <= len(lines); at++ {
		if at%checkEvery == 0 && ctx.Err() != nil {
			return nil
		}
		if at > 0 {
			leave(lines[at-1])
			enter(lines[at+len(want)-1])
		}
		s := 2 * float64(common) / float64(total)
		if len(top) == n && s <= top[n-1].score {
			continue
		}
		i := len(top)
		for i > 0 && top[i-1].score < s {
			i--
		}
		top = slices.Insert(top, i, scored{at, s})
		if len(top) > n {
			top = top[:n]
		}
	}
	out := make([]int, len(top))
	for i, t := range top {
		out[i] = t.at
	}
	return out
}

// similarity is the Dice coefficient of two strings' character bigrams.
func similarity(a, b string) float64 {
	if a == b {
		return 1
	}
	if len(a) < 2 || len(b) < 2 {
		return 0
	}
	grams := make(map[string]int, len(a))
	for i := 0; i+2 <= len(a); i++ {
		grams[a[i:i+2]]++
	}
	both := 0
	for i := 0; i+2 <= len(b); i++ {
		if grams[b[i:i+2]] > 0 {
			grams[b[i:i+2]]--
			both++
		}
	}
	return 2 * float64(both) / float64(len(a)-1+len(b)-1)
}
