package graph_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/graph"
)

func TestSymbolsOfStdlibSource(t *testing.T) {
	f := graph.ParseGo(gitstore.ZeroOID, []byte(stdlib(t, "strings/reader.go")))
	require.Empty(t, f.Err)
	var names []string
	for _, s := range f.Symbols {
		names = append(names, s.String())
	}
	assert.Contains(t, names, "type Reader")
	assert.Contains(t, names, "method (Reader).ReadRune")
	assert.Contains(t, names, "func NewReader")
	s, ok := f.Lookup(parseKey("method (Reader).Len"))
	require.True(t, ok)
	assert.Less(t, s.StartLine, s.EndLine)

	// Grouped declarations: each name is its own symbol.
	f = graph.ParseGo(gitstore.ZeroOID, []byte("package p\n\nconst (\n\tA = iota\n\tB\n)\n\nvar x, y = 1, 2\n\nfunc init() {}\nfunc init() {}\n\ntype G[T any] struct{}\n\nfunc (g *G[T]) M() {}\n"))
	require.Empty(t, f.Err)
	names = nil
	for _, s := range f.Symbols {
		names = append(names, s.String())
	}
	assert.Equal(t, []string{"const A", "const B", "var x", "var y", "func init", "func init#2", "type G", "method (G).M"}, names)
}

// The three cases of the issue, on real source, each through the engine:
// a body edit, a method rename, and a parse error.
func TestSessionDeltaOnStdlibSource(t *testing.T) {
	e := newEnv(t)
	const p = "bufio/scan.go"

	t.Run("body edit modifies exactly that function", func(t *testing.T) {
		s := e.create("a")
		e.edit(s.ID, p, "func dropCR(data []byte) []byte {\n", "func dropCR(data []byte) []byte {\n\t// Windows line endings.\n")
		d := e.delta(s.ID)[p]
		assert.Equal(t, "modified", d.Status)
		assert.Equal(t, keys("func dropCR"), d.Modified)
		assert.Empty(t, d.Added)
		assert.Empty(t, d.Removed)
		assert.Empty(t, d.ParseError)
	})

	t.Run("method rename is one removed and one added", func(t *testing.T) {
		s := e.create("b")
		e.edit(s.ID, p, "func (s *Scanner) Buffer(", "func (s *Scanner) SetBuffer(")
		d := e.delta(s.ID)[p]
		assert.Equal(t, keys("method (Scanner).SetBuffer"), d.Added)
		assert.Equal(t, keys("method (Scanner).Buffer"), d.Removed)
		assert.Empty(t, d.Modified)
	})

	t.Run("parse error keeps the previous symbols and says why", func(t *testing.T) {
		s := e.create("c")
		e.edit(s.ID, p, "func isSpace(r rune) bool {\n", "func isSpace(r rune) bool {\n\t// Unicode spaces.\n")
		before, err := e.g.Lookup(t.Context(), s.ID, p)
		require.NoError(t, err)
		e.write(s.ID, p, e.read(s.ID, p)+"\nfunc broken( {\n")
		after, err := e.g.Lookup(t.Context(), s.ID, p)
		require.NoError(t, err)
		assert.True(t, after.Changed)
		assert.Contains(t, after.ParseError, "expected")
		assert.Same(t, before.File, after.File, "the symbols of the last version that parsed")
		assert.Equal(t, keys("func isSpace"), after.Changes.Modified)
		d := e.delta(s.ID)[p]
		assert.NotEmpty(t, d.ParseError)
		assert.Equal(t, keys("func isSpace"), d.Modified)

		// Fixed again: the new version's symbols, no reason.
		e.edit(s.ID, p, "\nfunc broken( {\n", "\nfunc fixed() {}\n")
		d = e.delta(s.ID)[p]
		assert.Empty(t, d.ParseError)
		assert.Equal(t, keys("func fixed"), d.Added)
		assert.Equal(t, keys("func isSpace"), d.Modified)
	})

	t.Run("lookups fall through to the base index", func(t *testing.T) {
		s := e.create("d")
		e.write(s.ID, "README", "changed\n")
		f, err := e.g.Lookup(t.Context(), s.ID, "sort/sort.go")
		require.NoError(t, err)
		assert.False(t, f.Changed)
		require.NotNil(t, f.File)
		_, ok := f.File.Lookup(parseKey("func Sort"))
		assert.True(t, ok)
		assert.Contains(t, e.delta(s.ID), "README")
		assert.Empty(t, e.delta(s.ID)["README"].Lang)
	})

	t.Run("delete, write back and rollback keep the delta exact", func(t *testing.T) {
		s := e.create("e")
		orig := e.read(s.ID, p)
		e.edit(s.ID, p, "func dropCR(data []byte) []byte {\n", "func dropCR(data []byte) []byte {\n\t// x\n")
		cp, err := e.m.Checkpoint(t.Context(), s.ID, "one", "")
		require.NoError(t, err)
		_, err = e.m.Delete(t.Context(), s.ID, "strings/reader.go", false, "e")
		require.NoError(t, err)
		d := e.delta(s.ID)["strings/reader.go"]
		assert.Equal(t, "deleted", d.Status)
		assert.Contains(t, d.Removed, parseKey("method (Reader).Len"))
		assert.Empty(t, d.Added)

		_, _, err = e.m.Rollback(t.Context(), s.ID, cp.ID.String(), "e")
		require.NoError(t, err)
		assert.NotContains(t, e.delta(s.ID), "strings/reader.go")
		assert.Equal(t, keys("func dropCR"), e.delta(s.ID)[p].Modified)

		e.write(s.ID, p, orig)
		assert.Empty(t, e.delta(s.ID))
	})
}

func TestSummary(t *testing.T) {
	e := newEnv(t)
	s := e.create("a")
	e.edit(s.ID, "bufio/scan.go", "func (s *Scanner) Buffer(", "func (s *Scanner) SetBuffer(")
	e.edit(s.ID, "sort/sort.go", "func Sort(data Interface) {\n", "func Sort(data Interface) {\n\t// sorted\n")
	e.write(s.ID, "limits.go", "package bufio\n\n// Limits bound a scan.\ntype Limits struct{ Max int }\n")
	e.write(s.ID, "bad.go", "package bufio\nfunc (\n")
	e.write(s.ID, "README", "bye\n")
	_, err := e.m.Delete(t.Context(), s.ID, "strings/reader.go", false, "a")
	require.NoError(t, err)

	tree, base, err := e.m.Tree(t.Context(), s.ID)
	require.NoError(t, err)
	repo, err := e.en.Repos.Open(t.Context(), "r")
	require.NoError(t, err)
	sum, err := e.g.Summary(t.Context(), repo, base, tree)
	require.NoError(t, err)
	byPath := map[string]graph.FileSummary{}
	var order []string
	for _, f := range sum.Files {
		byPath[f.Path] = f
		order = append(order, f.Path)
	}
	assert.Equal(t, []string{"README", "bad.go", "bufio/scan.go", "limits.go", "sort/sort.go", "strings/reader.go"}, order)
	assert.Equal(t, "added", byPath["limits.go"].Status)
	assert.Equal(t, keys("type Limits"), byPath["limits.go"].Added)
	assert.Equal(t, keys("method (Scanner).SetBuffer"), byPath["bufio/scan.go"].Added)
	assert.Equal(t, keys("method (Scanner).Buffer"), byPath["bufio/scan.go"].Removed)
	assert.Equal(t, keys("func Sort"), byPath["sort/sort.go"].Modified)
	assert.Equal(t, "deleted", byPath["strings/reader.go"].Status)
	assert.Contains(t, byPath["strings/reader.go"].Removed, parseKey("type Reader"))
	assert.NotEmpty(t, byPath["bad.go"].ParseError)
	assert.Empty(t, byPath["README"].Lang)
	assert.Equal(t, "modified", byPath["README"].Status)

	// Commits stand for their trees.
	cp, err := e.m.Checkpoint(t.Context(), s.ID, "", "")
	require.NoError(t, err)
	byCommit, err := e.g.Summary(t.Context(), repo, e.oid("main"), cp.Commit)
	require.NoError(t, err)
	assert.Equal(t, sum, byCommit)

	// The session's incremental delta agrees with the summary of its trees.
	for p, d := range e.delta(s.ID) {
		assert.Equal(t, byPath[p].SymbolChanges, d.SymbolChanges, p)
	}
}
