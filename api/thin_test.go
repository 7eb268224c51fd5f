package api

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// composes are the handlers allowed more than one engine call, each with
// why the composition belongs at the edge. Keep it short: a new entry is
// a sign the engine lacks a method.
var composes = map[string]string{
	"createRepo":    "Init, Register or RegisterOrigin, whichever the request asks for: one call at run time",
	"sessionEvents": "looks the session up (404, and the repository the log is filtered by), then lists the log (JSON) or subscribes to it (a stream)",
	"repoEvents":    "looks the repository up (404, and its name), then subscribes to the log",
	"readyz":        "the readiness probe reports on every part: the store, each repository, what a write found full",
	"createSession": "creates the session, then (prepare: true) builds its environment layer: two steps a client may also take apart",
}

// engineCalls lists, for each method of *Server, the engine calls it makes
// (s.<field>.<Method>(…), where the field's type is an engine's, such as
// s.m.Write or s.cs.View), itself or through the *Server methods it calls.
func engineCalls(t *testing.T) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	engine := map[string]bool{} // fields of Server that hold an engine
	direct := map[string][]string{}
	calls := map[string][]string{} // method → *Server methods it calls
	var parsed []*ast.File
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		parsed = append(parsed, f)
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || ts.Name.Name != "Server" {
				return true
			}
			for _, fl := range ts.Type.(*ast.StructType).Fields.List {
				// *pkg.T from another package of the module: an engine.
				if st, ok := fl.Type.(*ast.StarExpr); ok {
					if sel, ok := st.X.(*ast.SelectorExpr); ok && slices.Contains(enginePackages, fmt.Sprint(sel.X)) {
						for _, n := range fl.Names {
							engine[n.Name] = true
						}
					}
				}
			}
			return false
		})
	}
	require.NotEmpty(t, engine, "no engine fields found in Server")
	for _, f := range parsed {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || fd.Body == nil || len(fd.Recv.List[0].Names) == 0 {
				continue
			}
			if st, ok := fd.Recv.List[0].Type.(*ast.StarExpr); !ok || fmt.Sprint(st.X) != "Server" {
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
				case *ast.SelectorExpr: // s.field.Method(…)
					if id, ok := x.X.(*ast.Ident); ok && id.Name == recv && engine[x.Sel.Name] {
						direct[fd.Name.Name] = append(direct[fd.Name.Name], x.Sel.Name+"."+sel.Sel.Name)
					}
				case *ast.Ident: // s.method(…)
					if x.Name == recv {
						calls[fd.Name.Name] = append(calls[fd.Name.Name], sel.Sel.Name)
					}
				}
				return true
			})
		}
	}
	out := map[string][]string{}
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
	for fn := range direct {
		out[fn] = walk(fn, map[string]bool{})
	}
	for fn := range calls {
		out[fn] = walk(fn, map[string]bool{})
	}
	return out
}

// enginePackages are the packages whose types are the engines a Server is
// handed.
var enginePackages = []string{"session", "changeset", "repos", "events", "graph", "gitstore", "merge", "workdir", "cluster"}

// handlerName is the method a route's handler is, e.g. "edits".
func handlerName(rt Route) string {
	full := runtime.FuncForPC(reflect.ValueOf(rt.handle).Pointer()).Name()
	return strings.TrimSuffix(full[strings.LastIndex(full, ".")+1:], "-fm")
}

// TestHandlersCallOneEngineMethod: package doc's rule, checked on the
// source: every route's handler makes at most one engine call, itself or
// through the Server's helpers (composes lists the exceptions and why).
func TestHandlersCallOneEngineMethod(t *testing.T) {
	calls := engineCalls(t)
	checked := 0
	for _, rt := range Routes() {
		name := handlerName(rt)
		got := calls[name]
		checked++
		if why, ok := composes[name]; ok {
			assert.Greater(t, len(got), 1, "%s %s (%s) is allowed to compose (%s) but makes %d engine call(s): drop it from composes", rt.Method, rt.Pattern, name, why, len(got))
			continue
		}
		assert.LessOrEqual(t, len(got), 1, "%s %s: handler %s calls %v; one engine method per handler (move the composition into the engine)", rt.Method, rt.Pattern, name, got)
	}
	assert.Equal(t, len(Routes()), checked)
	// The check sees engine calls at all.
	assert.Equal(t, []string{"m.Edits"}, calls["edits"])
}
