package mcpserver

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// composes are the tools whose handler makes more than one Backend call,
// each with why. Keep it short: a new entry is a sign the engine (the
// API) lacks an operation.
var composes = map[string]string{
	"editFile": "reads the file it edits, then writes conditionally on that version (its diff comes with the write)",
	"status":   "a report over the session, its changed paths, its checkpoints and the overlap events",
	"log":      "the session's count of mutations, then the latest of them",
	"listDir":  "one listing per directory shown, to the depth asked, and the deletions: the tree route has no depth",
}

// TestToolsCallOneBackendMethod: a tool handler is as thin as an HTTP
// handler: it makes one Backend call (itself or through the server's
// helpers), composes lists the exceptions.
func TestToolsCallOneBackendMethod(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	direct := map[string][]string{} // method of *server → its s.b.X calls
	calls := map[string][]string{}  // method of *server → methods of *server it calls
	var handlers []string           // the methods addTool registers
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var fn ast.Expr = call.Fun
			switch x := fn.(type) {
			case *ast.IndexExpr:
				fn = x.X
			case *ast.IndexListExpr:
				fn = x.X
			}
			if id, ok := fn.(*ast.Ident); ok && id.Name == "addTool" {
				if sel, ok := call.Args[len(call.Args)-1].(*ast.SelectorExpr); ok {
					handlers = append(handlers, sel.Sel.Name)
				}
			}
			return true
		})
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || fd.Body == nil || len(fd.Recv.List[0].Names) == 0 {
				continue
			}
			if st, ok := fd.Recv.List[0].Type.(*ast.StarExpr); !ok || fmt.Sprint(st.X) != "server" {
				continue
			}
			recv := fd.Recv.List[0].Names[0].Name
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				switch x := sel.X.(type) {
				case *ast.SelectorExpr: // s.b.Method(…)
					if id, ok := x.X.(*ast.Ident); ok && id.Name == recv && x.Sel.Name == "b" {
						direct[fd.Name.Name] = append(direct[fd.Name.Name], sel.Sel.Name)
					}
				case *ast.Ident: // s.helper(…)
					if x.Name == recv {
						calls[fd.Name.Name] = append(calls[fd.Name.Name], sel.Sel.Name)
					}
				}
				return true
			})
		}
	}
	var walk func(fn string, seen map[string]bool) []string
	walk = func(fn string, seen map[string]bool) []string {
		if seen[fn] {
			return nil
		}
		seen[fn] = true
		got := slices.Clone(direct[fn])
		for _, c := range calls[fn] {
			got = append(got, walk(c, seen)...)
		}
		return got
	}
	require.Len(t, handlers, len(ToolNames()), "every tool's handler found")
	for _, h := range handlers {
		got := walk(h, map[string]bool{})
		assert.NotEmpty(t, got, "handler %s calls no Backend method", h)
		if why, ok := composes[h]; ok {
			assert.Greater(t, len(got), 1, "%s may compose (%s) but calls %v: drop it from composes", h, why, got)
			continue
		}
		assert.Len(t, got, 1, "handler %s calls %v; one Backend call per tool", h, got)
	}
	assert.Equal(t, []string{"Search"}, walk("grep", map[string]bool{}), "grep reads no file for its context")
}
