package graph

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"hash/fnv"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/sessiond/sessiond/gitstore"
)

// Kind is what sort of code symbol a Symbol is.
type Kind string

// Symbol kinds of Go source.
const (
	KindFunc   Kind = "func"
	KindMethod Kind = "method"
	KindType   Kind = "type"
	KindConst  Kind = "const"
	KindVar    Kind = "var"
)

// Key names a symbol within one file: kind, receiver and name. Two versions
// of a file hold "the same symbol" when their keys are equal.
type Key struct {
	Kind Kind `json:"kind"`
	// Receiver is a method's receiver type without pointer or type
	// parameters ("Reader" for (r *Reader[T])); empty otherwise.
	Receiver string `json:"receiver,omitempty"`
	// Name is the identifier; a second declaration of one name in a file
	// (init, _) is "init#2".
	Name string `json:"name"`
}

// String is the key as a reader writes it: "func Parse", "method
// (Reader).Close", "type Limits".
func (k Key) String() string {
	if k.Kind == KindMethod {
		return "method (" + k.Receiver + ")." + k.Name
	}
	return string(k.Kind) + " " + k.Name
}

func (k Key) compare(o Key) int {
	return cmp.Or(strings.Compare(k.Receiver, o.Receiver), strings.Compare(k.Name, o.Name), strings.Compare(string(k.Kind), string(o.Kind)))
}

// Symbol is one package-level declaration of a file.
type Symbol struct {
	Key
	// StartLine and EndLine are the 1-based lines of the declaration, doc
	// comment included; Start and End its byte offsets.
	StartLine int `json:"start_line"`
	EndLine   int `json:"end_line"`
	Start     int `json:"-"`
	End       int `json:"-"`
	// hash is of the declaration's source text: equal keys with different
	// hashes are a modified symbol.
	hash uint64
}

// File is what the index knows of one blob: its language, its symbols in
// source order, or why they could not be read. Files are shared by every
// index and session that meets the blob and must not be modified.
type File struct {
	Blob gitstore.OID `json:"blob"`
	// Lang is "go" for Go source, empty for files the index has no parser
	// for.
	Lang    string   `json:"lang,omitempty"`
	Symbols []Symbol `json:"symbols,omitempty"`
	// Err says why the file could not be parsed; Symbols is then empty.
	Err string `json:"error,omitempty"`
}

// Parsed reports whether f holds the symbols of its blob.
func (f *File) Parsed() bool { return f != nil && f.Lang != "" && f.Err == "" }

// Lookup returns the symbol with key k.
func (f *File) Lookup(k Key) (Symbol, bool) {
	if f == nil {
		return Symbol{}, false
	}
	for _, s := range f.Symbols {
		if s.Key == k {
			return s, true
		}
	}
	return Symbol{}, false
}

// langOf says which parser reads the file at p; "" for none.
func langOf(p string) string {
	if path.Ext(p) == ".go" {
		return "go"
	}
	return ""
}

// maxParseBytes bounds the files the index parses: larger Go files are
// generated code nobody edits by hand, and parsing them under a session's
// lock would cost more than the early warning is worth.
const maxParseBytes = 4 << 20

// parseFile reads the symbols of blob id with content data in language
// lang. It never fails: what it cannot read it says in File.Err.
func parseFile(id gitstore.OID, lang string, data []byte) *File {
	f := &File{Blob: id, Lang: lang}
	switch {
	case lang == "":
	case len(data) > maxParseBytes:
		f.Err = fmt.Sprintf("file of %d bytes is over the parse limit of %d", len(data), maxParseBytes)
	case lang == "go":
		f.Symbols, f.Err = goSymbols(data)
	}
	return f
}

// goSymbols lists the package-level declarations of Go source. On a syntax
// error it returns no symbols and the first error: a partial tree would
// report symbols as removed that are only unreadable.
func goSymbols(src []byte) ([]Symbol, string) {
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, "", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err.Error() // the first error, and how many more
	}
	tf := fset.File(af.Pos())
	var syms []Symbol
	seen := map[Key]int{}
	add := func(k Key, from, to token.Pos) {
		if seen[k]++; seen[k] > 1 {
			k.Name += "#" + strconv.Itoa(seen[k])
		}
		start, end := tf.Offset(from), tf.Offset(to)
		h := fnv.New64a()
		h.Write(src[start:end])
		syms = append(syms, Symbol{Key: k, Start: start, End: end,
			StartLine: tf.Line(from), EndLine: tf.Line(to), hash: h.Sum64()})
	}
	for _, d := range af.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			from := d.Pos()
			if d.Doc != nil {
				from = d.Doc.Pos()
			}
			k := Key{Kind: KindFunc, Name: d.Name.Name}
			if d.Recv != nil && len(d.Recv.List) > 0 {
				k.Kind, k.Receiver = KindMethod, receiverName(d.Recv.List[0].Type)
			}
			add(k, from, d.End())
		case *ast.GenDecl:
			kind := map[token.Token]Kind{token.TYPE: KindType, token.CONST: KindConst, token.VAR: KindVar}[d.Tok]
			if kind == "" {
				continue // imports
			}
			for _, spec := range d.Specs {
				from, to := spec.Pos(), spec.End()
				// A lone spec owns its keyword and doc comment; in a group
				// each spec's span is its own.
				if !d.Lparen.IsValid() {
					from, to = d.Pos(), d.End()
					if d.Doc != nil {
						from = d.Doc.Pos()
					}
				}
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if d.Lparen.IsValid() && s.Doc != nil {
						from = s.Doc.Pos()
					}
					add(Key{Kind: kind, Name: s.Name.Name}, from, to)
				case *ast.ValueSpec:
					if d.Lparen.IsValid() && s.Doc != nil {
						from = s.Doc.Pos()
					}
					for _, n := range s.Names {
						add(Key{Kind: kind, Name: n.Name}, from, to)
					}
				}
			}
		}
	}
	return syms, ""
}

// receiverName is the receiver's type name without pointer and type
// parameters.
func receiverName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return "?" // not valid Go; the type checker would reject it
		}
	}
}

// SymbolChanges is how one file's symbols differ between two versions.
type SymbolChanges struct {
	Added    []Key `json:"added,omitempty"`
	Modified []Key `json:"modified,omitempty"`
	Removed  []Key `json:"removed,omitempty"`
}

// Empty reports whether no symbol changed.
func (c SymbolChanges) Empty() bool {
	return len(c.Added) == 0 && len(c.Modified) == 0 && len(c.Removed) == 0
}

// Keys returns every key that changed, sorted.
func (c SymbolChanges) Keys() []Key {
	out := slices.Concat(c.Added, c.Modified, c.Removed)
	slices.SortFunc(out, Key.compare)
	return out
}

// DiffSymbols compares the symbols of two versions of a file; nil stands
// for a version without symbols (absent, or not parsed). A symbol is
// modified when its key is on both sides with different source text: moving
// a declaration without changing it is no change.
func DiffSymbols(old, new *File) SymbolChanges {
	var c SymbolChanges
	before := map[Key]uint64{}
	if old != nil {
		for _, s := range old.Symbols {
			before[s.Key] = s.hash
		}
	}
	if new != nil {
		for _, s := range new.Symbols {
			h, ok := before[s.Key]
			switch {
			case !ok:
				c.Added = append(c.Added, s.Key)
			case h != s.hash:
				c.Modified = append(c.Modified, s.Key)
			}
			delete(before, s.Key)
		}
	}
	if old != nil {
		for _, s := range old.Symbols {
			if _, ok := before[s.Key]; ok {
				c.Removed = append(c.Removed, s.Key)
			}
		}
	}
	return c
}

// ParseGo reads the symbols of Go source src, the content of blob id.
func ParseGo(id gitstore.OID, src []byte) *File { return parseFile(id, "go", src) }
