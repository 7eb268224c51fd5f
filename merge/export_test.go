package merge

import (
	"maps"
	"slices"
)

// DiffEdits exposes the line diff to the external tests: each edit as
// old start, old count, new start, new count (0-based starts).
func DiffEdits(a, b []byte, histogram bool) [][4]int {
	var out [][4]int
	for _, e := range diffLines(splitLines(a), splitLines(b), diffOptions{histogram: histogram}) {
		out = append(out, [4]int{e.i1, e.chg1, e.i2, e.chg2})
	}
	return out
}

// TextPatch is a patch of in-memory files for the external tests: path →
// [old, new] contents (nil old: added, nil new: deleted), with hunks as
// BuildPatch computes them and made-up blob ids.
func TextPatch(files map[string][2][]byte) *Patch {
	p := &Patch{}
	n := byte(1)
	for _, path := range slices.Sorted(maps.Keys(files)) {
		c := files[path]
		f := FileDiff{FileChange: FileChange{Status: StatusModified, OldPath: path, NewPath: path,
			OldMode: 0o100644, NewMode: 0o100644}, old: c[0], new: c[1]}
		f.OldOID[0], f.NewOID[0] = n, n+1
		n += 2
		switch {
		case c[0] == nil:
			f.Status, f.OldPath, f.OldMode, f.OldOID = StatusAdded, "", 0, [20]byte{}
		case c[1] == nil:
			f.Status, f.NewPath, f.NewMode, f.NewOID = StatusDeleted, "", 0, [20]byte{}
		}
		f.Binary = IsBinary(c[0]) || IsBinary(c[1])
		if !f.Binary {
			f.Hunks = hunks(splitLines(c[0]), splitLines(c[1]), 3)
		}
		p.Files = append(p.Files, f)
	}
	return p
}

// ApplySelected is the content Select gives a file taken in part.
func ApplySelected(s *Selected, path string) ([]byte, bool) {
	b, ok := s.blobs[path]
	return b, ok
}

// ApplyHunks applies the hunks at take (sorted) of f to its old content.
func ApplyHunks(f *FileDiff, take []int) []byte { return applyHunks(f.old, f.Hunks, take) }

// BuiltinFuncname is git's built-in funcname pattern of driver name as
// the table holds it, and whether it ignores case.
func BuiltinFuncname(name string) (pattern string, icase, ok bool) {
	d, ok := builtinDrivers[name]
	return d.pattern, d.icase, ok
}

// BuiltinDrivers are the names of the built-in drivers.
func BuiltinDrivers() map[string]bool {
	out := map[string]bool{}
	for n := range builtinDrivers {
		out[n] = true
	}
	return out
}
