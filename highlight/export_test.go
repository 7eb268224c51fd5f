package highlight

import "github.com/alecthomas/chroma/v2/lexers"

// ChromaName is the name of the lexer chroma's own lookup picks.
func ChromaName(name string) string {
	if l := lexers.Match(name); l != nil {
		return l.Config().Name
	}
	return ""
}

// MatchName is the name of the lexer match picks.
func MatchName(name string) string {
	if l := match(name); l != nil {
		return l.Config().Name
	}
	return ""
}
