package mcpserver_test

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/mcpserver"
)

// schemaOf decodes a listed schema.
func schemaOf(t *testing.T, v any) *jsonschema.Schema {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var s jsonschema.Schema
	require.NoError(t, json.Unmarshal(raw, &s))
	return &s
}

// nullable lists the properties of s, at any depth, that a schema lets be
// null, by their path.
func nullable(s *jsonschema.Schema, at string) []string {
	var out []string
	for name, p := range s.Properties {
		if p.Type == "null" || containsNull(p.Types) {
			out = append(out, at+name)
		}
		out = append(out, nullable(p, at+name+".")...)
		if p.Items != nil {
			out = append(out, nullable(p.Items, at+name+"[].")...)
		}
	}
	return out
}

func containsNull(ts []string) bool {
	for _, t := range ts {
		if t == "null" {
			return true
		}
	}
	return false
}

// TestToolSchemasForStrictClients lists the tools through the SDK's own
// client, bound and unbound, as a function-calling client sees them: no
// input property may be null (a strict client refuses a nullable
// required field), the array inputs are typed "array", and every tool
// declares an outputSchema, an object, for its structured content, a
// tool error's included (the test helpers validate every result against
// it).
func TestToolSchemasForStrictClients(t *testing.T) {
	plainRunOnly(t, "the tools' schemas, a fixed table")
	e := newEnv(t)
	s := e.newSession(t, apitypes.CreateSessionRequest{})
	for name, cs := range map[string]*mcp.ClientSession{
		"bound":   e.connect(t, s, mcpserver.Options{}),
		"unbound": connectServer(t, mcpserver.New(e.admin, mcpserver.Options{}), nil),
	} {
		t.Run(name, func(t *testing.T) {
			res, err := cs.ListTools(t.Context(), nil)
			require.NoError(t, err)
			require.Len(t, res.Tools, len(mcpserver.ToolNames()))
			inputs := map[string]*jsonschema.Schema{}
			for _, tool := range res.Tools {
				in := schemaOf(t, tool.InputSchema)
				inputs[tool.Name] = in
				assert.Empty(t, nullable(in, ""), "tool %s: nullable input properties", tool.Name)
				require.NotNil(t, tool.OutputSchema, "tool %s declares no outputSchema", tool.Name)
				out := schemaOf(t, tool.OutputSchema)
				assert.Equal(t, "object", out.Type, "tool %s: outputSchema", tool.Name)
				assert.NotEmpty(t, out.Properties, "tool %s: outputSchema", tool.Name)
				r, err := out.Resolve(nil)
				require.NoError(t, err, tool.Name)
				// A tool error's structured content fits it too: clients
				// validate every result's, errors included.
				assert.NoError(t, r.Validate(map[string]any{"error": map[string]any{"code": "invalid_path", "message": "m", "rule": "hasDotdot", "path": "../x"}}), tool.Name)
				assert.Error(t, r.Validate(map[string]any{"error": map[string]any{"message": "no code"}}), tool.Name)
			}
			for _, a := range []struct{ tool, prop string }{{"edit_file", "edits"}, {"read_files", "paths"}, {"run", "argv"}, {"diff", "paths"}} {
				p := inputs[a.tool].Properties[a.prop]
				require.NotNil(t, p, "%s.%s", a.tool, a.prop)
				assert.Equal(t, "array", p.Type, "%s.%s", a.tool, a.prop)
				assert.Empty(t, p.Types, "%s.%s", a.tool, a.prop)
			}
			assert.Contains(t, inputs["edit_file"].Required, "edits")
			assert.Contains(t, inputs["read_files"].Required, "paths")
		})
	}
	// A null for an array input is refused as the schema says, a tool error.
	cs := e.connect(t, s, mcpserver.Options{})
	_, code, _ := fails(t, cs, "read_files", map[string]any{"paths": nil})
	assert.Equal(t, "bad_request", code)
}
