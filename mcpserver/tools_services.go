package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiond/sessiond/apitypes"
)

// Services (SPEC §15): a development server or any long-running process
// on the session's files, its port reached through the daemon.

// ServiceStartIn is service_start's input.
type ServiceStartIn struct {
	SessionArg
	Name    string   `json:"name" jsonschema:"A name for the service in this session, e.g. web (a-z, 0-9, '.', '_', '-')."`
	Command string   `json:"command,omitempty" jsonschema:"A shell command line, run by /bin/sh -c, e.g. npm run dev -- --port 5173 (give command or argv)."`
	Argv    []string `json:"argv,omitempty" jsonschema:"The program and its arguments, run without a shell (give command or argv)."`
	Port    int      `json:"port,omitempty" jsonschema:"The port it listens on at 127.0.0.1, 1 to 65535: the result gives the URL that opens it, and later run commands reach it at 127.0.0.1 on that port."`
	Ready   string   `json:"ready,omitempty" jsonschema:"Wait until the service is ready: an HTTP path answered below 400 (e.g. /), or tcp for a connection on the port."`
	Network bool     `json:"network,omitempty" jsonschema:"Give the service the network the repository's policy allows (for example an allowlist of APIs it calls); without it the service has no network."`
}

// ServiceStopIn is service_stop's input.
type ServiceStopIn struct {
	SessionArg
	Name string `json:"name" jsonschema:"The service to stop."`
}

// ServiceLogsIn is service_logs's input.
type ServiceLogsIn struct {
	SessionArg
	Name string `json:"name" jsonschema:"The service."`
	Tail int    `json:"tail,omitempty" jsonschema:"How many of its last lines of output (default 100, at most 1000)."`
}

// ServiceLogsOut is service_logs's result.
type ServiceLogsOut struct {
	Lines []string `json:"lines"`
}

func (s *server) serviceTools(ms *mcp.Server) {
	addTool[apitypes.Service](s, ms, toolSpec{name: toolServiceStart, title: "Start a service", kind: additive, openWorld: true, description: "Start a long-running process (a development server, say) on the session's files; it runs until service_stop, the session's end or 30 minutes without use. " +
		"With a port, the result gives the URL that opens it through the daemon; with ready, the call waits until it answers. Files it changes are recorded at the next run."}, (*server).serviceStart)
	addTool[ServiceLogsOut](s, ms, toolSpec{name: toolServiceLogs, title: "A service's output", kind: readOnly, description: "The last lines a service printed (stdout and stderr)."}, (*server).serviceLogs)
	addTool[apitypes.Service](s, ms, toolSpec{name: toolServiceStop, title: "Stop a service", kind: destructive, idempotent: true, description: "Stop a service and every process it started; what it changed is recorded."}, (*server).serviceStop)
}

func (s *server) serviceStart(ctx context.Context, _ *mcp.CallToolRequest, sid string, in ServiceStartIn) (result, error) {
	if (in.Command == "") == (len(in.Argv) == 0) {
		return result{}, badRequest("give exactly one of command and argv")
	}
	req := apitypes.ServiceRequest{Name: in.Name, Command: in.Command, Argv: in.Argv, Network: in.Network}
	if in.Port != 0 {
		p := in.Port
		req.Port = &p
	}
	switch {
	case in.Ready == "":
	case strings.EqualFold(in.Ready, "tcp"):
		req.Ready = &apitypes.ServiceReady{TCP: true}
	case strings.HasPrefix(in.Ready, "/"):
		req.Ready = &apitypes.ServiceReady{HTTP: in.Ready}
	default:
		return result{}, badRequest("ready %q: give an HTTP path starting with /, or tcp", in.Ready)
	}
	sv, err := s.b.StartService(ctx, sid, req)
	if err != nil {
		return result{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Service %s is %s", sv.Name, sv.State)
	if sv.PID != 0 {
		fmt.Fprintf(&b, " (pid %d)", sv.PID)
	}
	b.WriteString(".\n")
	if sv.PreviewURL != "" {
		fmt.Fprintf(&b, "Preview: %s\n", sv.PreviewURL)
	}
	if sv.URL != "" {
		fmt.Fprintf(&b, "URL (with the session's token): %s\nCommands run on the session reach it at http://127.0.0.1:%d/.\n", sv.URL, sv.Port)
	}
	return result{text: b.String(), data: sv}, nil
}

func (s *server) serviceLogs(ctx context.Context, _ *mcp.CallToolRequest, sid string, in ServiceLogsIn) (result, error) {
	tail := in.Tail
	if tail == 0 {
		tail = 100
	}
	out := ServiceLogsOut{Lines: []string{}}
	if err := s.b.ServiceLogs(ctx, sid, in.Name, tail, false, func(l string) { out.Lines = append(out.Lines, l) }); err != nil {
		return result{}, err
	}
	text := fmt.Sprintf("The last %d line(s) of %s:\n%s", len(out.Lines), in.Name, strings.Join(out.Lines, "\n"))
	return result{text: text, data: out}, nil
}

func (s *server) serviceStop(ctx context.Context, _ *mcp.CallToolRequest, sid string, in ServiceStopIn) (result, error) {
	sv, err := s.b.StopService(ctx, sid, in.Name)
	if err != nil {
		return result{}, err
	}
	return result{text: fmt.Sprintf("Service %s is %s.\n", sv.Name, sv.State), data: sv}, nil
}
