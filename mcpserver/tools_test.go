package mcpserver_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/mcpserver"
)

func TestToolList(t *testing.T) {
	plainRunOnly(t, "the tools' list, a fixed table")
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{})
	for _, bound := range []bool{true, false} {
		t.Run(fmt.Sprintf("bound=%v", bound), func(t *testing.T) {
			var cs *mcp.ClientSession
			if bound {
				cs = e.connect(t, s, mcpserver.Options{})
			} else {
				cs = connectServer(t, mcpserver.New(e.admin, mcpserver.Options{}), nil)
			}
			res, err := cs.ListTools(t.Context(), nil)
			require.NoError(t, err)
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				assert.NotEmpty(t, tool.Title, tool.Name)
				assert.NotEmpty(t, tool.Description, tool.Name)
				require.NotNil(t, tool.Annotations, tool.Name)
				assert.NotEmpty(t, tool.Annotations.Title, tool.Name)
				if !tool.Annotations.ReadOnlyHint {
					assert.NotNil(t, tool.Annotations.DestructiveHint, "%s: a tool that writes says whether it destroys", tool.Name)
				}
				schema := tool.InputSchema.(map[string]any)
				props, _ := schema["properties"].(map[string]any)
				assertDescribed(t, tool.Name, props)
				req, _ := schema["required"].([]any)
				if bound {
					assert.NotContains(t, props, "session", tool.Name)
				} else {
					assert.Contains(t, props, "session", tool.Name)
					assert.Contains(t, req, "session", tool.Name)
				}
			}
			assert.ElementsMatch(t, mcpserver.ToolNames(), names)
			assert.Len(t, names, len(mcpserver.ToolNames()))
		})
	}
	// The annotations say what each tool does to the session.
	cs := e.connect(t, s, mcpserver.Options{})
	res, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	ann := map[string]*mcp.ToolAnnotations{}
	for _, tool := range res.Tools {
		ann[tool.Name] = tool.Annotations
	}
	for _, n := range []string{"read_file", "read_files", "list_dir", "glob", "grep", "diff", "status", "log"} {
		assert.True(t, ann[n].ReadOnlyHint, n)
	}
	for _, n := range []string{"write_file", "edit_file", "delete_path", "move_path", "rollback", "run"} {
		assert.False(t, ann[n].ReadOnlyHint, n)
		assert.True(t, *ann[n].DestructiveHint, n)
	}
	for _, n := range []string{"checkpoint", "submit"} {
		assert.False(t, *ann[n].DestructiveHint, n)
	}
	assert.True(t, ann["write_file"].IdempotentHint)
	assert.False(t, ann["edit_file"].IdempotentHint)
}

// assertDescribed checks that every property of a schema, and of the
// objects it nests (edit_file's edits), has a description for the model.
func assertDescribed(t *testing.T, at string, props map[string]any) {
	t.Helper()
	for name, p := range props {
		ps := p.(map[string]any)
		d, _ := ps["description"].(string)
		assert.NotEmpty(t, d, "%s.%s has no description", at, name)
		if items, ok := ps["items"].(map[string]any); ok {
			ps = items
		}
		if nested, ok := ps["properties"].(map[string]any); ok {
			assertDescribed(t, at+"."+name, nested)
		}
	}
}

func TestSchemasAreJSONSchema(t *testing.T) {
	plainRunOnly(t, "the tools' schemas, a fixed table")
	e := newEnv(t)
	cs := e.connect(t, e.newSession(t, apitypes.CreateSessionRequest{}), mcpserver.Options{})
	res, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	for _, tool := range res.Tools {
		raw, err := jsonMarshal(tool.InputSchema)
		require.NoError(t, err)
		var s jsonschema.Schema
		require.NoError(t, s.UnmarshalJSON(raw), tool.Name)
		_, err = s.Resolve(nil)
		require.NoError(t, err, tool.Name)
	}
}

func TestReadFile(t *testing.T) {
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{})
	sid := s.ID
	cs := e.connect(t, s, mcpserver.Options{})

	text, data := ok(t, cs, "read_file", map[string]any{"path": "calc.go"})
	blob := strings.TrimSpace(testrepo.Git(t, e.repoDir, "rev-parse", "HEAD:calc.go"))
	assert.Equal(t, blob, data["etag"], "the ETag is git's blob id")
	assert.Contains(t, text, "calc.go: 11 lines, ETag "+blob)
	assert.Contains(t, text, "     4\tfunc Add(a, b int) int {\n")
	assert.EqualValues(t, 11, data["total_lines"])
	assert.Equal(t, repoFiles["calc.go"], data["content"])

	t.Run("offset and limit", func(t *testing.T) {
		text, data := ok(t, cs, "read_file", map[string]any{"path": "calc.go", "offset": 4, "limit": 2})
		assert.Contains(t, text, "     4\tfunc Add(a, b int) int {\n     5\t\treturn a - b\n")
		assert.NotContains(t, text, "     6\t")
		assert.Contains(t, text, "call read_file with offset 6 for more")
		assert.EqualValues(t, 6, data["next_offset"])
		assert.EqualValues(t, 2, data["lines"])
	})
	t.Run("default limit of 2000 lines", func(t *testing.T) {
		var long strings.Builder
		for i := 1; i <= 2100; i++ {
			fmt.Fprintf(&long, "%d\n", i)
		}
		_, err := e.admin.WriteFile(t.Context(), sid, "lines.txt", []byte(long.String()), client.WriteOptions{})
		require.NoError(t, err)
		text, data := ok(t, cs, "read_file", map[string]any{"path": "lines.txt"})
		assert.EqualValues(t, 2100, data["total_lines"])
		assert.EqualValues(t, 2000, data["lines"])
		assert.EqualValues(t, 2001, data["next_offset"])
		assert.Contains(t, text, "  2000\t2000\n")
		assert.NotContains(t, text, "  2001\t2001\n")
		assert.Contains(t, text, "[shown lines 1–2000 of 2100; call read_file with offset 2001 for more]")
	})
	t.Run("binary", func(t *testing.T) {
		text, data := ok(t, cs, "read_file", map[string]any{"path": "bin/blob.dat"})
		assert.Contains(t, text, "binary file of 18 bytes (image/png), not shown")
		assert.Equal(t, true, data["binary"])
		assert.NotContains(t, text, "IHDR")
	})
	t.Run("long line", func(t *testing.T) {
		text, data := ok(t, cs, "read_file", map[string]any{"path": "docs/long.txt"})
		assert.Contains(t, text, "[line cut: 2500 characters in all]")
		assert.Contains(t, text, "     3\tend\n")
		assert.Equal(t, []any{2.0}, data["cut_lines"])

		// Characters, not bytes: 1500 two-byte characters are shown
		// whole, 2500 are cut at 2000, on a character boundary.
		wide := strings.Repeat("é", 1500) + "\n" + strings.Repeat("é", 2500) + "\n"
		_, err := e.admin.WriteFile(t.Context(), sid, "wide.txt", []byte(wide), client.WriteOptions{})
		require.NoError(t, err)
		text, data = ok(t, cs, "read_file", map[string]any{"path": "wide.txt"})
		assert.Contains(t, text, "     1\t"+strings.Repeat("é", 1500)+"\n")
		assert.Contains(t, text, "     2\t"+strings.Repeat("é", 2000)+" … [line cut: 2500 characters in all]\n")
		assert.True(t, utf8.ValidString(text))
		assert.Equal(t, []any{2.0}, data["cut_lines"])
	})
	t.Run("line endings and final newline", func(t *testing.T) {
		text, data := ok(t, cs, "read_file", map[string]any{"path": "docs/crlf.txt"})
		assert.Contains(t, text, "CRLF line endings")
		assert.Contains(t, text, "     2\ttwo\n")
		assert.Equal(t, "CRLF", data["line_endings"])
		text, data = ok(t, cs, "read_file", map[string]any{"path": "docs/nofinal.txt"})
		assert.Contains(t, text, "(no newline at the end of the file)")
		assert.Equal(t, true, data["no_final_newline"])
	})
	t.Run("errors", func(t *testing.T) {
		text, code, e := fails(t, cs, "read_file", map[string]any{"path": "../../etc/passwd"})
		assert.Equal(t, "invalid_path", code)
		assert.Equal(t, "hasDotdot", e["rule"])
		assert.Contains(t, text, "Error invalid_path")
		assert.Contains(t, text, "rule: hasDotdot")
		_, code, _ = fails(t, cs, "read_file", map[string]any{"path": "nope.go"})
		assert.Equal(t, "not_found", code)
		_, code, _ = fails(t, cs, "read_file", map[string]any{"path": ""})
		assert.Equal(t, "bad_request", code)
		// Schema validation by the SDK is a tool error too.
		text, isErr, _ := call(t, cs, "read_file", map[string]any{"path": 7})
		assert.True(t, isErr, text)
	})
}

func TestPolicyIsTheEngines(t *testing.T) {
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{Policy: &apitypes.Policy{Read: []string{"**"}, Write: []string{"docs/**"}, Deny: []string{"secrets/**"}}})
	cs := e.connect(t, s, mcpserver.Options{})
	_, code, _ := fails(t, cs, "read_file", map[string]any{"path": "secrets/key.txt"})
	assert.Equal(t, "forbidden", code)
	_, code, _ = fails(t, cs, "write_file", map[string]any{"path": "calc.go", "content": "x"})
	assert.Equal(t, "forbidden", code)
	_, code, _ = fails(t, cs, "edit_file", map[string]any{"path": "calc.go", "dry_run": true,
		"edits": []any{map[string]any{"old_text": "package calc\n\n// Add", "new_text": "package calc\n\n// Plus"}}})
	assert.Equal(t, "forbidden", code, "a dry run is checked by the engine too")
	text, _ := ok(t, cs, "grep", map[string]any{"pattern": "hunter2"})
	assert.Contains(t, text, "No matches", "grep does not reach what the policy hides")
	ok(t, cs, "write_file", map[string]any{"path": "docs/new.md", "content": "ok\n"})
}

func TestReadFiles(t *testing.T) {
	e := newEnv(t)
	cs := e.connect(t, e.newSession(t, apitypes.CreateSessionRequest{}), mcpserver.Options{})
	text, data := ok(t, cs, "read_files", map[string]any{"paths": []string{"go.mod", "missing.txt", "docs/crlf.txt"}})
	assert.Contains(t, text, "go.mod: 3 lines")
	assert.Contains(t, text, "missing.txt: error not_found")
	assert.Contains(t, text, "docs/crlf.txt: 3 lines")
	files := data["files"].([]any)
	require.Len(t, files, 3)
	assert.Equal(t, "not_found", files[1].(map[string]any)["error"].(map[string]any)["code"])
	_, code, _ := fails(t, cs, "read_files", map[string]any{"paths": []string{}})
	assert.Equal(t, "bad_request", code)
}

func TestWriteFile(t *testing.T) {
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{})
	cs := e.connect(t, s, mcpserver.Options{})
	text, data := ok(t, cs, "write_file", map[string]any{"path": "new/dir/file.txt", "content": "hello\n"})
	assert.Contains(t, text, "Wrote new/dir/file.txt: 6 bytes, 1 lines, now added")
	assert.Equal(t, "added", data["status"])
	etag := data["etag"].(string)

	_, code, ed := fails(t, cs, "write_file", map[string]any{"path": "new/dir/file.txt", "content": "x", "if_match": strings.Repeat("0", 40)})
	assert.Equal(t, "precondition_failed", code)
	assert.Equal(t, etag, ed["current"])
	ok(t, cs, "write_file", map[string]any{"path": "new/dir/file.txt", "content": "bye\n", "if_match": etag})
	got, _, err := e.admin.ReadFile(t.Context(), s.ID, "new/dir/file.txt")
	require.NoError(t, err)
	assert.Equal(t, "bye\n", string(got))

	_, code, ed = fails(t, cs, "write_file", map[string]any{"path": "a/.git/config", "content": "x"})
	assert.Equal(t, "invalid_path", code)
	assert.Equal(t, "hasDotgit", ed["rule"])
}

func TestEditFile(t *testing.T) {
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{})
	cs := e.connect(t, s, mcpserver.Options{})
	read := func(p string) string {
		got, _, err := e.admin.ReadFile(t.Context(), s.ID, p)
		require.NoError(t, err)
		return string(got)
	}
	edit := func(old, new string) map[string]any { return map[string]any{"old_text": old, "new_text": new} }

	t.Run("ambiguous", func(t *testing.T) {
		text, code, ed := fails(t, cs, "edit_file", map[string]any{"path": "calc.go", "edits": []any{edit("\treturn a - b\n", "\treturn a + b\n")}})
		assert.Equal(t, "ambiguous_match", code)
		assert.Contains(t, text, "matches 2 times")
		assert.Contains(t, text, "match 1 at line 5:")
		assert.Contains(t, text, "match 2 at line 10:")
		assert.Contains(t, text, "match 1 at line 5:\n      3\t// Add returns a plus b.\n      4\tfunc Add(a, b int) int {\n>     5\t\treturn a - b\n      6\t}\n      7\t\n",
			"two lines of context before and after")
		assert.Contains(t, text, "match 2 at line 10:\n      8\t// Sub returns a minus b.\n      9\tfunc Sub(a, b int) int {\n>    10\t\treturn a - b\n     11\t}\n")
		assert.NotContains(t, text, "      2\t\n", "no more than two lines of context")
		cands := ed["candidates"].([]any)
		require.Len(t, cands, 2)
		assert.EqualValues(t, 5, cands[0].(map[string]any)["line"])
		assert.EqualValues(t, 10, cands[1].(map[string]any)["line"])
		assert.Equal(t, repoFiles["calc.go"], read("calc.go"), "nothing written")
	})
	t.Run("no match with a near-match", func(t *testing.T) {
		text, code, ed := fails(t, cs, "edit_file", map[string]any{"path": "calc.go", "edits": []any{edit("func Add(a, b int) int {\n    return a - b\n}", "x")}})
		assert.Equal(t, "no_match", code)
		assert.Contains(t, text, "The closest text is at line 4 (the same text with different whitespace or indentation)")
		assert.EqualValues(t, 4, ed["near_match"].(map[string]any)["line"])
		text, code, _ = fails(t, cs, "edit_file", map[string]any{"path": "calc.go", "edits": []any{edit("func Ad(a, b int) int {", "x")}})
		assert.Equal(t, "no_match", code)
		assert.Contains(t, text, "% similar):")
		assert.Contains(t, text, ">     4\tfunc Add(a, b int) int {")
		_, code, _ = fails(t, cs, "edit_file", map[string]any{"path": "calc.go", "edits": []any{edit("zzzzqqqq", "x")}})
		assert.Equal(t, "no_match", code)
	})
	t.Run("all or none", func(t *testing.T) {
		_, code, ed := fails(t, cs, "edit_file", map[string]any{"path": "calc.go", "edits": []any{
			edit("// Add returns a plus b.", "// Add adds."), edit("no such text", "x")}})
		assert.Equal(t, "no_match", code)
		assert.EqualValues(t, 2, ed["edit"])
		assert.Equal(t, repoFiles["calc.go"], read("calc.go"), "the first edit is not applied either")
	})
	t.Run("dry run", func(t *testing.T) {
		text, data := ok(t, cs, "edit_file", map[string]any{"path": "calc.go", "dry_run": true, "edits": []any{
			edit("func Add(a, b int) int {\n\treturn a - b", "func Add(a, b int) int {\n\treturn a + b")}})
		assert.Contains(t, text, "Dry run: nothing was written.")
		assert.Contains(t, text, "-\treturn a - b\n+\treturn a + b\n")
		assert.Equal(t, repoFiles["calc.go"], read("calc.go"))
		// The diff applies with git apply to the base.
		testrepo.GitInput(t, e.repoDir, []byte(data["diff"].(string)), "apply", "--check", "-")
	})
	t.Run("precise, replace_all, if_match", func(t *testing.T) {
		_, data := ok(t, cs, "read_file", map[string]any{"path": "calc.go"})
		etag := data["etag"].(string)
		text, data := ok(t, cs, "edit_file", map[string]any{"path": "calc.go", "if_match": etag, "edits": []any{
			edit("// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a - b", "// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a + b"),
			map[string]any{"old_text": "a, b int", "new_text": "x, y int", "replace_all": true}}})
		assert.Contains(t, text, "Edited calc.go: 3 replacement(s)")
		assert.Equal(t, []any{1.0, 2.0}, data["replacements"])
		assert.Contains(t, read("calc.go"), "func Add(x, y int) int {\n\treturn a + b\n}")
		assert.Contains(t, read("calc.go"), "func Sub(x, y int) int {")
		_, code, ed := fails(t, cs, "edit_file", map[string]any{"path": "calc.go", "if_match": etag, "edits": []any{edit("package", "pkg")}})
		assert.Equal(t, "precondition_failed", code)
		assert.Equal(t, data["etag"], ed["current"])
	})
	t.Run("line endings and final newline kept", func(t *testing.T) {
		ok(t, cs, "edit_file", map[string]any{"path": "docs/crlf.txt", "edits": []any{edit("one\ntwo\n", "one\n2\n")}})
		assert.Equal(t, "one\r\n2\r\nthree\r\n", read("docs/crlf.txt"))
		ok(t, cs, "edit_file", map[string]any{"path": "docs/crlf.txt", "edits": []any{edit("three", "three\nfour")}})
		assert.Equal(t, "one\r\n2\r\nthree\r\nfour\r\n", read("docs/crlf.txt"), "added lines get CRLF too")
		ok(t, cs, "edit_file", map[string]any{"path": "docs/nofinal.txt", "edits": []any{edit("beta", "gamma")}})
		assert.Equal(t, "alpha\ngamma", read("docs/nofinal.txt"))
	})
	t.Run("refusals", func(t *testing.T) {
		_, code, _ := fails(t, cs, "edit_file", map[string]any{"path": "bin/blob.dat", "edits": []any{edit("PNG", "GIF")}})
		assert.Equal(t, "bad_request", code)
		_, code, _ = fails(t, cs, "edit_file", map[string]any{"path": "calc.go", "edits": []any{}})
		assert.Equal(t, "bad_request", code)
		_, code, _ = fails(t, cs, "edit_file", map[string]any{"path": "calc.go", "edits": []any{edit("", "x")}})
		assert.Equal(t, "bad_request", code)
		_, code, _ = fails(t, cs, "edit_file", map[string]any{"path": "gone.go", "edits": []any{edit("a", "b")}})
		assert.Equal(t, "not_found", code)
	})
}

func TestDeleteMoveListGlob(t *testing.T) {
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{})
	cs := e.connect(t, s, mcpserver.Options{})
	_, code, _ := fails(t, cs, "delete_path", map[string]any{"path": "docs"})
	assert.NotEmpty(t, code, "a directory needs recursive")
	ok(t, cs, "delete_path", map[string]any{"path": "docs/deep", "recursive": true})
	ok(t, cs, "delete_path", map[string]any{"path": "docs/long.txt"})
	text, _ := ok(t, cs, "move_path", map[string]any{"from": "go.mod", "to": "mod/go.mod"})
	assert.Contains(t, text, "Moved go.mod to mod/go.mod")
	ok(t, cs, "write_file", map[string]any{"path": "calc.go", "content": "package calc\n"})
	_, code, _ = fails(t, cs, "move_path", map[string]any{"from": "calc.go", "to": "calc_test.go"})
	assert.NotEmpty(t, code)

	text, data := ok(t, cs, "list_dir", map[string]any{})
	assert.Contains(t, text, "  calc.go (13 B) [modified]\n")
	assert.Contains(t, text, "  go.mod [deleted]\n")
	assert.Contains(t, text, "  mod/ [added]\n")
	assert.Contains(t, text, "    go.mod (33 B) [added]\n")
	assert.Contains(t, text, "    long.txt [deleted]\n")
	assert.Contains(t, text, "    deep/ [deleted]\n")
	assert.Contains(t, text, "    crlf.txt (17 B)\n")
	entries := data["entries"].([]any)
	assert.NotEmpty(t, entries)
	text, _ = ok(t, cs, "list_dir", map[string]any{"path": "docs", "depth": 1})
	assert.Contains(t, text, "docs (depth 1")
	assert.Contains(t, text, "  crlf.txt (17 B)\n")
	assert.NotContains(t, text, "calc.go")
	_, code, _ = fails(t, cs, "list_dir", map[string]any{"path": "../x"})
	assert.Equal(t, "invalid_path", code)

	text, _ = ok(t, cs, "glob", map[string]any{"pattern": "**/*.txt"})
	assert.Contains(t, text, "docs/crlf.txt\n")
	assert.Contains(t, text, "secrets/key.txt\n")
	assert.NotContains(t, text, "long.txt")
	text, _ = ok(t, cs, "glob", map[string]any{"pattern": "mod/*"})
	assert.Contains(t, text, "mod/go.mod [added]")
	_, code, _ = fails(t, cs, "glob", map[string]any{"pattern": "[bad"})
	assert.Equal(t, "bad_request", code)
}

func TestGrep(t *testing.T) {
	e := newEnv(t)
	cs := e.connect(t, e.newSession(t, apitypes.CreateSessionRequest{}), mcpserver.Options{})
	text, data := ok(t, cs, "grep", map[string]any{"pattern": `return a - b`})
	assert.Contains(t, text, "2 matching line(s) in 1 file(s)")
	assert.Contains(t, text, "calc.go:5: \treturn a - b\n")
	assert.Contains(t, text, "calc.go:10: \treturn a - b\n")
	assert.Equal(t, false, data["truncated"])

	text, data = ok(t, cs, "grep", map[string]any{"pattern": `^func`, "context": 1, "glob": "*.go"})
	assert.Contains(t, text, "calc.go-3- // Add returns a plus b.\ncalc.go:4: func Add(a, b int) int {\ncalc.go-5- \treturn a - b\n")
	m := data["matches"].([]any)[0].(map[string]any)
	assert.Equal(t, []any{"// Add returns a plus b."}, m["before"])

	// Matches next to each other are shown as matches, never as each
	// other's context.
	text, data = ok(t, cs, "grep", map[string]any{"pattern": `Add|return`, "context": 2, "glob": "calc.go"})
	assert.Contains(t, text, "calc.go:3: // Add returns a plus b.\ncalc.go:4: func Add(a, b int) int {\ncalc.go:5: \treturn a - b\ncalc.go-6- }\ncalc.go-7- \n"+
		"calc.go:8: // Sub returns a minus b.\ncalc.go-9- func Sub(a, b int) int {\ncalc.go:10: \treturn a - b\ncalc.go-11- }\n")
	assert.NotContains(t, text, "calc.go-4-")
	assert.NotContains(t, text, "calc.go-10-")
	m = data["matches"].([]any)[0].(map[string]any)
	assert.Nil(t, m["after"], "the next line is the next match")

	text, data = ok(t, cs, "grep", map[string]any{"pattern": `a`, "max_results": 2})
	assert.Equal(t, true, data["truncated"])
	assert.Contains(t, text, "[cut: there are more matches than the 2 shown")
	text, _ = ok(t, cs, "grep", map[string]any{"pattern": `RETURN`, "case_insensitive": true})
	assert.Contains(t, text, "calc.go:5:")
	_, code, _ := fails(t, cs, "grep", map[string]any{"pattern": `(`})
	assert.Equal(t, "bad_request", code)
}

func TestCheckpointRollbackLogDiffStatusSubmit(t *testing.T) {
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{Intent: "fix Add", AgentName: "alice"})
	cs := e.connect(t, s, mcpserver.Options{})

	text, _ := ok(t, cs, "status", nil)
	assert.Contains(t, text, "Session "+s.ID+" on repository calc, active")
	assert.Contains(t, text, "Base: main at ")
	assert.Contains(t, text, "Intent: fix Add")
	assert.Contains(t, text, "Changed paths (0):\n  none")

	ok(t, cs, "write_file", map[string]any{"path": "notes.md", "content": "a\n"})
	text, data := ok(t, cs, "checkpoint", map[string]any{"label": "notes"})
	assert.Contains(t, text, "Checkpoint 1 saved")
	assert.EqualValues(t, 1, data["n"])
	ok(t, cs, "write_file", map[string]any{"path": "notes.md", "content": "b\n"})
	ok(t, cs, "delete_path", map[string]any{"path": "go.mod"})

	text, data = ok(t, cs, "diff", nil)
	assert.Contains(t, text, "2 file(s) changed against base")
	assert.Contains(t, text, "+b\n")
	assert.Equal(t, []any{"go.mod", "notes.md"}, data["files"])
	text, data = ok(t, cs, "diff", map[string]any{"paths": []string{"notes.md"}, "against": "1"})
	assert.Contains(t, text, "-a\n+b\n")
	assert.NotContains(t, text, "go.mod\n")
	assert.Equal(t, []any{"notes.md"}, data["shown"])
	// The diff applies with git apply to the base.
	_, data = ok(t, cs, "diff", nil)
	testrepo.GitInput(t, e.repoDir, []byte(data["diff"].(string)), "apply", "--check", "-")
	_, code, _ := fails(t, cs, "diff", map[string]any{"against": "no-such-checkpoint"})
	assert.NotEmpty(t, code)

	text, _ = ok(t, cs, "status", nil)
	assert.Contains(t, text, "Changed paths (2):\n  deleted go.mod\n  added notes.md\n")
	assert.Contains(t, text, "Checkpoints (1):\n  1 notes: commit ")

	text, data = ok(t, cs, "log", map[string]any{"limit": 2})
	assert.Contains(t, text, "3 change(s) in all; the latest 2, newest first:")
	ms := data["mutations"].([]any)
	require.Len(t, ms, 2)
	assert.EqualValues(t, 3, ms[0].(map[string]any)["seq"])
	assert.Contains(t, text, "delete  go.mod")

	text, _ = ok(t, cs, "rollback", map[string]any{"checkpoint": "1"})
	assert.Contains(t, text, "Rolled back to checkpoint 1")
	got, _, err := e.admin.ReadFile(t.Context(), s.ID, "notes.md")
	require.NoError(t, err)
	assert.Equal(t, "a\n", string(got))
	text, code, _ = fails(t, cs, "rollback", map[string]any{"checkpoint": "9"})
	assert.Equal(t, "not_found", code)
	assert.Contains(t, text, "status lists the checkpoints", "the hint fits a checkpoint, not only a path")

	text, data = ok(t, cs, "submit", map[string]any{"intent": "add notes"})
	assert.Contains(t, text, "Submitted: changeset ")
	assert.Contains(t, text, "onto main, open")
	assert.Equal(t, "open", data["status"])
}

func TestOverlapWarnings(t *testing.T) {
	e := newEnv(t)
	a := e.newSession(t, apitypes.CreateSessionRequest{AgentID: "alice"})
	b := e.newSession(t, apitypes.CreateSessionRequest{AgentID: "bob"})
	ca, cb := e.connect(t, a, mcpserver.Options{}), e.connect(t, b, mcpserver.Options{})
	ok(t, ca, "edit_file", map[string]any{"path": "calc.go", "edits": []any{map[string]any{"old_text": "// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a - b", "new_text": "// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a + b"}}})
	ok(t, cb, "edit_file", map[string]any{"path": "calc.go", "edits": []any{map[string]any{"old_text": "// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a - b", "new_text": "// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn b + a"}}})
	require.NoError(t, e.g.Sync(t.Context())) // the graph works off the sessions' locks
	// The graph reports overlaps from its own queue, after the write. A
	// server bound with a session token is told what overlaps, not which
	// session: its token may not see the other.
	text, data := waitOverlap(t, ca)
	assert.Contains(t, text, "calc.go: bob (another session), both changed Add; a trial merge CONFLICTS")
	assert.NotContains(t, text, b.ID)
	ovs := data["overlaps"].([]any)
	require.Len(t, ovs, 1)
	assert.NotContains(t, ovs[0].(map[string]any), "other")
	require.Eventually(t, func() bool {
		text, _ = ok(t, cb, "status", nil)
		return strings.Contains(text, "calc.go: alice (another session)")
	}, 20*time.Second, 20*time.Millisecond, "the other side is told too: %s", text)
	assert.NotContains(t, text, a.ID)

	// The same over streamable HTTP: with a's token no id of b; with the
	// admin token (the /mcp endpoint) the id.
	srv := httptest.NewServer(e.api)
	t.Cleanup(srv.Close)
	overHTTP, err := connectHTTP(t, srv.URL+"/mcp/sessions/"+a.ID, a.Token)
	require.NoError(t, err)
	text, _ = waitOverlap(t, overHTTP)
	assert.Contains(t, text, "calc.go: bob (another session)")
	assert.NotContains(t, text, b.ID)
	asAdmin, err := connectHTTP(t, srv.URL+"/mcp", adminToken)
	require.NoError(t, err)
	text, data = ok(t, asAdmin, "status", map[string]any{"session": a.ID})
	assert.Contains(t, text, "calc.go: bob (session "+b.ID+"), both changed Add")
	assert.Equal(t, b.ID, data["overlaps"].([]any)[0].(map[string]any)["other"])
}

func TestUnboundServerTakesSession(t *testing.T) {
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{})
	cs := connectServer(t, mcpserver.New(e.admin, mcpserver.Options{}), nil)
	_, code, _ := fails(t, cs, "read_file", map[string]any{"path": "go.mod"})
	assert.Equal(t, "bad_request", code)
	text, _ := ok(t, cs, "read_file", map[string]any{"session": s.ID, "path": "go.mod"})
	assert.Contains(t, text, "go.mod: 3 lines")
	_, code, _ = fails(t, cs, "read_file", map[string]any{"session": "00000000-0000-0000-0000-000000000000", "path": "go.mod"})
	assert.Equal(t, "not_found", code)
	// A bound server refuses a session argument: it is not in its schema.
	bound := e.connect(t, s, mcpserver.Options{})
	text, isErr, _ := call(t, bound, "read_file", map[string]any{"session": s.ID, "path": "go.mod"})
	assert.True(t, isErr, text)
}

func TestResultCap(t *testing.T) {
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{})
	var big strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&big, "line %d %s\n", i, strings.Repeat("y", 40))
	}
	_, err := e.admin.WriteFile(t.Context(), s.ID, "big.txt", []byte(big.String()), client.WriteOptions{})
	require.NoError(t, err)
	// The default cap, 100 KB: 2000 lines of big.txt are 112 KB.
	def := e.connect(t, s, mcpserver.Options{})
	text, data := ok(t, def, "read_file", map[string]any{"path": "big.txt"})
	assert.LessOrEqual(t, len(text), 100_000)
	assert.Greater(t, len(text), 90_000)
	assert.Less(t, data["next_offset"], 2000.0, "cut by the cap before the 2000-line default")
	assert.Contains(t, text, fmt.Sprintf("call read_file with offset %v for more", data["next_offset"]))

	cs := e.connect(t, s, mcpserver.Options{MaxResultBytes: 20_000})
	text, data = ok(t, cs, "read_file", map[string]any{"path": "big.txt"})
	assert.LessOrEqual(t, len(text), 20_000)
	next := int(data["next_offset"].(float64))
	assert.Greater(t, next, 100)
	assert.Contains(t, text, fmt.Sprintf("call read_file with offset %d for more", next))
	text, _ = ok(t, cs, "read_file", map[string]any{"path": "big.txt", "offset": next, "limit": 1})
	assert.Contains(t, text, fmt.Sprintf("%6d\tline %d ", next, next-1))

	text, data = ok(t, cs, "grep", map[string]any{"pattern": "line", "max_results": 1000})
	assert.LessOrEqual(t, len(text), 20_000)
	assert.Equal(t, true, data["truncated"])
	text, _ = ok(t, cs, "diff", nil)
	assert.LessOrEqual(t, len(text), 20_000)
	ok(t, cs, "write_file", map[string]any{"path": "small.txt", "content": "s\n"})
	text, data = ok(t, cs, "diff", nil)
	assert.Contains(t, text, "call diff with paths to see them")
	assert.Equal(t, true, data["truncated"])
}

func TestRun(t *testing.T) {
	plainRunOnly(t, "commands in namespaces through the run tool")
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{})
	cs := e.connect(t, s, mcpserver.Options{})
	_, code, _ := fails(t, cs, "run", map[string]any{"command": "true", "argv": []string{"true"}})
	assert.Equal(t, "bad_request", code)

	text, data := ok(t, cs, "run", map[string]any{"command": "sh test.sh"})
	assert.Contains(t, text, "exit code 1 after ")
	assert.Contains(t, text, "--- stderr:\n--- FAIL: TestAdd")
	assert.EqualValues(t, 1, data["exit_code"])
	assert.Contains(t, text, "The command changed no files of the session.")

	text, data = ok(t, cs, "run", map[string]any{"argv": []string{"sh", "-c", "echo generated > gen.txt && mkdir -p out && echo x > out/y && rm go.mod"}})
	assert.Contains(t, text, "exit code 0")
	assert.Contains(t, text, "Recorded as change 1: 3 path(s) changed")
	assert.Contains(t, text, "added gen.txt")
	assert.Contains(t, text, "deleted go.mod")
	assert.NotNil(t, data["mutation"])
	got, _, err := e.admin.ReadFile(t.Context(), s.ID, "gen.txt")
	require.NoError(t, err)
	assert.Equal(t, "generated\n", string(got))

	text, _ = ok(t, cs, "run", map[string]any{"command": "pwd; ls", "cwd": "docs"})
	assert.Contains(t, text, "crlf.txt")
	_, code, _ = fails(t, cs, "run", map[string]any{"command": "true", "cwd": "../.."})
	assert.Equal(t, "invalid_path", code)
	text, data = ok(t, cs, "run", map[string]any{"command": "sleep 5", "timeout_seconds": 1})
	assert.Contains(t, text, "Timed out after")
	assert.Equal(t, true, data["timed_out"])
}

// TestRunProgressAndCancel: a long command reports progress, and
// cancelling the call stops it (the session takes the next command at
// once instead of answering session_busy).
func TestRunProgressAndCancel(t *testing.T) {
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{})
	progressed := make(chan string, 16)
	cs := connectServer(t, mcpserver.New(client.NewInProcess(e.api, s.Token), mcpserver.Options{Session: s.ID}), &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			select {
			case progressed <- req.Params.Message:
			default:
			}
		}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"command": "echo started; sleep 60"}}
		params.SetProgressToken("run-1")
		_, err := cs.CallTool(ctx, params)
		done <- err
	}()
	select {
	case msg := <-progressed:
		assert.Contains(t, msg, "running for ")
	case <-time.After(30 * time.Second):
		t.Fatal("no progress notification")
	}
	cancel()
	select {
	case err := <-done:
		assert.Error(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not end when cancelled")
	}
	// The command is gone: the session runs the next one.
	require.Eventually(t, func() bool {
		_, isErr, _ := call(t, cs, "run", map[string]any{"command": "true"})
		return !isErr
	}, 20*time.Second, 100*time.Millisecond, "the 60 s command was stopped")
}

// TestRunRefused: what a command changed against the session's policy is
// refused, undone and listed with its rule; the rest is recorded.
func TestRunRefused(t *testing.T) {
	plainRunOnly(t, "commands in namespaces against the policy through the run tool")
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{Policy: &apitypes.Policy{Read: []string{"**"}, Write: []string{"docs/**"}}})
	cs := e.connect(t, s, mcpserver.Options{})
	text, data := ok(t, cs, "run", map[string]any{"command": "echo ok > docs/ok.txt && echo no > outside.txt"})
	assert.Contains(t, text, "Recorded as change 1: 1 path(s) changed: added docs/ok.txt.\n")
	assert.Contains(t, text, "Refused and undone (1):\n  outside.txt: ")
	assert.Contains(t, text, " (forbidden)\n")
	rej := data["rejected"].([]any)
	require.Len(t, rej, 1)
	assert.Equal(t, "outside.txt", rej[0].(map[string]any)["path"])
	assert.Equal(t, "forbidden", rej[0].(map[string]any)["rule"])
	_, code, _ := fails(t, cs, "read_file", map[string]any{"path": "outside.txt"})
	assert.Equal(t, "not_found", code, "the refused file is not in the session")
}

// TestOverlapCleanMerge: two sessions changing different functions of one
// file are told of each other, and that a trial merge is clean.
func TestOverlapCleanMerge(t *testing.T) {
	e := newEnv(t)
	a := e.newSession(t, apitypes.CreateSessionRequest{AgentID: "alice"})
	c := e.newSession(t, apitypes.CreateSessionRequest{AgentID: "carol"})
	ca, cc := e.connect(t, a, mcpserver.Options{}), e.connect(t, c, mcpserver.Options{})
	ok(t, ca, "edit_file", map[string]any{"path": "calc.go", "edits": []any{map[string]any{"old_text": "func Add(a, b int) int {\n\treturn a - b", "new_text": "func Add(a, b int) int {\n\treturn a + b"}}})
	ok(t, cc, "edit_file", map[string]any{"path": "calc.go", "edits": []any{map[string]any{"old_text": "func Sub(a, b int) int {\n\treturn a - b", "new_text": "func Sub(a, b int) int {\n\treturn -(b - a)"}}})
	require.NoError(t, e.g.Sync(t.Context()))
	text, data := waitOverlap(t, ca)
	assert.Contains(t, text, "calc.go: carol (another session); a trial merge is clean\n")
	ovs := data["overlaps"].([]any)
	require.Len(t, ovs, 1)
	assert.Equal(t, "clean", ovs[0].(map[string]any)["merge"])
	assert.Empty(t, ovs[0].(map[string]any)["symbols"], "no function changed on both sides")
}

// TestEveryToolErrorIsAToolError: each of the nineteen tools, asked about a
// session that does not exist and about one that was abandoned, answers
// with a tool error carrying the API's code, not a protocol failure.
func TestEveryToolErrorIsAToolError(t *testing.T) {
	plainRunOnly(t, "a table of every tool's errors, one call at a time")
	e := newEnv(t)
	closed := e.newSession(t, apitypes.CreateSessionRequest{})
	_, err := e.admin.Checkpoint(t.Context(), closed.ID, "", "")
	require.NoError(t, err)
	_, err = e.admin.AbandonSession(t.Context(), closed.ID)
	require.NoError(t, err)
	args := map[string]map[string]any{
		"read_file": {"path": "go.mod"}, "read_files": {"paths": []string{"go.mod"}},
		"write_file":  {"path": "x.txt", "content": "x\n"},
		"edit_file":   {"path": "go.mod", "edits": []any{map[string]any{"old_text": "go 1.22", "new_text": "go 1.23"}}},
		"delete_path": {"path": "go.mod"}, "move_path": {"from": "go.mod", "to": "mod/go.mod"},
		"list_dir": {}, "glob": {"pattern": "*.go"}, "grep": {"pattern": "func"}, "diff": {}, "status": {},
		"checkpoint": {"label": "x"}, "rollback": {"checkpoint": "1"}, "log": {}, "run": {"command": "true"}, "submit": {},
		"service_start": {"name": "web", "command": "true"}, "service_logs": {"name": "web"}, "service_stop": {"name": "web"},
		"rebase": {},
	}
	require.ElementsMatch(t, mcpserver.ToolNames(), func() []string {
		var ns []string
		for n := range args {
			ns = append(ns, n)
		}
		return ns
	}())
	unbound := connectServer(t, mcpserver.New(e.admin, mcpserver.Options{}), nil)
	boundClosed := e.connect(t, closed, mcpserver.Options{})
	// What changes the session is refused on a closed one (run runs, as
	// SPEC section 9's exec does, and records nothing).
	writes := map[string]bool{"write_file": true, "edit_file": true, "delete_path": true, "move_path": true,
		"checkpoint": true, "rollback": true, "submit": true, "service_start": true, "rebase": true}
	for _, name := range mcpserver.ToolNames() {
		t.Run(name, func(t *testing.T) {
			a := map[string]any{"session": "00000000-0000-0000-0000-000000000000"}
			for k, v := range args[name] {
				a[k] = v
			}
			if name == "read_files" { // each file's error in place
				_, data := ok(t, unbound, name, a)
				f := data["files"].([]any)[0].(map[string]any)
				assert.Equal(t, "not_found", f["error"].(map[string]any)["code"])
			} else {
				text, code, e := fails(t, unbound, name, a)
				assert.Equal(t, "not_found", code, text)
				assert.NotEmpty(t, e["message"])
				assert.True(t, strings.HasPrefix(text, "Error not_found: "), text)
			}
			switch {
			case writes[name]:
				text, code, _ := fails(t, boundClosed, name, args[name])
				assert.Equal(t, "session_closed", code, text)
			case name == "run":
				text, data := ok(t, boundClosed, name, args[name])
				assert.Contains(t, text, "Nothing recorded: ")
				assert.Equal(t, false, data["recorded"])
			}
		})
	}
}

// waitOverlap asks status until it reports one overlap (the graph reports
// from its own queue, after the write) and returns the result.
func waitOverlap(t *testing.T, c *mcp.ClientSession) (string, map[string]any) {
	t.Helper()
	var text string
	var data map[string]any
	require.Eventually(t, func() bool {
		text, data = ok(t, c, "status", nil)
		return strings.Contains(text, "Overlaps (1)")
	}, 20*time.Second, 20*time.Millisecond, "no overlap reported")
	return text, data
}
