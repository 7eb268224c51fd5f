package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiond/sessiond/apitypes"
)

// RunIn is run's input.
type RunIn struct {
	SessionArg
	Command        string   `json:"command,omitempty" jsonschema:"A shell command line, run by /bin/sh -c in the session's files, e.g. go test ./... (give command or argv)."`
	Argv           []string `json:"argv,omitempty" jsonschema:"The program and its arguments, run without a shell, e.g. [\"go\", \"test\", \"./...\"] (give command or argv)."`
	Cwd            string   `json:"cwd,omitempty" sessiond:"path" jsonschema:"The directory to run in, relative to the repository root (default the root)."`
	TimeoutSeconds int      `json:"timeout_seconds,omitempty" jsonschema:"Stop the command after this many seconds (default 600)."`
	Network        bool     `json:"network,omitempty" jsonschema:"Give the command the network the repository's policy allows (for example an allowlist of package registries); without it the command has no network."`
}

// RunOut is what run did.
type RunOut struct {
	apitypes.ExecResponse
	StdoutTail string `json:"stdout_tail"`
	StderrTail string `json:"stderr_tail"`
}

// Output kept in a result, per stream, and how often a long run reports.
const (
	maxTailBytes     = 40_000
	progressInterval = 2 * time.Second
)

func (s *server) runTool(ms *mcp.Server) {
	addTool[RunOut](s, ms, toolSpec{name: toolRun, title: "Run a command", kind: destructive, openWorld: true, description: "Run a command (build, tests, linters, code generators) on the session's files as a real directory. " +
		"Returns the exit code and the tail of stdout and stderr. Files the command changes (except those .gitignore ignores) are recorded in the session as one change; changes that break the session's rules are refused and listed. " +
		"Long runs report progress; cancelling the call stops the command. " +
		"The files are a git checkout: git status, diff, log and blame work, and each git commit the command makes becomes a checkpoint of the session (listed in the result)."}, (*server).run)
}

func (s *server) run(ctx context.Context, req *mcp.CallToolRequest, sid string, in RunIn) (result, error) {
	if (in.Command == "") == (len(in.Argv) == 0) {
		return result{}, badRequest("give exactly one of command and argv")
	}
	ereq := apitypes.ExecRequest{Argv: in.Argv, Command: in.Command, Cwd: in.Cwd, TimeoutSeconds: float64(in.TimeoutSeconds)}
	if in.Network {
		ereq.Network = &in.Network
	}
	var output func(string, []byte)
	if token := progressToken(req); token != nil {
		p := &progress{ss: req.Session, token: token, start: time.Now()}
		output = p.output
		done := make(chan struct{})
		defer close(done)
		go p.tick(ctx, done)
	}
	// ctx ends when the client cancels the call; the exec request ends
	// with it, and the daemon kills the command's process group.
	res, err := s.b.Exec(ctx, sid, ereq, output)
	if err != nil {
		return result{}, err
	}
	out := RunOut{ExecResponse: res, StdoutTail: tail(res.Stdout, maxTailBytes), StderrTail: tail(res.Stderr, maxTailBytes)}
	out.Stdout, out.Stderr = "", "" // the tails are the output kept
	var b strings.Builder
	what := in.Command
	if what == "" {
		what = strings.Join(in.Argv, " ")
	}
	fmt.Fprintf(&b, "$ %s\n", what)
	switch {
	case res.TimedOut:
		fmt.Fprintf(&b, "Timed out after %s and was stopped", dur(res.DurationMS))
	case res.Signal != "":
		fmt.Fprintf(&b, "Killed by signal %s after %s", res.Signal, dur(res.DurationMS))
	default:
		fmt.Fprintf(&b, "exit code %d after %s", res.ExitCode, dur(res.DurationMS))
	}
	b.WriteString(".\n")
	for _, st := range []struct{ name, text string }{{"stdout", out.StdoutTail}, {"stderr", out.StderrTail}} {
		if st.text == "" {
			continue
		}
		note := ""
		if len(st.text) < len(streamOf(res, st.name)) || res.OutputTruncated {
			note = " (the end of it)"
		}
		fmt.Fprintf(&b, "--- %s%s:\n%s", st.name, note, st.text)
		if !strings.HasSuffix(st.text, "\n") {
			b.WriteString("\n")
		}
	}
	switch {
	case res.Mutation != nil:
		fmt.Fprintf(&b, "Recorded as change %d: %d path(s) changed", res.Mutation.Seq, len(res.Changes))
		for i, c := range res.Changes {
			if i == 50 {
				fmt.Fprintf(&b, ", and %d more", len(res.Changes)-50)
				break
			}
			fmt.Fprintf(&b, "%s %s %s", sep(i), c.Status, c.Path)
		}
		b.WriteString(".\n")
	case res.NotRecorded != "":
		fmt.Fprintf(&b, "Nothing recorded: %s.\n", res.NotRecorded)
	default:
		b.WriteString("The command changed no files of the session.\n")
	}
	if len(res.NetworkRefused) > 0 {
		fmt.Fprintf(&b, "The network allowlist refused: %s (only the repository's policy can add them).\n", strings.Join(res.NetworkRefused, ", "))
	}
	if len(res.Rejected) > 0 {
		fmt.Fprintf(&b, "Refused and undone (%d):\n", len(res.Rejected))
		for _, r := range res.Rejected {
			fmt.Fprintf(&b, "  %s: %s (%s)\n", r.Path, r.Message, r.Rule)
		}
	}
	writeGitCheckpoints(&b, res)
	return result{text: b.String(), data: out}, nil
}

func sep(i int) string {
	if i == 0 {
		return ":"
	}
	return ","
}

func streamOf(r apitypes.ExecResponse, name string) string {
	if name == "stdout" {
		return r.Stdout
	}
	return r.Stderr
}

func dur(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(time.Millisecond).String()
}

// tail is the last n bytes of s, from a line start where one is near.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	t := s[len(s)-n:]
	if i := strings.IndexByte(t, '\n'); i >= 0 && i < 1000 {
		t = t[i+1:]
	}
	return t
}

func progressToken(req *mcp.CallToolRequest) any {
	if req == nil || req.Params == nil {
		return nil
	}
	return req.Params.GetProgressToken()
}

// progress reports a running command to the client: a notification every
// progressInterval with the time so far and the last line of output.
type progress struct {
	ss    *mcp.ServerSession
	token any
	start time.Time

	mu    sync.Mutex
	last  string
	bytes int
	n     float64
}

func (p *progress) output(_ string, data []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bytes += len(data)
	if lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n"); len(lines) > 0 && lines[len(lines)-1] != "" {
		p.last = cutLine(lines[len(lines)-1], 200)
	}
}

func (p *progress) tick(ctx context.Context, done <-chan struct{}) {
	t := time.NewTicker(progressInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			p.mu.Lock()
			p.n++
			msg := fmt.Sprintf("running for %s, %d bytes of output", time.Since(p.start).Round(time.Second), p.bytes)
			if p.last != "" {
				msg += ": " + p.last
			}
			n := p.n
			p.mu.Unlock()
			if p.ss != nil {
				_ = p.ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: n, Message: msg})
			}
		}
	}
}

// writeGitCheckpoints says which checkpoints the command's git commits
// became, and why commits did not.
func writeGitCheckpoints(b *strings.Builder, res apitypes.ExecResponse) {
	for _, c := range res.Checkpoints {
		fmt.Fprintf(b, "Commit became checkpoint %d (%s): %s\n", c.N, c.Commit[:min(12, len(c.Commit))], c.Label)
	}
	if res.GitNote != "" {
		fmt.Fprintf(b, "Git: %s.\n", res.GitNote)
	}
}
