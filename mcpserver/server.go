package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiond/sessiond/apitypes"
)

// DefaultMaxResultBytes caps the text of every tool result.
const DefaultMaxResultBytes = 100_000

// Options configure a server.
type Options struct {
	// Session binds every tool to this session id. Empty: every tool takes
	// a required `session` argument (the daemon's /mcp endpoint).
	Session string
	// MaxResultBytes caps each result's text; DefaultMaxResultBytes when 0.
	MaxResultBytes int
	// Version is the server version announced at initialize.
	Version string
	Logger  *slog.Logger
	// NewSessionID, when set, gives the id of each new MCP session over
	// streamable HTTP (a cluster's node names itself in it).
	NewSessionID func() string
}

// server holds what the tool handlers share. A handler runs on a server
// whose b is the backend of its call.
type server struct {
	b    Backend
	opts Options
	// per, when set, gives each call its backend and bound session (the
	// HTTP handler: both come with each request).
	per func(req *mcp.CallToolRequest) (Backend, string)
	// boundPer: per gives the bound session (/mcp/sessions/{id}).
	boundPer bool
}

// New returns an MCP server with the nineteen tools over b.
func New(b Backend, opts Options) *mcp.Server { return newServer(&server{b: b}, opts) }

func newServer(s *server, opts Options) *mcp.Server {
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = DefaultMaxResultBytes
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ms := mcp.NewServer(&mcp.Implementation{Name: "sessiond", Title: "sessiond session workspace", Version: opts.Version},
		&mcp.ServerOptions{Instructions: instructions, Logger: opts.Logger, GetSessionID: opts.NewSessionID})
	s.opts = opts
	ms.AddReceivingMiddleware(coded)
	s.fileTools(ms)
	s.treeTools(ms)
	s.sessionTools(ms)
	return ms
}

const instructions = `You work in a sessiond session: an isolated, versioned view of a git repository. ` +
	`Your writes stay in the session until you submit it for review; nothing touches the repository's branches. ` +
	`Read before you edit: read_file returns each file's ETag, and edit_file and write_file take it as if_match so that a change made meanwhile is never overwritten. ` +
	`edit_file refuses an old_text that matches zero or several times and shows the candidates. ` +
	`Use checkpoint before risky changes and rollback to return to one; run executes the project's own commands (build, tests) on the session's files; ` +
	`status shows your changes and other agents changing the same files; diff shows your changes; submit opens them for review.`

// Tool names, as SPEC section 10 lists them.
const (
	toolReadFile   = "read_file"
	toolReadFiles  = "read_files"
	toolWriteFile  = "write_file"
	toolEditFile   = "edit_file"
	toolDeletePath = "delete_path"
	toolMovePath   = "move_path"
	toolListDir    = "list_dir"
	toolGlob       = "glob"
	toolGrep       = "grep"
	toolDiff       = "diff"
	toolStatus     = "status"
	toolCheckpoint = "checkpoint"
	toolRollback   = "rollback"
	toolLog        = "log"
	toolRun        = "run"
	toolSubmit     = "submit"
	// Services (SPEC §15).
	toolServiceStart = "service_start"
	toolServiceLogs  = "service_logs"
	toolServiceStop  = "service_stop"
	// Conflicts (SPEC §14).
	toolRebase = "rebase"
)

// ToolNames lists the tools every server has, in the order of SPEC
// section 10.
func ToolNames() []string {
	return []string{toolReadFile, toolReadFiles, toolWriteFile, toolEditFile, toolDeletePath, toolMovePath,
		toolListDir, toolGlob, toolGrep, toolDiff, toolStatus, toolCheckpoint, toolRollback, toolLog, toolRun, toolSubmit,
		toolServiceStart, toolServiceLogs, toolServiceStop, toolRebase}
}

// SessionArg is the `session` argument of every tool on an unbound server
// (it is removed from the schemas of a bound one).
type SessionArg struct {
	Session string `json:"session,omitempty" jsonschema:"The id of the session to work in. Required on the daemon's /mcp endpoint; absent where the server is bound to one session."`
}

func (a SessionArg) sessionID() string { return a.Session }

type sessioned interface{ sessionID() string }

// result is a tool's answer: text for the model and the same data as
// structured content.
type result struct {
	text string
	data any
}

// kind is a tool's effect, for its annotations.
type kind int

const (
	readOnly    kind = iota // changes nothing
	additive                // changes the session without losing anything
	destructive             // may remove or overwrite content
)

// toolSpec is one tool's description.
type toolSpec struct {
	name, title, description string
	kind                     kind
	idempotent               bool
	openWorld                bool
}

// addTool registers a tool whose handler gets the session id it works on
// (the bound one, or the validated `session` argument) and the typed
// input; its errors become tool errors. Out is the type of its results'
// structured content, which the tool declares as its outputSchema.
func addTool[Out any, In sessioned](s *server, ms *mcp.Server, spec toolSpec, h func(s *server, ctx context.Context, req *mcp.CallToolRequest, sid string, in In) (result, error)) {
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: %v", spec.name, err))
	}
	if s.bound() {
		delete(schema.Properties, "session")
		schema.PropertyOrder = slices.DeleteFunc(schema.PropertyOrder, func(p string) bool { return p == "session" })
	} else {
		schema.Required = append(schema.Required, "session")
	}
	notNull(schema)
	outSchema, err := jsonschema.For[Out](outputOptions)
	if err != nil {
		panic(fmt.Sprintf("tool %s: output: %v", spec.name, err))
	}
	withError(outSchema)
	f, t := false, true
	ann := &mcp.ToolAnnotations{Title: spec.title, IdempotentHint: spec.idempotent, OpenWorldHint: &f}
	if spec.openWorld {
		ann.OpenWorldHint = &t
	}
	switch spec.kind {
	case readOnly:
		ann.ReadOnlyHint = true
		ann.IdempotentHint = true
	case additive:
		ann.DestructiveHint = &f
	case destructive:
		ann.DestructiveHint = &t
	}
	tool := &mcp.Tool{Name: spec.name, Title: spec.title, Description: spec.description, InputSchema: schema, OutputSchema: outSchema, Annotations: ann}
	mcp.AddTool(ms, tool, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		if e := checkArguments[In](req); e != nil {
			return s.fail(e), nil, nil
		}
		call := s
		sid := s.opts.Session
		if s.per != nil {
			b, bound := s.per(req)
			call, sid = &server{b: b, opts: s.opts}, bound
		}
		if !s.bound() {
			sid = strings.TrimSpace(in.sessionID())
			if sid == "" {
				return s.fail(badRequest("the session argument is required on this endpoint")), nil, nil
			}
		}
		if sid == "" {
			return s.fail(newError(CodeInternal, "no session is bound to this call")), nil, nil
		}
		res, err := h(call, ctx, req, sid, in)
		if err != nil {
			return s.fail(toolError(err)), nil, nil
		}
		if _, ok := res.data.(Out); !ok {
			return s.fail(newError(CodeInternal, "tool %s: result of type %T, not the %s its outputSchema declares", spec.name, res.data, reflect.TypeFor[Out]())), nil, nil
		}
		return s.finish(res), nil, nil
	})
}

// outputOptions derive the output schemas. apitypes.Policy nests its
// parent, a cycle the schema library refuses: its schema says the parent
// is a policy too, without spelling it out again.
var outputOptions = func() *jsonschema.ForOptions {
	type flat struct {
		Read  []string `json:"read,omitempty"`
		Write []string `json:"write,omitempty"`
		Deny  []string `json:"deny,omitempty"`
	}
	ps, err := jsonschema.For[flat](nil)
	if err != nil {
		panic(err)
	}
	ps.Properties["parent"] = &jsonschema.Schema{Types: []string{"null", "object"}, Description: "The policy this one narrows, of the same shape."}
	ps.PropertyOrder = append(ps.PropertyOrder, "parent")
	return &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[apitypes.Policy](): ps}}
}()

// withError lets an output schema describe a tool error's structured
// content too ({"error": {code, message, …details}}): clients (the
// TypeScript SDK's among them) validate the structured content of every
// result against the outputSchema, errors included. The result is either
// the tool's own fields, all its required ones present, or the error.
func withError(s *jsonschema.Schema) {
	s.Properties["error"] = &jsonschema.Schema{
		Type:        "object",
		Description: "Present only on a tool error (isError): the API's error code, its message, and details such as rule, path and current.",
		Required:    []string{"code", "message"},
		Properties: map[string]*jsonschema.Schema{
			"code":    {Type: "string"},
			"message": {Type: "string"},
		},
	}
	if !slices.Contains(s.PropertyOrder, "error") { // read_file's own error field is of this shape too
		s.PropertyOrder = append(s.PropertyOrder, "error")
	}
	if len(s.Required) > 0 {
		s.AnyOf = []*jsonschema.Schema{{Required: s.Required}, {Required: []string{"error"}}}
		s.Required = nil
	}
}

// notNull makes the properties of an input schema, at every depth, not
// nullable: the schema library types every slice ["null","array"], and a
// strict function-calling client refuses a required field that may be
// null (edits, paths). No input takes null for a value; an optional one
// (argv) is left out instead.
func notNull(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for _, p := range s.Properties {
		if slices.Contains(p.Types, "null") {
			p.Types = slices.DeleteFunc(slices.Clone(p.Types), func(t string) bool { return t == "null" })
			if len(p.Types) == 1 {
				p.Type, p.Types = p.Types[0], nil
			}
		}
		notNull(p)
	}
	notNull(s.Items)
}

// checkArguments refuses arguments with a string that is not valid
// Unicode before the input decoded from them is used: the SDK's decoder
// turns such strings into U+FFFD without a word, so a path the API would
// refuse (badPathChar) would reach it as another, valid, path. The check
// is the API's (apitypes.CheckStrings, on the raw arguments); a path of
// the input (fields tagged sessiond:"path") is invalid_path, as the API
// answers.
func checkArguments[In any](req *mcp.CallToolRequest) *Error {
	if req == nil || req.Params == nil {
		return nil
	}
	bad := apitypes.CheckStrings(req.Params.Arguments)
	if bad == nil {
		return nil
	}
	bad.Classify(reflect.TypeFor[In]())
	if bad.Path {
		return &Error{Code: "invalid_path", Message: fmt.Sprintf("invalid path %q: badPathChar: %s at %s", bad.Value, bad.Why, bad.Where()),
			Details: map[string]any{"rule": "badPathChar", "path": bad.Value}}
	}
	return badRequest("arguments: %v", bad)
}

// coded gives the tool errors the SDK makes itself (arguments that do not
// fit the schema) the same {"error": {code, message}} shape as ours.
func coded(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if r, ok := res.(*mcp.CallToolResult); ok && err == nil && r.IsError && r.StructuredContent == nil {
			msg := ""
			if len(r.Content) > 0 {
				if t, ok := r.Content[0].(*mcp.TextContent); ok {
					msg = t.Text
					t.Text = "Error " + CodeBadRequest + ": " + msg
				}
			}
			r.StructuredContent = (&Error{Code: CodeBadRequest, Message: msg}).structured()
		}
		return res, err
	}
}

// bound reports whether the server's tools work on one session given by
// the server, not by a `session` argument.
func (s *server) bound() bool { return s.opts.Session != "" || s.boundPer }

// finish caps the text and attaches the structured content.
func (s *server) finish(r result) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: capText(r.text, s.opts.MaxResultBytes)}},
		StructuredContent: r.data,
	}
}

func (s *server) fail(e *Error) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: capText(e.text(), s.opts.MaxResultBytes)}},
		StructuredContent: e.structured(),
	}
}

// capText is the last guard of the result cap: tools size their answers
// to it and say how to get the rest; this cuts anything still over at a
// line boundary and says so.
func capText(t string, limit int) string {
	if len(t) <= limit {
		return t
	}
	cut := t[:limit-200]
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i+1]
	}
	return cut + fmt.Sprintf("\n[cut: the result is %d bytes and the cap is %d; ask for less (a smaller limit, fewer paths or a narrower pattern)]\n", len(t), limit)
}

// budget tracks the bytes of text a tool may still produce.
type budget struct{ left int }

func (s *server) budget() *budget { return &budget{left: s.opts.MaxResultBytes - 1000} }

// take reports whether n more bytes fit, and counts them if they do.
func (b *budget) take(n int) bool {
	if n > b.left {
		return false
	}
	b.left -= n
	return true
}
