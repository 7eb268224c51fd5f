package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sessiond/sessiond/api"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/graph"
)

// The changeset commands (changeset submit|ls|show|review|accept|undo|
// layers) and the session's rebase and merge.

func addChangesetCommands(m map[string]command) {
	m["changeset submit"] = changesetSubmit()
	m["changeset ls"] = changesetLs()
	m["changeset show"] = changesetShow()
	m["changeset review"] = changesetReview()
	m["changeset accept"] = changesetAccept()
	m["changeset undo"] = changesetUndo()
	m["changeset layers"] = changesetLayers()
	m["rebase"] = rebaseCmd()
	m["merge"] = command{run: mergeCmd}
}

func changesetSubmit() command {
	var req api.SubmitRequest
	var quiet bool
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&req.Intent, "intent", "", "what the change is for (default: the session's intent)")
			fs.StringVar(&req.TargetBranch, "target", "", "branch to accept onto (default: the session's base branch)")
			fs.BoolVar(&quiet, "q", false, "print only the changeset id")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			id, err := x.needSession(args, 0)
			if err != nil {
				return err
			}
			c, err := x.c.Submit(ctx, id, req)
			if err != nil {
				return err
			}
			if quiet && !x.json {
				fmt.Fprintln(x.stdout, c.ID)
				return nil
			}
			return x.out(c, func(w io.Writer) { printChangeset(w, c) })
		},
	}
}

func printChangeset(w io.Writer, c api.Changeset) {
	fmt.Fprintf(w, "changeset %s (revision %d) %s\n", c.ID, c.Revision, c.Status)
	fmt.Fprintf(w, "  session %s, agent %s, %s → %s\n", c.Session, c.AgentID, c.Repo, c.TargetBranch)
	fmt.Fprintf(w, "  intent: %s\n", c.Intent)
	fmt.Fprintf(w, "  base %s, head %s\n", short(c.BaseCommit), short(c.HeadCommit))
	if c.AcceptedCommit != "" {
		fmt.Fprintf(w, "  accepted as %s\n", c.AcceptedCommit)
	}
	if c.Stats != nil {
		fmt.Fprintf(w, "  %d files, +%d -%d\n", c.Stats.Files, c.Stats.Insertions, c.Stats.Deletions)
	}
	printSymbols(w, c.Symbols)
	for _, r := range c.Reviews {
		fmt.Fprintf(w, "  review by %s (revision %d): %s %s\n", r.Author, r.Revision, r.Verdict, r.Body)
		for _, lc := range r.Comments {
			fmt.Fprintf(w, "    %s:%d: %s\n", lc.Path, lc.Line, lc.Body)
		}
	}
}

// printSymbols lists per source file the symbols a changeset added,
// modified and removed.
func printSymbols(w io.Writer, files []graph.FileSummary) {
	for _, f := range files {
		fmt.Fprintf(w, "  %s (%s)\n", f.Path, f.Status)
		if f.ParseError != "" {
			fmt.Fprintf(w, "    not parsed: %s\n", f.ParseError)
		}
		for _, g := range []struct {
			verb string
			keys []graph.Key
		}{{"added", f.Added}, {"modified", f.Modified}, {"removed", f.Removed}} {
			for _, k := range g.keys {
				fmt.Fprintf(w, "    %s %s\n", g.verb, k)
			}
		}
	}
}

func changesetLs() command {
	var f client.ChangesetFilter
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.Repo, "repo", "", "only this repository")
			fs.StringVar(&f.Status, "status", "", "only this status")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			if err := nargs(args, 0, 0, "changeset ls [--repo R] [--status S]"); err != nil {
				return err
			}
			cs, err := x.c.ListChangesets(ctx, f)
			if err != nil {
				return err
			}
			return x.out(map[string]any{"changesets": cs}, func(w io.Writer) {
				table(w, "ID\tSTATUS\tREPO\tBRANCH\tAGENT\tUPDATED\tINTENT", func(tw io.Writer) {
					for _, c := range cs {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, c.Status, c.Repo, c.TargetBranch, c.AgentID,
							c.UpdatedAt.Local().Format(time.DateTime), c.Intent)
					}
				})
			})
		},
	}
}

func changesetShow() command {
	var diff bool
	return command{
		flags: func(fs *flag.FlagSet) { fs.BoolVar(&diff, "diff", false, "print the unified diff under review") },
		run: func(ctx context.Context, x *cli, args []string) error {
			if err := nargs(args, 1, 1, "changeset show ID [--diff]"); err != nil {
				return err
			}
			if diff && !x.json {
				d, err := x.c.ChangesetDiff(ctx, args[0])
				if err != nil {
					return err
				}
				_, err = x.stdout.Write(d)
				return err
			}
			c, err := x.c.GetChangeset(ctx, args[0])
			if err != nil {
				return err
			}
			return x.out(c, func(w io.Writer) { printChangeset(w, c) })
		},
	}
}

// comments collects --comment PATH:LINE:BODY flags.
type comments []api.LineComment

func (c *comments) String() string { return "" }

func (c *comments) Set(v string) error {
	parts := strings.SplitN(v, ":", 3)
	if len(parts) != 3 {
		return fmt.Errorf("want PATH:LINE:BODY")
	}
	line, err := strconv.Atoi(parts[1])
	if err != nil {
		return fmt.Errorf("line %q: %v", parts[1], err)
	}
	*c = append(*c, api.LineComment{Path: parts[0], Line: line, Body: parts[2]})
	return nil
}

func changesetReview() command {
	var req api.ReviewRequest
	var cs comments
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&req.Verdict, "verdict", "comment", "approve, request_changes, reject or comment")
			fs.StringVar(&req.Body, "m", "", "the review's text")
			fs.StringVar(&req.Author, "author", "", "who reviews")
			fs.Var(&cs, "comment", "a line comment PATH:LINE:BODY (repeatable)")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			if err := nargs(args, 1, 1, "changeset review ID --verdict V [-m TEXT] [--comment PATH:LINE:BODY]"); err != nil {
				return err
			}
			req.Comments = cs
			res, err := x.c.Review(ctx, args[0], req)
			if err != nil {
				return err
			}
			return x.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "reviewed %s: %s; changeset is %s\n", res.Changeset.ID, res.Review.Verdict, res.Changeset.Status)
			})
		},
	}
}

func changesetAccept() command {
	var req api.AcceptRequest
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&req.ExpectedHead, "expected-head", "", "fail unless the branch is at this commit (no rebase)")
			fs.StringVar(&req.Message, "m", "", "commit message (default: the intent)")
			fs.StringVar(&req.Actor, "actor", "", "committer name")
			fs.BoolVar(&req.RequireFreshReads, "require-fresh-reads", false, "refuse when files the session read changed on the branch")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			if err := nargs(args, 1, 1, "changeset accept ID [--expected-head OID] [-m MESSAGE]"); err != nil {
				return err
			}
			res, err := x.c.Accept(ctx, args[0], req)
			if err != nil {
				return err
			}
			return x.out(res, func(w io.Writer) {
				how := "committed"
				if res.Rebased {
					how = "rebased and committed"
				}
				fmt.Fprintf(w, "%s %s on %s\n", how, res.Commit, res.Branch)
				for _, s := range res.StaleReads {
					fmt.Fprintf(w, "  stale read: %s changed on %s since the session read it\n", s.Path, res.Branch)
				}
			})
		},
	}
}

func changesetUndo() command {
	var req api.UndoRequest
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&req.DryRun, "dry-run", false, "show what would come back, what stays and any conflict; write nothing")
			fs.StringVar(&req.Actor, "actor", "", "author of the revert commits")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			if err := nargs(args, 1, -1, "changeset undo ID [ID…] [--dry-run]"); err != nil {
				return err
			}
			var res api.UndoResult
			var err error
			if len(args) == 1 {
				res, err = x.c.Undo(ctx, args[0], req)
			} else {
				var c api.Changeset
				if c, err = x.c.GetChangeset(ctx, args[0]); err != nil {
					return err
				}
				req.Changesets = args
				res, err = x.c.UndoLayers(ctx, c.Repo, req)
			}
			if err != nil {
				return err
			}
			if err := x.out(res, func(w io.Writer) {
				if res.DryRun {
					fmt.Fprintf(w, "dry run on %s at %s: nothing written\n", res.Branch, short(res.Head))
				} else {
					fmt.Fprintf(w, "%s is now at %s\n", res.Branch, res.Commit)
				}
				for _, p := range res.ComesBack {
					fmt.Fprintf(w, "  comes back: %s\n", p)
				}
				for _, p := range res.Stays {
					fmt.Fprintf(w, "  stays:      %s\n", p)
				}
				for _, c := range res.Conflicts {
					fmt.Fprintf(w, "  conflict:   %s (%s)\n", c.Path, c.Kind)
				}
			}); err != nil {
				return err
			}
			if len(res.Conflicts) > 0 {
				return &exitCodeError{code: exitConflict}
			}
			return nil
		},
	}
}

// exitCodeError ends a command with a code and no further message.
type exitCodeError struct{ code int }

func (e *exitCodeError) Error() string { return "exit " + strconv.Itoa(e.code) }

func changesetLayers() command {
	var branch string
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&branch, "branch", "", "branch (default: the repository's HEAD branch)")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			if err := nargs(args, 1, 1, "changeset layers REPO [--branch B]"); err != nil {
				return err
			}
			ls, err := x.c.Layers(ctx, args[0], branch)
			if err != nil {
				return err
			}
			return x.out(map[string]any{"layers": ls}, func(w io.Writer) {
				table(w, "LAYER\tSTATE\tCHANGESET\tCOMMIT\tACCEPTED", func(tw io.Writer) {
					for _, l := range ls {
						fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", l.ID, l.State, l.Changeset, short(l.Commit), l.AcceptedAt.Local().Format(time.DateTime))
					}
				})
			})
		},
	}
}

func rebaseCmd() command {
	var onto string
	return command{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&onto, "onto", "", "branch, tag or commit (default: the session's base branch)")
		},
		run: func(ctx context.Context, x *cli, args []string) error {
			id, err := x.needSession(args, 0)
			if err != nil {
				return err
			}
			res, err := x.c.Rebase(ctx, id, onto)
			if err != nil {
				return err
			}
			return x.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "rebased onto %s (%d paths changed)\n", res.Session.BaseCommit, len(res.Mutation.Paths))
			})
		},
	}
}

func mergeCmd(ctx context.Context, x *cli, args []string) error {
	if err := nargs(args, 1, 1, "merge FROM-SESSION"); err != nil {
		return err
	}
	id, err := x.sessionOnly()
	if err != nil {
		return err
	}
	res, err := x.c.Merge(ctx, id, args[0])
	if err != nil {
		return err
	}
	return x.out(res, func(w io.Writer) {
		fmt.Fprintf(w, "merged %s into %s (%d paths changed)\n", args[0], id, len(res.Mutation.Paths))
	})
}
