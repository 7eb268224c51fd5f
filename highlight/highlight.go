package highlight

import (
	"path"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
)

// MaxFileBytes is the largest text highlighted; a larger file is left
// plain.
const MaxFileBytes = 256 << 10

// MaxPatchBytes bounds the text highlighted for one patch; files past it
// are left plain.
const MaxPatchBytes = 4 << 20

// Span is a token of one line: characters [Start, End) (counted in
// Unicode code points, without the line's newline) of class Class.
type Span struct {
	Start int    `json:"start"`
	End   int    `json:"end"`
	Class string `json:"class"`
}

// Known reports whether chroma has a lexer for the file name.
func Known(name string) bool {
	return lexer(name) != nil
}

func lexer(name string) chroma.Lexer {
	l := match(path.Base(name))
	if l == nil {
		return nil
	}
	return chroma.Coalesce(l)
}

// match is lexers.Match, which tries every pattern of every lexer (about
// 2 ms a name), remembered by what follows the first dot of the name:
// the patterns "*.x" match alike all names "stem.<that>" (stem without
// dots), so only the other patterns ("Makefile", "*.d.ts", "Dockerfile.*",
// …) are tried name by name, and a name one of them matches is looked up
// in full.
func match(base string) chroma.Lexer {
	patternsOnce.Do(loadPatterns)
	stem, key, ok := strings.Cut(base, ".")
	if !ok || stem == "" || key == "" || otherMatch(base) {
		return lexers.Match(base)
	}
	if l, ok := byKey.Load(key); ok {
		return l.(entry).lexer
	}
	synthetic := "\x01." + key
	if otherMatch(synthetic) {
		return lexers.Match(base)
	}
	l := lexers.Match(synthetic)
	byKey.Store(key, entry{l})
	return l
}

type entry struct{ lexer chroma.Lexer }

var (
	patternsOnce sync.Once
	others       []string // the patterns that are not "*.x"
	byKey        sync.Map // what follows the first dot → entry
)

func loadPatterns() {
	for _, l := range lexers.GlobalLexerRegistry.Lexers {
		cfg := l.Config()
		for _, g := range append(append([]string(nil), cfg.Filenames...), cfg.AliasFilenames...) {
			if rest, ok := strings.CutPrefix(g, "*."); ok && !strings.ContainsAny(rest, "*?[\\.") {
				continue
			}
			others = append(others, g)
		}
	}
}

// otherMatch reports whether one of the other patterns matches name, or
// name without its last extension (chroma also matches a pattern
// followed by a suffix such as .in or .orig).
func otherMatch(name string) bool {
	trimmed := strings.TrimSuffix(name, path.Ext(name))
	for _, g := range others {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
		if ok, _ := path.Match(g, trimmed); ok && trimmed != name {
			return true
		}
	}
	return false
}

// Lines lexes src as the file name says and returns the spans of each
// of its lines (nil for a line without tokens worth a class). It returns
// nil when no lexer knows the name, src is over MaxFileBytes or is not
// UTF-8, or the lexer's tokens do not give back src exactly.
func Lines(name string, src []byte) [][]Span {
	if len(src) == 0 || len(src) > MaxFileBytes || !utf8.Valid(src) {
		return nil
	}
	l := lexer(name)
	if l == nil {
		return nil
	}
	text := string(src)
	it, err := l.Tokenise(nil, text)
	if err != nil {
		return nil
	}
	var out [][]Span
	var line []Span
	var b strings.Builder // the text given back, to check against src
	col := 0
	flush := func() {
		out = append(out, line)
		line, col = nil, 0
	}
	for t := it(); t != chroma.EOF; t = it() {
		v := t.Value
		b.WriteString(v)
		for v != "" {
			part, rest, nl := strings.Cut(v, "\n")
			n := utf8.RuneCountInString(part)
			if c := class(t.Type); c != "" && n > 0 {
				if k := len(line); k > 0 && line[k-1].Class == c && line[k-1].End == col {
					line[k-1].End += n
				} else {
					line = append(line, Span{Start: col, End: col + n, Class: c})
				}
			}
			col += n
			if !nl {
				break
			}
			flush()
			v = rest
		}
	}
	// A lexer may add a final newline (chroma's EnsureNL); anything else
	// that differs means the spans would not fit the text.
	got := b.String()
	if got != text && got != text+"\n" {
		return nil
	}
	if col > 0 || len(line) > 0 {
		flush()
	}
	return out
}

// class is the short name of t, or of its nearest parent that has one;
// "" for plain text, whitespace and errors.
func class(t chroma.TokenType) string {
	switch t.Category() {
	case chroma.Text, chroma.Error:
		return ""
	}
	if t == chroma.TextWhitespace || t == chroma.Other {
		return ""
	}
	for ; t != 0; t = t.Parent() {
		if c, ok := chroma.StandardTypes[t]; ok && c != "" {
			return c
		}
	}
	return ""
}
