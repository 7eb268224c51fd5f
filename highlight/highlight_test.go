package highlight_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/highlight"
)

// text is what the spans of a line cover, class by class.
func classes(line string, spans []highlight.Span) map[string]string {
	r := []rune(line)
	out := map[string]string{}
	for _, s := range spans {
		out[string(r[s.Start:s.End])] = s.Class
	}
	return out
}

func TestLinesGo(t *testing.T) {
	src := "package main\n\n/* one\n   two */\nfunc Hé() string { return \"ünï\" }\n"
	lines := highlight.Lines("cmd/x/main.go", []byte(src))
	require.Len(t, lines, 5)
	text := strings.Split(src, "\n")
	assert.Equal(t, "k", classes(text[0], lines[0])["package"][:1], "a keyword")
	assert.Nil(t, lines[1], "an empty line has no spans")
	assert.Equal(t, "cm", classes(text[3], lines[3])["   two */"], "the second line of a block comment is a comment")
	got := classes(text[4], lines[4])
	assert.Equal(t, "kd", got["func"])
	assert.Equal(t, "s", got[`"ünï"`][:1], "a string, counted in code points past non-ASCII")
	for i, l := range lines {
		for _, s := range l {
			assert.True(t, s.Start < s.End && s.End <= len([]rune(text[i])), "line %d: %+v", i, s)
		}
	}
}

func TestLinesPlain(t *testing.T) {
	assert.Nil(t, highlight.Lines("notes.unknownext", []byte("func x\n")), "no lexer")
	assert.Nil(t, highlight.Lines("a.go", []byte("\xff\xfe\n")), "not UTF-8")
	big := strings.Repeat("var x = 1\n", highlight.MaxFileBytes/10+1)
	assert.Nil(t, highlight.Lines("a.go", []byte(big)), "over the size limit")
	assert.False(t, highlight.Known("notes.unknownext"))
	assert.True(t, highlight.Known("a/b/c.py"))
}

// TestMatchAsChroma: the remembered lookup picks the lexer chroma's own
// lookup picks, for names that share what follows their first dot and
// names only a pattern of their own matches.
func TestMatchAsChroma(t *testing.T) {
	for _, name := range []string{"a.go", "b.go", "x_test.go", "a.py", "b.pyi", "Makefile", "GNUmakefile", "x.mk", "Dockerfile",
		"Dockerfile.dev", "a.d.ts", "b.ts", "c.tsx", "CMakeLists.txt", "notes.txt", "a.tar.gz", "x.go.orig", "README", ".bashrc",
		"a.json", "b.json", "a.yaml", "a.yml", "a.rs", "a.c", "a.h", "a.js", "a.mjs", "a.sql", "a.sh", "a.html", "a.css"} {
		want, got := highlight.ChromaName(name), highlight.MatchName(name)
		assert.Equal(t, want, got, name)
		assert.Equal(t, want, highlight.MatchName(name), name+" again, remembered")
	}
}

// TestLinesConcurrent: the remembered lookups are shared by concurrent
// requests.
func TestLinesConcurrent(t *testing.T) {
	names := []string{"a.go", "b.py", "c.rs", "Makefile", "d.ts", "e.d.ts", "f.txt"}
	done := make(chan [][]highlight.Span, 8*len(names))
	for range 8 {
		for _, n := range names {
			go func() { done <- highlight.Lines(n, []byte("x = 1\n")) }()
		}
	}
	for range 8 * len(names) {
		<-done
	}
	assert.Equal(t, highlight.ChromaName("e.d.ts"), highlight.MatchName("e.d.ts"))
	assert.NotNil(t, highlight.Lines("b.py", []byte("x = 1\n")))
}
