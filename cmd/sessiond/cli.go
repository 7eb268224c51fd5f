package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sessiond/sessiond/api"
	"github.com/sessiond/sessiond/client"
)

// The client commands: each parses its flags (interspersed with its
// arguments), makes one or two API calls and prints the answer, as a
// table or text for people or as JSON with --json.

// usageError is a mistake on the command line (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

type cli struct {
	server, token, session string
	json                   bool
	c                      *client.Client
	stdin                  io.Reader
	stdout, stderr         io.Writer
}

// command is one client command.
type command struct {
	flags func(fs *flag.FlagSet) // its own flags
	run   func(ctx context.Context, x *cli, args []string) error
}

func clientCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	name := args[0]
	args = args[1:]
	// Two-word commands.
	if (name == "session" || name == "repo" || name == "checkpoint" || name == "changeset") && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		if _, ok := commands[name+" "+args[0]]; ok {
			name, args = name+" "+args[0], args[1:]
		}
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "sessiond: unknown command %q (sessiond help lists them)\n", name)
		return exitUsage
	}
	x := &cli{stdin: stdin, stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("sessiond "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&x.server, "server", env("SESSIOND_SERVER", client.DefaultServer), "server URL [SESSIOND_SERVER]")
	fs.StringVar(&x.token, "token", os.Getenv("SESSIOND_TOKEN"), "bearer token [SESSIOND_TOKEN]")
	fs.StringVar(&x.session, "session", os.Getenv("SESSIOND_SESSION"), "session id [SESSIOND_SESSION]")
	fs.BoolVar(&x.json, "json", false, "print JSON")
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	x.c = client.New(x.server, x.token)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := cmd.run(ctx, x, pos); err != nil {
		return x.fail(err)
	}
	return exitOK
}

// parseInterspersed parses flags anywhere among the arguments; "--" ends
// the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func (x *cli) fail(err error) int {
	var ce *exitCodeError
	if errors.As(err, &ce) {
		return ce.code
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(x.stderr, "sessiond:", ue.msg)
		return exitUsage
	}
	var ae *client.Error
	if errors.As(err, &ae) {
		if x.json {
			d := map[string]any{"code": ae.Code, "message": ae.Message}
			for k, v := range ae.Details {
				d[k] = v
			}
			x.printJSON(map[string]any{"error": d})
		} else {
			fmt.Fprintf(x.stderr, "sessiond: %s: %s\n", ae.Code, ae.Message)
		}
		switch ae.Code {
		case api.CodeConflict, api.CodePreconditionFailed, api.CodeSessionClosed:
			return exitConflict
		}
		return exitError
	}
	fmt.Fprintln(x.stderr, "sessiond:", err)
	return exitError
}

func (x *cli) printJSON(v any) {
	enc := json.NewEncoder(x.stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// out prints v as JSON with --json, else calls human.
func (x *cli) out(v any, human func(w io.Writer)) error {
	if x.json {
		x.printJSON(v)
		return nil
	}
	human(x.stdout)
	return nil
}

func table(w io.Writer, header string, rows func(tw io.Writer)) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	rows(tw)
	tw.Flush()
}

func (x *cli) needSession(args []string, i int) (string, error) {
	if len(args) > i {
		return args[i], nil
	}
	if x.session == "" {
		return "", usagef("no session: give --session ID or set SESSIOND_SESSION")
	}
	return x.session, nil
}

func (x *cli) sessionOnly() (string, error) { return x.needSession(nil, 0) }

func nargs(args []string, min, max int, usage string) error {
	if len(args) < min || (max >= 0 && len(args) > max) {
		return usagef("usage: sessiond %s", usage)
	}
	return nil
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"repo ls":       {run: repoLs},
		"repo add":      {run: repoAdd},
		"repo init":     {run: repoInit},
		"repo branches": {run: repoBranches},
		"session new":   sessionNew(),
		"session ls":    sessionLs(),
		"session show":  {run: sessionShow},
		"session rm":    {run: sessionRm},
		"ls":            lsCmd(),
		"cat":           {run: catCmd},
		"put":           putCmd(),
		"rm":            rmCmd(),
		"grep":          grepCmd(),
		"log":           logCmd(),
		"checkpoint":    checkpointCmd(),
		"checkpoint ls": {run: checkpointLs},
		"rollback":      {run: rollbackCmd},
		"fork":          forkCmd(),
		"events":        eventsCmd(),
		"diff":          diffCmd(),
	}
	addChangesetCommands(commands)
}

// Repositories.

func repoLs(ctx context.Context, x *cli, args []string) error {
	rs, err := x.c.ListRepos(ctx)
	if err != nil {
		return err
	}
	return x.out(map[string]any{"repos": rs}, func(w io.Writer) {
		table(w, "NAME\tPATH\tCREATED", func(tw io.Writer) {
			for _, r := range rs {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.Path, r.CreatedAt.Local().Format(time.DateTime))
			}
		})
	})
}

func repoAdd(ctx context.Context, x *cli, args []string) error {
	if err := nargs(args, 2, 2, "repo add NAME PATH"); err != nil {
		return err
	}
	r, err := x.c.CreateRepo(ctx, api.CreateRepoRequest{Name: args[0], Path: args[1]})
	if err != nil {
		return err
	}
	return x.out(r, func(w io.Writer) { fmt.Fprintf(w, "registered %s at %s\n", r.Name, r.Path) })
}

func repoInit(ctx context.Context, x *cli, args []string) error {
	if err := nargs(args, 1, 1, "repo init NAME"); err != nil {
		return err
	}
	r, err := x.c.CreateRepo(ctx, api.CreateRepoRequest{Name: args[0], Init: true})
	if err != nil {
		return err
	}
	return x.out(r, func(w io.Writer) { fmt.Fprintf(w, "created %s at %s\n", r.Name, r.Path) })
}

func repoBranches(ctx context.Context, x *cli, args []string) error {
	if err := nargs(args, 1, 1, "repo branches NAME"); err != nil {
		return err
	}
	bs, err := x.c.Branches(ctx, args[0])
	if err != nil {
		return err
	}
	return x.out(map[string]any{"branches": bs}, func(w io.Writer) {
		table(w, "BRANCH\tCOMMIT", func(tw io.Writer) {
			for _, b := range bs {
				fmt.Fprintf(tw, "%s\t%s\n", b.Name, b.Commit)
			}
		})
	})
}

// Sessions.

func sessionNew() command {
	var req api.CreateSessionRequest
	var ttl time.Duration
	var policy string
	var quiet bool
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&req.Repo, "repo", "", "repository name")
			fs.StringVar(&req.Base, "base", "", "branch, tag or commit (default: the repository's HEAD)")
			fs.StringVar(&req.AgentID, "agent-id", os.Getenv("USER"), "agent id")
			fs.StringVar(&req.AgentName, "agent-name", "", "agent name")
			fs.StringVar(&req.Intent, "intent", "", "what the session is for")
			fs.StringVar(&req.Mode, "mode", "", "read_write (default) or read_only")
			fs.DurationVar(&ttl, "ttl", 0, "idle time after which the session expires")
			fs.StringVar(&policy, "policy", "", `path policy as JSON: {"read":[…],"write":[…],"deny":[…]}`)
			fs.BoolVar(&quiet, "q", false, "print only the session id")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			if err := nargs(args, 0, 0, "session new --repo NAME [flags]"); err != nil {
				return err
			}
			if req.Repo == "" {
				return usagef("session new: --repo is required")
			}
			req.TTLSeconds = int64(ttl / time.Second)
			if policy != "" {
				var p api.Policy
				if err := json.Unmarshal([]byte(policy), &p); err != nil {
					return usagef("--policy: %v", err)
				}
				req.Policy = &p
			}
			s, err := x.c.CreateSession(ctx, req)
			if err != nil {
				return err
			}
			if quiet && !x.json {
				fmt.Fprintln(x.stdout, s.ID)
				return nil
			}
			return x.out(s, func(w io.Writer) {
				fmt.Fprintf(w, "session %s on %s at %s\n", s.ID, s.Repo, short(s.BaseCommit))
				fmt.Fprintf(w, "export SESSIOND_SESSION=%s\n", s.ID)
				if s.Token != "" {
					fmt.Fprintf(w, "export SESSIOND_TOKEN=%s\n", s.Token)
				}
			})
		},
	}
}

func sessionLs() command {
	var f client.SessionFilter
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.Repo, "repo", "", "only this repository")
			fs.StringVar(&f.State, "state", "", "only this state")
			fs.StringVar(&f.AgentID, "agent-id", "", "only this agent")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			ss, err := x.c.ListSessions(ctx, f)
			if err != nil {
				return err
			}
			return x.out(api.Sessions{Sessions: ss}, func(w io.Writer) {
				table(w, "ID\tREPO\tSTATE\tMODE\tAGENT\tBASE\tSEQ\tINTENT", func(tw io.Writer) {
					for _, s := range ss {
						base := short(s.BaseCommit)
						if s.BaseRef != "" {
							base = s.BaseRef + "@" + short(s.BaseCommit)
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.ID, s.Repo, s.State, s.Mode, s.AgentID, base, s.Seq, s.Intent)
					}
				})
			})
		},
	}
}

func printSession(w io.Writer, s api.Session) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\nrepo\t%s\nstate\t%s\nmode\t%s\nagent\t%s %s\nintent\t%s\nbase\t%s %s\nhead\t%s\nseq\t%d\ncheckpoints\t%d\ncreated\t%s\n",
		s.ID, s.Repo, s.State, s.Mode, s.AgentID, s.AgentName, s.Intent, s.BaseRef, s.BaseCommit, s.Head, s.Seq, s.Checkpoints,
		s.CreatedAt.Local().Format(time.DateTime))
	if s.Parent != "" {
		fmt.Fprintf(tw, "forked from\t%s\n", s.Parent)
	}
	if s.ExpiresAt != nil {
		fmt.Fprintf(tw, "expires\t%s\n", s.ExpiresAt.Local().Format(time.DateTime))
	}
	tw.Flush()
}

func sessionShow(ctx context.Context, x *cli, args []string) error {
	id, err := x.needSession(args, 0)
	if err != nil {
		return err
	}
	s, err := x.c.GetSession(ctx, id)
	if err != nil {
		return err
	}
	return x.out(s, func(w io.Writer) { printSession(w, s) })
}

func sessionRm(ctx context.Context, x *cli, args []string) error {
	id, err := x.needSession(args, 0)
	if err != nil {
		return err
	}
	s, err := x.c.AbandonSession(ctx, id)
	if err != nil {
		return err
	}
	return x.out(s, func(w io.Writer) { fmt.Fprintf(w, "session %s %s\n", s.ID, s.State) })
}

// Files.

func lsCmd() command {
	var o client.TreeOptions
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&o.Recursive, "r", false, "recursive")
			fs.BoolVar(&o.OnlyModified, "modified", false, "only the session's changes (deletions included)")
			fs.StringVar(&o.Glob, "glob", "", "only paths matching this glob")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			if err := nargs(args, 0, 1, "ls [PREFIX] [-r] [--modified] [--glob G]"); err != nil {
				return err
			}
			id, err := x.sessionOnly()
			if err != nil {
				return err
			}
			if len(args) == 1 {
				o.Prefix = strings.TrimSuffix(args[0], "/")
			}
			es, err := x.c.Tree(ctx, id, o)
			if err != nil {
				return err
			}
			return x.out(api.Tree{Entries: es}, func(w io.Writer) {
				table(w, "MODE\tSTATUS\tSIZE\tPATH", func(tw io.Writer) {
					for _, e := range es {
						p := e.Path
						if e.Type == "dir" {
							p += "/"
						}
						fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", e.Mode, e.Status, e.Size, p)
					}
				})
			})
		},
	}
}

func catCmd(ctx context.Context, x *cli, args []string) error {
	if err := nargs(args, 1, 1, "cat PATH"); err != nil {
		return err
	}
	id, err := x.sessionOnly()
	if err != nil {
		return err
	}
	data, meta, err := x.c.ReadFile(ctx, id, args[0])
	if err != nil {
		return err
	}
	if x.json {
		x.printJSON(map[string]any{"path": args[0], "oid": meta.OID, "mode": meta.Mode, "source": meta.Source, "content": string(data)})
		return nil
	}
	_, err = x.stdout.Write(data)
	return err
}

func putCmd() command {
	var o client.WriteOptions
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&o.Mode, "mode", "", "file mode: 100644, 100755 or 120000")
			fs.StringVar(&o.IfMatch, "if-match", "", "write only over this blob id")
			fs.BoolVar(&o.IfNoneMatch, "create", false, "write only when the file does not exist")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			if err := nargs(args, 1, 2, "put PATH [FILE|-]  (content from FILE or standard input)"); err != nil {
				return err
			}
			id, err := x.sessionOnly()
			if err != nil {
				return err
			}
			var data []byte
			if len(args) == 2 && args[1] != "-" {
				data, err = os.ReadFile(args[1])
			} else {
				data, err = io.ReadAll(x.stdin)
			}
			if err != nil {
				return err
			}
			res, err := x.c.WriteFile(ctx, id, args[0], data, o)
			if err != nil {
				return err
			}
			return x.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "wrote %s (%d bytes, %s) at seq %d\n", args[0], len(data), short(res.File.OID), res.Mutation.Seq)
			})
		},
	}
}

func rmCmd() command {
	var recursive bool
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&recursive, "r", false, "delete a directory and everything below it")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			if err := nargs(args, 1, 1, "rm PATH [-r]"); err != nil {
				return err
			}
			id, err := x.sessionOnly()
			if err != nil {
				return err
			}
			res, err := x.c.DeleteFile(ctx, id, args[0], recursive)
			if err != nil {
				return err
			}
			return x.out(res, func(w io.Writer) { fmt.Fprintf(w, "deleted %s at seq %d\n", args[0], res.Mutation.Seq) })
		},
	}
}

func grepCmd() command {
	var req api.SearchRequest
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&req.Glob, "glob", "", "only files matching this glob")
			fs.StringVar(&req.Prefix, "prefix", "", "only files below this directory")
			fs.BoolVar(&req.CaseInsensitive, "i", false, "ignore case")
			fs.IntVar(&req.MaxResults, "max", 0, "at most this many matches")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			if err := nargs(args, 1, 1, "grep PATTERN [--glob G] [-i]"); err != nil {
				return err
			}
			id, err := x.sessionOnly()
			if err != nil {
				return err
			}
			req.Pattern = args[0]
			res, err := x.c.Search(ctx, id, req)
			if err != nil {
				return err
			}
			return x.out(res, func(w io.Writer) {
				for _, m := range res.Matches {
					fmt.Fprintf(w, "%s:%d:%s\n", m.Path, m.Line, m.Text)
				}
				if res.Truncated {
					fmt.Fprintln(x.stderr, "(more matches left out)")
				}
			})
		},
	}
}

func logCmd() command {
	var after int64
	var limit int
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.Int64Var(&after, "after", 0, "only mutations after this sequence number")
			fs.IntVar(&limit, "limit", 0, "at most this many")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			id, err := x.sessionOnly()
			if err != nil {
				return err
			}
			ms, err := x.c.Mutations(ctx, id, after, limit)
			if err != nil {
				return err
			}
			return x.out(api.Mutations{Mutations: ms}, func(w io.Writer) {
				table(w, "SEQ\tOP\tACTOR\tAT\tPATHS", func(tw io.Writer) {
					for _, m := range ms {
						fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", m.Seq, m.Op, m.Actor, m.At.Local().Format(time.DateTime), strings.Join(m.Paths, " "))
					}
				})
			})
		},
	}
}

// Checkpoints, rollback, fork.

func checkpointCmd() command {
	var label, message string
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&label, "label", "", "a label for the checkpoint")
			fs.StringVar(&message, "m", "", "commit message")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			if err := nargs(args, 0, 0, "checkpoint [--label L] [-m MESSAGE]"); err != nil {
				return err
			}
			id, err := x.sessionOnly()
			if err != nil {
				return err
			}
			cp, err := x.c.Checkpoint(ctx, id, label, message)
			if err != nil {
				return err
			}
			return x.out(cp, func(w io.Writer) {
				fmt.Fprintf(w, "checkpoint %d: commit %s at seq %d (%s)\n", cp.N, cp.Commit, cp.Seq, cp.Ref)
			})
		},
	}
}

func checkpointLs(ctx context.Context, x *cli, args []string) error {
	id, err := x.sessionOnly()
	if err != nil {
		return err
	}
	cps, err := x.c.Checkpoints(ctx, id)
	if err != nil {
		return err
	}
	return x.out(api.Checkpoints{Checkpoints: cps}, func(w io.Writer) {
		table(w, "N\tCOMMIT\tSEQ\tCREATED\tLABEL", func(tw io.Writer) {
			for _, c := range cps {
				fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\n", c.N, short(c.Commit), c.Seq, c.CreatedAt.Local().Format(time.DateTime), c.Label)
			}
		})
	})
}

func rollbackCmd(ctx context.Context, x *cli, args []string) error {
	if err := nargs(args, 1, 1, "rollback CHECKPOINT  (number, id or commit)"); err != nil {
		return err
	}
	id, err := x.sessionOnly()
	if err != nil {
		return err
	}
	res, err := x.c.Rollback(ctx, id, args[0])
	if err != nil {
		return err
	}
	return x.out(res, func(w io.Writer) {
		fmt.Fprintf(w, "rolled back to checkpoint %s: %d paths changed, now checkpoint %d\n", args[0], len(res.Mutation.Paths), res.Checkpoint.N)
	})
}

func forkCmd() command {
	var req api.ForkRequest
	var quiet bool
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&req.Checkpoint, "checkpoint", "", "fork from this checkpoint instead of the current view")
			fs.StringVar(&req.AgentID, "agent-id", os.Getenv("USER"), "agent id of the new session")
			fs.StringVar(&req.AgentName, "agent-name", "", "agent name of the new session")
			fs.StringVar(&req.Intent, "intent", "", "what the new session is for")
			fs.BoolVar(&quiet, "q", false, "print only the new session id")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			id, err := x.needSession(args, 0)
			if err != nil {
				return err
			}
			s, err := x.c.Fork(ctx, id, req)
			if err != nil {
				return err
			}
			if quiet && !x.json {
				fmt.Fprintln(x.stdout, s.ID)
				return nil
			}
			return x.out(s, func(w io.Writer) {
				fmt.Fprintf(w, "session %s forked from %s\nexport SESSIOND_SESSION=%s\n", s.ID, id, s.ID)
				if s.Token != "" {
					fmt.Fprintf(w, "export SESSIOND_TOKEN=%s\n", s.Token)
				}
			})
		},
	}
}

func eventsCmd() command {
	var after int64
	var repo string
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.Int64Var(&after, "after", 0, "resume after this event id")
			fs.StringVar(&repo, "repo", "", "follow a repository instead of a session")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			var (
				ch  <-chan api.Event
				err error
			)
			if repo != "" {
				ch, err = x.c.RepoEvents(ctx, repo, after)
			} else {
				id, serr := x.sessionOnly()
				if serr != nil {
					return serr
				}
				ch, err = x.c.SessionEvents(ctx, id, after)
			}
			if err != nil {
				return err
			}
			for e := range ch {
				if x.json {
					b, _ := json.Marshal(e)
					fmt.Fprintln(x.stdout, string(b))
					continue
				}
				p, _ := json.Marshal(e.Payload)
				fmt.Fprintf(x.stdout, "%s\t%s\t%s\n", strconv.FormatInt(e.ID, 10), e.Type, p)
			}
			return nil
		},
	}
}

func diffCmd() command {
	var against, color string
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&against, "against", "base", "base, or a checkpoint (number, id or commit)")
			fs.StringVar(&color, "color", "auto", "auto, always or never")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			if err := nargs(args, 0, 0, "diff [--against base|CHECKPOINT] [--json]"); err != nil {
				return err
			}
			id, err := x.sessionOnly()
			if err != nil {
				return err
			}
			if x.json {
				d, err := x.c.DiffJSON(ctx, id, against)
				if err != nil {
					return err
				}
				x.printJSON(d)
				return nil
			}
			text, err := x.c.Diff(ctx, id, against)
			if err != nil {
				return err
			}
			if color == "always" || (color == "auto" && isTerminal(x.stdout)) {
				text = colorDiff(text)
			}
			_, err = x.stdout.Write(text)
			return err
		},
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// colorDiff colours a unified diff as git does: headers bold, hunk
// headers cyan, removals red, additions green.
func colorDiff(text []byte) []byte {
	var out strings.Builder
	for _, line := range strings.SplitAfter(string(text), "\n") {
		body := strings.TrimSuffix(line, "\n")
		nl := line[len(body):]
		switch {
		case strings.HasPrefix(body, "diff --git"), strings.HasPrefix(body, "index "),
			strings.HasPrefix(body, "--- "), strings.HasPrefix(body, "+++ "),
			strings.HasPrefix(body, "new file"), strings.HasPrefix(body, "deleted file"),
			strings.HasPrefix(body, "rename "), strings.HasPrefix(body, "similarity "):
			out.WriteString("\x1b[1m" + body + "\x1b[m" + nl)
		case strings.HasPrefix(body, "@@"):
			out.WriteString("\x1b[36m" + body + "\x1b[m" + nl)
		case strings.HasPrefix(body, "-"):
			out.WriteString("\x1b[31m" + body + "\x1b[m" + nl)
		case strings.HasPrefix(body, "+"):
			out.WriteString("\x1b[32m" + body + "\x1b[m" + nl)
		default:
			out.WriteString(line)
		}
	}
	return []byte(out.String())
}
