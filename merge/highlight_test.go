package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPatchHighlight: removed lines are classed from the old text, added
// and context lines from the new, one entry per line; a file no lexer
// knows stays plain.
func TestPatchHighlight(t *testing.T) {
	oldGo := "package p\n\nvar a = 1\n\nfunc F() {}\n"
	newGo := "package p\n\nvar a = \"one\"\n\nfunc F() {}\n"
	p := &Patch{Files: []FileDiff{
		{FileChange: FileChange{Status: StatusModified, OldPath: "p.go", NewPath: "p.go"}, old: []byte(oldGo), new: []byte(newGo),
			Hunks: hunks(splitLines([]byte(oldGo)), splitLines([]byte(newGo)), 3)},
		{FileChange: FileChange{Status: StatusModified, OldPath: "n.unknownext", NewPath: "n.unknownext"}, old: []byte("a\n"), new: []byte("b\n"),
			Hunks: hunks(splitLines([]byte("a\n")), splitLines([]byte("b\n")), 3)},
	}}
	p.Highlight()
	h := p.Files[0].Hunks[0]
	require.Len(t, h.Spans, len(h.Lines))
	cls := func(j int) map[string]string {
		r := []rune(h.Lines[j][1:])
		out := map[string]string{}
		for _, s := range h.Spans[j] {
			out[string(r[s.Start:s.End])] = s.Class
		}
		return out
	}
	for j, l := range h.Lines {
		switch l {
		case "-var a = 1\n":
			assert.Equal(t, "mi", cls(j)["1"], "the old side's number")
		case "+var a = \"one\"\n":
			assert.Equal(t, "s", cls(j)[`"one"`][:1], "the new side's string")
		case " package p\n":
			assert.Equal(t, "kn", cls(j)["package"])
		}
	}
	assert.Nil(t, p.Files[1].Hunks[0].Spans, "no lexer: plain")
}
