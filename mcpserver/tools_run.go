package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RunIn is run's input.
type RunIn struct {
	SessionArg
	Command        string   `json:"command,omitempty" jsonschema:"A shell command line, run by /bin/sh -c in the session's files, e.g. go test ./... (give command or argv)."`
	Argv           []string `json:"argv,omitempty" jsonschema:"The program and its arguments, run without a shell, e.g. [\"go\", \"test\", \"./...\"] (give command or argv)."`
	Cwd            string   `json:"cwd,omitempty" jsonschema:"The directory to run in, relative to the repository root (default the root)."`
	TimeoutSeconds int      `json:"timeout_seconds,omitempty" jsonschema:"Stop the command after this many seconds (default 600)."`
}

func (s *server) runTool(ms *mcp.Server) {
	addTool(s, ms, toolSpec{name: toolRun, title: "Run a command", kind: destructive, openWorld: true, description: "Run a command (build, tests, linters, code generators) on the session's files as a real directory. " +
		"Returns the exit code and the tail of stdout and stderr. Files the command changes (except those .gitignore ignores) are recorded in the session as one change; changes that break the session's rules are refused and listed. " +
		"Long runs report progress; cancelling the call stops the command."}, (*server).run)
}

func (s *server) run(ctx context.Context, req *mcp.CallToolRequest, sid string, in RunIn) (result, error) {
	if (in.Command == "") == (len(in.Argv) == 0) {
		return result{}, badRequest("give exactly one of command and argv")
	}
	return result{}, newError(CodeUnavailable, "run needs the daemon's exec API (SPEC section 9), which this build does not have yet")
}
