// Package highlight owns syntax highlighting of a diff's lines: it lexes
// a file's whole text with chroma (the lexer chosen by its file name) and
// gives each line its tokens as spans of characters with a class name
// (chroma's short names: "k" a keyword, "s2" a double-quoted string, "c1"
// a comment, …). Nothing here renders markup: a client builds its own
// elements from the spans, so highlighting never executes anything.
//
// The work is bounded: a file over MaxFileBytes, or a patch past
// MaxPatchBytes of highlighted text, is left plain; lexing is one pass
// over the text.
package highlight
