package changeset

// DiffEdits exposes the line diff to the external tests: each edit as
// old start, old count, new start, new count (0-based starts).
func DiffEdits(a, b []byte, histogram bool) [][4]int {
	var out [][4]int
	for _, e := range diffLines(splitLines(a), splitLines(b), diffOptions{histogram: histogram}) {
		out = append(out, [4]int{e.i1, e.chg1, e.i2, e.chg2})
	}
	return out
}
