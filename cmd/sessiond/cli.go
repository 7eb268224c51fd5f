package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
)

// The client commands: each is a struct whose fields are its flags and
// arguments; its Run makes one or two API calls and prints the answer, as
// a table or text for people or as JSON with --json.

// usageError is a mistake on the command line found after parsing (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitCodeError ends a command with a code and no further message.
type exitCodeError struct{ code int }

func (e *exitCodeError) Error() string { return "exit " + strconv.Itoa(e.code) }

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
		case apitypes.CodeConflict, apitypes.CodePreconditionFailed, apitypes.CodeSessionClosed, apitypes.CodeSessionBusy:
			return exitConflict
		}
		return exitError
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		// Nothing listens there: say where, and how to start a daemon.
		fmt.Fprintf(x.stderr, "sessiond: no daemon answers at %s (connection refused): start one with `sessiond serve`, or give its URL with --server or SESSIOND_SERVER\n", x.server)
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

// quotePaths is paths for a person, each quoted as git quotes it
// (merge.QuotePath, core.quotePath), joined by spaces.
func quotePaths(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = merge.QuotePath(p)
	}
	return strings.Join(q, " ")
}

func table(w io.Writer, header string, rows func(tw io.Writer)) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	rows(tw)
	tw.Flush()
}

// sessionOr is the session a command works on: the one given as its
// argument, else --session.
func (x *cli) sessionOr(arg string) (string, error) {
	if arg != "" {
		return arg, nil
	}
	if x.session == "" {
		return "", usagef("no session: give --session ID or set SESSIOND_SESSION")
	}
	return x.session, nil
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// Repositories.

type repoCmd struct {
	Ls       repoLsCmd       `cmd:"" help:"List the registered repositories."`
	Add      repoAddCmd      `cmd:"" help:"Register an existing repository."`
	Init     repoInitCmd     `cmd:"" help:"Create a bare repository under the data directory."`
	Branches repoBranchesCmd `cmd:"" help:"List a repository's branches."`
	Policy   repoPolicyCmd   `cmd:"" help:"A repository's policy: show, set."`
	Env      repoEnvCmd      `cmd:"" help:"A repository's environment: variables, secrets, setup and layers: show, set, layers, rebuild."`
}

type repoLsCmd struct{}

func (*repoLsCmd) Run(ctx context.Context, x *cli) error {
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

type repoAddCmd struct {
	Name string `arg:"" help:"Name to register it as."`
	Path string `arg:"" help:"Path of the repository (bare or with a work tree)."`
}

func (c *repoAddCmd) Run(ctx context.Context, x *cli) error {
	r, err := x.c.CreateRepo(ctx, apitypes.CreateRepoRequest{Name: c.Name, Path: c.Path})
	if err != nil {
		return err
	}
	return x.out(r, func(w io.Writer) { fmt.Fprintf(w, "registered %s at %s\n", r.Name, r.Path) })
}

type repoInitCmd struct {
	Name string `arg:"" help:"Name of the new repository."`
}

func (c *repoInitCmd) Run(ctx context.Context, x *cli) error {
	r, err := x.c.CreateRepo(ctx, apitypes.CreateRepoRequest{Name: c.Name, Init: true})
	if err != nil {
		return err
	}
	return x.out(r, func(w io.Writer) { fmt.Fprintf(w, "created %s at %s\n", r.Name, r.Path) })
}

type repoBranchesCmd struct {
	Name string `arg:"" help:"Repository name."`
}

func (c *repoBranchesCmd) Run(ctx context.Context, x *cli) error {
	bs, err := x.c.Branches(ctx, c.Name)
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

type sessionCmd struct {
	New  sessionNewCmd  `cmd:"" help:"Start a session on a repository."`
	Ls   sessionLsCmd   `cmd:"" help:"List sessions."`
	Show sessionShowCmd `cmd:"" help:"Show a session."`
	Rm   sessionRmCmd   `cmd:"" help:"Abandon a session."`
}

type sessionNewCmd struct {
	Repo      string   `help:"Repository name." required:"" placeholder:"NAME"`
	Base      string   `help:"Branch, tag or commit (default: the repository's HEAD)." placeholder:"REV"`
	AgentID   string   `help:"Agent id (default: the name, else $USER); one of the two alone is both." placeholder:"A"`
	AgentName string   `help:"Agent name (default: the id)." placeholder:"NAME"`
	Intent    string   `help:"What the session is for." placeholder:"TEXT"`
	Mode      string   `help:"read_write (default) or read_only." placeholder:"MODE"`
	TTL       seconds  `help:"Idle time after which the session expires: seconds (600) or a duration (10m)." name:"ttl" placeholder:"DURATION"`
	Policy    string   `help:"Path policy as JSON: {\"read\":[…],\"write\":[…],\"deny\":[…]}." placeholder:"JSON"`
	Caches    string   `help:"Tool caches of its commands: shared (the repository's) or private (the session's own)." enum:"shared,private" default:"shared"`
	Env       []string `help:"A plain variable NAME=VALUE every command of the session gets (repeatable)." sep:"none" placeholder:"NAME=VALUE"`
	Prepare   bool     `help:"Build the repository's environment layer before answering, so the first command does not wait for it."`
	Quiet     bool     `help:"Print only the session id." short:"q"`
}

func (c *sessionNewCmd) Run(ctx context.Context, x *cli) error {
	if c.AgentID == "" && c.AgentName == "" {
		c.AgentID = os.Getenv("USER")
	}
	req := apitypes.CreateSessionRequest{Repo: c.Repo, Base: c.Base, AgentID: c.AgentID, AgentName: c.AgentName,
		Intent: c.Intent, Mode: c.Mode, TTLSeconds: int64(time.Duration(c.TTL) / time.Second), Caches: c.Caches, Prepare: c.Prepare}
	for _, kv := range c.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return usagef("--env %q: want NAME=VALUE", kv)
		}
		if req.Env == nil {
			req.Env = map[string]string{}
		}
		req.Env[k] = v
	}
	if c.TTL > 0 && time.Duration(c.TTL) < time.Second {
		return usagef("--ttl %s: the API counts whole seconds", time.Duration(c.TTL))
	}
	if c.Policy != "" {
		var p apitypes.Policy
		dec := json.NewDecoder(strings.NewReader(c.Policy))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return usagef("--policy: %v", err)
		}
		req.Policy = &p
	}
	s, err := x.c.CreateSession(ctx, req)
	if err != nil {
		return err
	}
	if c.Quiet && !x.json {
		fmt.Fprintln(x.stdout, s.ID)
		return nil
	}
	return x.out(s, func(w io.Writer) {
		fmt.Fprintf(w, "session %s on %s at %s\n", s.ID, s.Repo, short(s.BaseCommit))
		fmt.Fprintf(w, "export SESSIOND_SESSION=%s\n", s.ID)
		if s.Token != "" {
			fmt.Fprintf(w, "export SESSIOND_TOKEN=%s\n", s.Token)
		}
		if e := s.Environment; e != nil {
			// Commented, so the printed lines can still be pasted in a shell.
			fmt.Fprintf(w, "# environment %s %s\n", e.Status, e.Key)
			if e.Error != "" || e.Problem != "" {
				fmt.Fprintf(w, "# %s%s\n", e.Error, e.Problem)
			}
		}
	})
}

type sessionLsCmd struct {
	Repo    string `help:"Only this repository." placeholder:"NAME"`
	State   string `help:"Only this state (active, accepted, abandoned, expired, …)." placeholder:"STATE"`
	AgentID string `help:"Only this agent." placeholder:"A"`
}

func (c *sessionLsCmd) Run(ctx context.Context, x *cli) error {
	ss, err := x.c.ListSessions(ctx, client.SessionFilter{Repo: c.Repo, State: c.State, AgentID: c.AgentID})
	if err != nil {
		return err
	}
	return x.out(apitypes.Sessions{Sessions: ss}, func(w io.Writer) {
		table(w, "ID\tREPO\tSTATE\tMODE\tAGENT\tBASE\tSEQ\tINTENT", func(tw io.Writer) {
			for _, s := range ss {
				base := short(s.BaseCommit)
				if s.BaseRef != "" {
					base = s.BaseRef + "@" + short(s.BaseCommit)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.ID, s.Repo, s.State, s.Mode, record.AgentLabel(s.AgentID, s.AgentName), base, s.Seq, s.Intent)
			}
		})
	})
}

func printSession(w io.Writer, s apitypes.Session) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\nrepo\t%s\nstate\t%s\nmode\t%s\nagent\t%s\nintent\t%s\nbase\t%s %s\nhead\t%s\nseq\t%d\ncheckpoints\t%d\ncreated\t%s\n",
		s.ID, s.Repo, s.State, s.Mode, record.AgentLabel(s.AgentID, s.AgentName), s.Intent, s.BaseRef, s.BaseCommit, s.Head, s.Seq, s.Checkpoints,
		s.CreatedAt.Local().Format(time.DateTime))
	if s.Parent != "" {
		fmt.Fprintf(tw, "forked from\t%s\n", s.Parent)
	}
	if s.ExpiresAt != nil {
		fmt.Fprintf(tw, "expires\t%s\n", s.ExpiresAt.Local().Format(time.DateTime))
	}
	tw.Flush()
}

type sessionShowCmd struct {
	ID string `arg:"" optional:"" help:"Session id (default: --session)."`
}

func (c *sessionShowCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr(c.ID)
	if err != nil {
		return err
	}
	s, err := x.c.GetSession(ctx, id)
	if err != nil {
		return err
	}
	return x.out(s, func(w io.Writer) { printSession(w, s) })
}

type sessionRmCmd struct {
	ID string `arg:"" optional:"" help:"Session id (default: --session)."`
}

func (c *sessionRmCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr(c.ID)
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

type lsCmd struct {
	Prefix    string `arg:"" optional:"" help:"Directory to list (src and src/ are the same); default the root."`
	Recursive bool   `help:"List everything below, not only the directory's entries." short:"r"`
	Modified  bool   `help:"Only the session's changes (deletions included)."`
	Glob      string `help:"Only paths matching this glob." placeholder:"GLOB"`
}

func (c *lsCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	// The prefix goes to the API as given: it is the API's rule, not the
	// client's, that "src/" names the directory src.
	es, err := x.c.Tree(ctx, id, client.TreeOptions{Prefix: c.Prefix, Recursive: c.Recursive, OnlyModified: c.Modified, Glob: c.Glob})
	if err != nil {
		return err
	}
	return x.out(apitypes.Tree{Entries: es}, func(w io.Writer) {
		table(w, "MODE\tSTATUS\tSIZE\tPATH", func(tw io.Writer) {
			for _, e := range es {
				p := e.Path
				if e.Type == "dir" {
					p += "/"
				}
				// Quoted as git quotes paths (core.quotePath), so a tab
				// or newline in a name cannot break the table.
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", e.Mode, e.Status, e.Size, merge.QuotePath(p))
			}
		})
	})
}

type catCmd struct {
	Path string `arg:"" help:"File to print."`
}

func (c *catCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	data, meta, err := x.c.ReadFile(ctx, id, c.Path)
	if err != nil {
		return err
	}
	if x.json {
		x.printJSON(map[string]any{"path": c.Path, "oid": meta.OID, "mode": meta.Mode, "source": meta.Source, "content": string(data)})
		return nil
	}
	_, err = x.stdout.Write(data)
	return err
}

type putCmd struct {
	Path    string   `arg:"" help:"File to write."`
	From    string   `arg:"" optional:"" name:"file" help:"Read the content from FILE, or - for standard input (the default without --mode)."`
	Mode    fileMode `help:"File mode: 644, 755, 100644, 100755 or 120000 (symlink). Without FILE, only the mode changes." placeholder:"MODE"`
	IfMatch string   `help:"Write only over this blob id." placeholder:"OID"`
	Create  bool     `help:"Write only when the file does not exist."`
}

func (c *putCmd) Run(ctx context.Context, x *cli) error {
	if c.Mode != "" && c.From == "" {
		return (&chmodCmd{Mode: c.Mode, Path: c.Path, IfMatch: c.IfMatch}).Run(ctx, x)
	}
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	var data []byte
	if c.From != "" && c.From != "-" {
		data, err = os.ReadFile(c.From)
	} else {
		data, err = io.ReadAll(x.stdin)
	}
	if err != nil {
		return err
	}
	res, err := x.c.WriteFile(ctx, id, c.Path, data, client.WriteOptions{Mode: string(c.Mode), IfMatch: c.IfMatch, IfNoneMatch: c.Create})
	if err != nil {
		return err
	}
	return x.out(res, func(w io.Writer) {
		fmt.Fprintf(w, "wrote %s (%s, %s) at seq %d\n", merge.QuotePath(c.Path), count(len(data), "byte"), short(res.File.OID), res.Mutation.Seq)
	})
}

// chmodCmd changes a file's mode and nothing else: it writes the file's
// own content back with the new mode, only over the version it read.
type chmodCmd struct {
	Mode    fileMode `arg:"" help:"644, 755, 100644, 100755 or 120000."`
	Path    string   `arg:"" help:"File whose mode to change."`
	IfMatch string   `help:"Change it only at this blob id." placeholder:"OID"`
}

func (c *chmodCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	data, meta, err := x.c.ReadFile(ctx, id, c.Path)
	if err != nil {
		return err
	}
	if c.IfMatch != "" && c.IfMatch != meta.OID {
		return &client.Error{Status: 412, Code: apitypes.CodePreconditionFailed,
			Message: fmt.Sprintf("%q is at version %s, not %s", c.Path, meta.OID, c.IfMatch)}
	}
	res, err := x.c.WriteFile(ctx, id, c.Path, data, client.WriteOptions{Mode: string(c.Mode), IfMatch: meta.OID})
	if err != nil {
		return err
	}
	return x.out(res, func(w io.Writer) {
		// A mutation without paths is the API's answer for a write that
		// changed nothing: nothing was recorded, so there is no seq to name.
		if len(res.Mutation.Paths) == 0 {
			fmt.Fprintf(w, "mode of %s is already %s: nothing changed\n", merge.QuotePath(c.Path), meta.Mode)
			return
		}
		fmt.Fprintf(w, "mode of %s: %s → %s at seq %d\n", merge.QuotePath(c.Path), meta.Mode, res.File.Mode, res.Mutation.Seq)
	})
}

type rmCmd struct {
	Path      string `arg:"" help:"File or directory to delete."`
	Recursive bool   `help:"Delete a directory and everything below it." short:"r"`
}

func (c *rmCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	res, err := x.c.DeleteFile(ctx, id, c.Path, c.Recursive)
	if err != nil {
		return err
	}
	return x.out(res, func(w io.Writer) { fmt.Fprintf(w, "deleted %s at seq %d\n", merge.QuotePath(c.Path), res.Mutation.Seq) })
}

type grepCmd struct {
	Pattern    string `arg:"" help:"RE2 regular expression."`
	Glob       string `help:"Only files matching this glob." placeholder:"GLOB"`
	Prefix     string `help:"Only files below this directory." placeholder:"DIR"`
	IgnoreCase bool   `help:"Ignore case." short:"i"`
	Max        int    `help:"At most this many matches." placeholder:"N"`
	Context    int    `help:"Show N lines of context around each match (path-N-line), as grep -C." short:"C" placeholder:"N"`
}

// Run prints the matches; like grep, it exits 1 when nothing matches.
func (c *grepCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	if c.Max < 0 {
		return usagef("--max %d: want a non-negative number", c.Max)
	}
	if c.Context < 0 {
		return usagef("--context %d: want a non-negative number", c.Context)
	}
	res, err := x.c.Search(ctx, id, apitypes.SearchRequest{Pattern: c.Pattern, Glob: c.Glob, Prefix: c.Prefix,
		CaseInsensitive: c.IgnoreCase, MaxResults: c.Max, Context: c.Context})
	if err != nil {
		return err
	}
	_ = x.out(res, func(w io.Writer) {
		// The engine gives each match its context lines, none twice; "--"
		// separates groups that do not touch, as grep -C prints them.
		lastPath, lastLine := "", 0
		for _, m := range res.Matches {
			p, first := merge.QuotePath(m.Path), m.Line-len(m.Before)
			if c.Context > 0 && lastPath != "" && (m.Path != lastPath || first > lastLine+1) {
				fmt.Fprintln(w, "--")
			}
			for i, l := range m.Before {
				fmt.Fprintf(w, "%s-%d-%s\n", p, first+i, l)
			}
			fmt.Fprintf(w, "%s:%d:%s\n", p, m.Line, m.Text)
			for i, l := range m.After {
				fmt.Fprintf(w, "%s-%d-%s\n", p, m.Line+1+i, l)
			}
			lastPath, lastLine = m.Path, m.Line+len(m.After)
		}
		if res.Truncated {
			fmt.Fprintln(x.stderr, "(more matches left out)")
		}
	})
	if len(res.Matches) == 0 {
		return &exitCodeError{code: exitError}
	}
	return nil
}

type logCmd struct {
	After int64 `help:"Only mutations after this sequence number." placeholder:"SEQ"`
	Limit int   `help:"At most this many." placeholder:"N"`
}

func (c *logCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	ms, err := x.c.Mutations(ctx, id, c.After, c.Limit)
	if err != nil {
		return err
	}
	return x.out(apitypes.Mutations{Mutations: ms}, func(w io.Writer) {
		table(w, "SEQ\tOP\tACTOR\tAT\tPATHS", func(tw io.Writer) {
			for _, m := range ms {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", m.Seq, m.Op, m.Actor, m.At.Local().Format(time.DateTime), quotePaths(m.Paths))
			}
		})
	})
}

// Checkpoints, rollback, fork.

type checkpointCmd struct {
	Create checkpointCreateCmd `cmd:"" default:"withargs" help:"Take a checkpoint (the default)."`
	Ls     checkpointLsCmd     `cmd:"" help:"List the session's checkpoints."`
}

type checkpointCreateCmd struct {
	Label   string `help:"A label for the checkpoint (rollback takes it)." placeholder:"L"`
	Message string `help:"Commit message." short:"m" placeholder:"TEXT"`
}

func (c *checkpointCreateCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	cp, err := x.c.Checkpoint(ctx, id, c.Label, c.Message)
	if err != nil {
		return err
	}
	return x.out(cp, func(w io.Writer) {
		fmt.Fprintf(w, "checkpoint %d: commit %s at seq %d (%s)\n", cp.N, cp.Commit, cp.Seq, cp.Ref)
	})
}

type checkpointLsCmd struct{}

func (*checkpointLsCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	cps, err := x.c.Checkpoints(ctx, id)
	if err != nil {
		return err
	}
	return x.out(apitypes.Checkpoints{Checkpoints: cps}, func(w io.Writer) {
		table(w, "N\tCOMMIT\tSEQ\tCREATED\tLABEL", func(tw io.Writer) {
			for _, c := range cps {
				fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\n", c.N, short(c.Commit), c.Seq, c.CreatedAt.Local().Format(time.DateTime), c.Label)
			}
		})
	})
}

type rollbackCmd struct {
	Checkpoint string `arg:"" help:"Checkpoint number, id, commit or label, or \"base\" for the session's base."`
}

func (c *rollbackCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	res, err := x.c.Rollback(ctx, id, c.Checkpoint)
	if err != nil {
		return err
	}
	return x.out(res, func(w io.Writer) {
		fmt.Fprintf(w, "rolled back to %s: %s changed, now checkpoint %d\n", c.Checkpoint, count(len(res.Mutation.Paths), "path"), res.Checkpoint.N)
	})
}

type forkCmd struct {
	ID         string `arg:"" optional:"" help:"Session to fork (default: --session)."`
	Checkpoint string `help:"Fork from this checkpoint instead of the current view." placeholder:"C"`
	AgentID    string `help:"Agent id of the new session (default: the name given, else the source's agent)." placeholder:"A"`
	AgentName  string `help:"Agent name of the new session (default: the id given, else the source's agent)." placeholder:"NAME"`
	Intent     string `help:"What the new session is for." placeholder:"TEXT"`
	Quiet      bool   `help:"Print only the new session id." short:"q"`
}

func (c *forkCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr(c.ID)
	if err != nil {
		return err
	}
	s, err := x.c.Fork(ctx, id, apitypes.ForkRequest{Checkpoint: c.Checkpoint, AgentID: c.AgentID, AgentName: c.AgentName, Intent: c.Intent})
	if err != nil {
		return err
	}
	if c.Quiet && !x.json {
		fmt.Fprintln(x.stdout, s.ID)
		return nil
	}
	return x.out(s, func(w io.Writer) {
		fmt.Fprintf(w, "session %s forked from %s\nexport SESSIOND_SESSION=%s\n", s.ID, id, s.ID)
		if s.Token != "" {
			fmt.Fprintf(w, "export SESSIOND_TOKEN=%s\n", s.Token)
		}
	})
}

type eventsCmd struct {
	After int64  `help:"Resume after this event id." placeholder:"ID"`
	Repo  string `help:"Follow a repository instead of a session." placeholder:"NAME"`
}

func (c *eventsCmd) Run(ctx context.Context, x *cli) error {
	var (
		ch  <-chan apitypes.Event
		err error
	)
	if c.Repo != "" {
		ch, err = x.c.RepoEvents(ctx, c.Repo, c.After)
	} else {
		id, serr := x.sessionOr("")
		if serr != nil {
			return serr
		}
		ch, err = x.c.SessionEvents(ctx, id, c.After)
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
}

type diffCmd struct {
	Against   string `help:"base, a checkpoint (number, id or commit), or any revision (main~1, v1)." default:"base" placeholder:"REV"`
	colorFlag `embed:""`
}

func (c *diffCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	if x.json {
		d, err := x.c.DiffJSON(ctx, id, c.Against)
		if err != nil {
			return err
		}
		x.printJSON(d)
		return nil
	}
	text, err := x.c.Diff(ctx, id, c.Against)
	if err != nil {
		return err
	}
	_, err = x.stdout.Write(c.paint(x.stdout, text))
	return err
}

// colorFlag is the --color of every command that prints a unified diff,
// and the one rule for when it is coloured: always, or auto when w is a
// terminal and NO_COLOR is not set.
type colorFlag struct {
	Color string `help:"Colour the diff: auto, always or never." enum:"auto,always,never" default:"auto"`
}

// paint returns diff coloured for w, or as it is.
func (c colorFlag) paint(w io.Writer, diff []byte) []byte {
	if c.Color == "always" || (c.Color == "auto" && isTerminal(w)) {
		return colorDiff(diff)
	}
	return diff
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
