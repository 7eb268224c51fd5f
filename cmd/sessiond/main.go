// Command sessiond is the session daemon and its command-line client.
//
//	sessiond serve [flags]          run the daemon (HTTP API v1)
//	sessiond quickstart [flags]     build the sample repository and serve it (make run)
//	sessiond <command> [flags]      talk to a running daemon (sessiond --help lists them)
//
// The command line is declared once, as the struct tree rooted at cliRoot:
// one struct per command, its flags and arguments as tagged fields (with
// the environment variable that sets a flag in its env tag), help
// generated from those tags by kong. Every invocation parses into a fresh
// cliRoot, so nothing carries over from one call of run to the next.
// Adding a command is one struct with a Run method and one field in
// cliRoot (or in the group it belongs to).
//
// Exit codes: 0 ok, 1 error, 2 usage (a bad flag, argument or environment
// value), 3 conflict.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/sessiond/sessiond/client"
)

// Exit codes.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitConflict = 3
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// cliRoot is the whole command line. Its own flags are the client's: they
// apply to every command that talks to a daemon.
type cliRoot struct {
	Server    string `help:"URL of the daemon." env:"SESSIOND_SERVER" default:"${server}" placeholder:"URL"`
	Token     string `help:"Bearer token (admin or session)." env:"SESSIOND_TOKEN" placeholder:"T"`
	SessionID string `help:"Session id for the commands that work on one." name:"session" env:"SESSIOND_SESSION" placeholder:"ID"`
	JSON      bool   `help:"Print JSON for scripts instead of text." name:"json"`

	Serve      serveCmd      `cmd:"" help:"Run the daemon (HTTP API v1)." group:"daemon"`
	Quickstart quickstartCmd `cmd:"" help:"Build the sample repository into the data directory and serve it." group:"daemon"`
	MCP        mcpCmd        `cmd:"" name:"mcp" help:"Serve MCP (Model Context Protocol) tools for one session on standard input and output, for coding agents." group:"daemon"`

	Repo    repoCmd    `cmd:"" help:"Repositories: ls, add, init, branches, policy." group:"client"`
	Session sessionCmd `cmd:"" help:"Sessions: new, ls, show, rm." group:"client"`
	Node    nodeCmd    `cmd:"" help:"The nodes of a cluster: ls, drain." group:"client"`

	Ls     lsCmd     `cmd:"" help:"List the session's files." group:"files"`
	Cat    catCmd    `cmd:"" help:"Print a file of the session." group:"files"`
	Put    putCmd    `cmd:"" help:"Write a file from FILE or standard input (with --mode alone: change only the mode)." group:"files"`
	Chmod  chmodCmd  `cmd:"" help:"Change only the mode of a file." group:"files"`
	Rm     rmCmd     `cmd:"" help:"Delete a file (-r: a directory)." group:"files"`
	Grep   grepCmd   `cmd:"" help:"Search the session's files (exit 1 when nothing matches)." group:"files"`
	Log    logCmd    `cmd:"" help:"List the session's mutations." group:"files"`
	Diff   diffCmd   `cmd:"" help:"Print the session's changes as a unified diff." group:"files"`
	Events eventsCmd `cmd:"" help:"Follow a session's (or, with --repo, a repository's) events." group:"files"`

	Exec     execCmd     `cmd:"" help:"Run a command on the session's view (after --); what it changes is recorded. Exits with the command's code." group:"run"`
	Checkout checkoutCmd `cmd:"" help:"Write the session's view into a new directory." group:"run"`
	Service  serviceCmd  `cmd:"" help:"Services: start, ls, logs, stop (long-running processes, their ports reached through the daemon)." group:"run"`
	Port     portCmd     `cmd:"" help:"Ports of the session's services: link." group:"run"`

	Checkpoint checkpointCmd `cmd:"" help:"Take a checkpoint (checkpoint ls lists them)." group:"history"`
	Rollback   rollbackCmd   `cmd:"" help:"Roll the session back to a checkpoint or to its base." group:"history"`
	Fork       forkCmd       `cmd:"" help:"Fork the session into a new one." group:"history"`
	Rebase     rebaseCmd     `cmd:"" help:"Move the session onto a newer base." group:"history"`
	Merge      mergeCmd      `cmd:"" help:"Merge another session's changes into this one." group:"history"`
	Conflicts  conflictsCmd  `cmd:"" help:"List the session's unresolved conflicts." group:"history"`
	Resolve    resolveCmd    `cmd:"" help:"Mark conflicted paths resolved as their files are now." group:"history"`

	Changeset changesetCmd `cmd:"" help:"Changesets: submit, ls, show, review, accept, undo, layers." group:"changesets"`
	Reviewer  reviewerCmd  `cmd:"" help:"Reviewer tokens: add (admin token only)." group:"changesets"`

	Help helpCmd `cmd:"" help:"Show help for a command." hidden:""`
}

// cli is what a client command runs with: the parsed root flags, a client
// for the daemon and the standard streams.
type cli struct {
	server, token, session string
	json                   bool
	c                      *client.Client
	stdin                  io.Reader
	stdout, stderr         io.Writer
}

// kongExit is how kong's exit (after --help) unwinds to run.
type kongExit struct{ code int }

func newParser(root *cliRoot, stdout, stderr io.Writer) (*kong.Kong, error) {
	return kong.New(root,
		kong.Name("sessiond"),
		kong.Description("The session daemon and its client. Exit codes: 0 ok, 1 error, 2 usage, 3 conflict."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(kongExit{code}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.ValueFormatter(helpValue),
		kong.Help(printHelp),
		kong.Vars{"server": client.DefaultServer, "user": os.Getenv("USER")},
		kong.ExplicitGroups([]kong.Group{
			{Key: "daemon", Title: "Daemon"},
			{Key: "client", Title: "Repositories and sessions"},
			{Key: "files", Title: "Files of a session"},
			{Key: "history", Title: "Checkpoints, forks, rebase and merge"},
			{Key: "changesets", Title: "Changesets"},
			{Key: "run", Title: "Running commands on a session"},
		}),
	)
}

// daemonHelpHides names, per daemon command, the root flags its help
// leaves out: the client's, which serve and quickstart do not read, and
// which mcp reads but for --json. They still parse (a script may give
// them to every command), they are only not described where they do
// nothing.
var daemonHelpHides = map[string][]string{
	"serve":      {"server", "token", "session", "json"},
	"quickstart": {"server", "token", "session", "json"},
	"mcp":        {"json"},
}

// printHelp is kong's help without the root flags the selected daemon
// command does not read.
func printHelp(options kong.HelpOptions, ctx *kong.Context) error {
	if cmd := ctx.Selected(); cmd != nil {
		top := cmd
		for top.Parent != nil && top.Parent.Type != kong.ApplicationNode {
			top = top.Parent
		}
		for _, f := range ctx.Model.Flags {
			if !f.Hidden && slices.Contains(daemonHelpHides[top.Name], f.Name) {
				f.Hidden = true
				defer func() { f.Hidden = false }()
			}
		}
	}
	return kong.DefaultHelpPrinter(options, ctx)
}

// helpValue is a flag's help with its default and its variable: "(default
// 128MiB; $SESSIOND_MAX_BODY_BYTES)". A help text that already says what
// happens by default, and a switch (off unless given), show no default.
func helpValue(v *kong.Value) string {
	var notes []string
	if v.HasDefault && v.Default != "" && !v.IsBool() && !strings.Contains(v.Help, "default") {
		notes = append(notes, "default "+v.Default)
	}
	for _, e := range v.Tag.Envs {
		notes = append(notes, "$"+e)
	}
	if len(notes) == 0 {
		return v.Help
	}
	help, dot := strings.CutSuffix(v.Help, ".")
	out := strings.TrimSpace(help + " (" + strings.Join(notes, "; ") + ")")
	if dot {
		out += "."
	}
	return out
}

// run parses args into a fresh command tree and runs the command.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	var root cliRoot
	parser, err := newParser(&root, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "sessiond:", err)
		return exitError
	}
	if len(args) == 0 { // the usage, on standard error
		parser.Stdout = stderr
		args, code = []string{"--help"}, exitUsage
	}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(kongExit)
			if !ok {
				panic(r)
			}
			if code == exitOK {
				code = e.code
			}
		}
	}()
	kctx, err := parser.Parse(args)
	if joined, ok := joinNegativeValues(args); err != nil && ok {
		// "--timeout -5s": kong reads "-5s" as flags. Given as
		// --timeout=-5s it reaches the flag, whose own check says what
		// it wants (its error, not kong's about a short flag).
		var again cliRoot
		if p2, perr := newParser(&again, stdout, stderr); perr == nil {
			kctx, err = p2.Parse(joined)
			root = again
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "sessiond: %v\n", err)
		var pe *kong.ParseError
		if errors.As(err, &pe) && pe.Context != nil && pe.Context.Selected() != nil {
			fmt.Fprintf(stderr, "(sessiond %s --help shows its usage)\n", pe.Context.Selected().Path())
		}
		return exitUsage
	}
	// The client's daemon URL, checked before any command that talks to
	// one (the daemon's own commands ignore it).
	if cmd := strings.Fields(kctx.Command()); len(cmd) > 0 && cmd[0] != "serve" && cmd[0] != "quickstart" && cmd[0] != "help" {
		if err := checkServer(root.Server); err != nil {
			fmt.Fprintf(stderr, "sessiond: %v\n", err)
			return exitUsage
		}
	}
	x := &cli{server: root.Server, token: root.Token, session: root.SessionID, json: root.JSON,
		c: client.New(root.Server, root.Token), stdin: stdin, stdout: stdout, stderr: stderr}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	kctx.BindTo(ctx, (*context.Context)(nil))
	if err := kctx.Run(x); err != nil {
		return x.fail(err)
	}
	return exitOK
}

// negativeValue is an argument that reads as a negative number or
// duration ("-5", "-5s", "-1.5h"), which no flag's name can be.
var negativeValue = regexp.MustCompile(`^-[0-9.]`)

// joinNegativeValues joins a long flag and a negative value after it into
// one argument (--timeout -5s becomes --timeout=-5s), before any "--";
// ok reports whether there was one.
func joinNegativeValues(args []string) (joined []string, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			joined = append(joined, args[i:]...)
			break
		}
		if strings.HasPrefix(a, "--") && !strings.Contains(a, "=") && i+1 < len(args) && negativeValue.MatchString(args[i+1]) {
			joined = append(joined, a+"="+args[i+1])
			i, ok = i+1, true
			continue
		}
		joined = append(joined, a)
	}
	return joined, ok
}

// helpCmd is `sessiond help [COMMAND…]`, the same as --help.
type helpCmd struct {
	Command []string `arg:"" optional:"" help:"The command to describe."`
}

func (h *helpCmd) Run(x *cli) error {
	var root cliRoot
	parser, err := newParser(&root, x.stdout, x.stderr)
	if err != nil {
		return err
	}
	_, err = parser.Parse(append(h.Command, "--help"))
	if err != nil {
		return usagef("help %s: %v", strings.Join(h.Command, " "), err)
	}
	return nil
}
