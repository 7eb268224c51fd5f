package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
)

// The changeset commands (changeset submit|ls|show|review|accept|undo|
// layers) and the session's rebase and merge.

type changesetCmd struct {
	Submit changesetSubmitCmd `cmd:"" help:"Submit the session's changes for review."`
	Ls     changesetLsCmd     `cmd:"" help:"List changesets."`
	Show   changesetShowCmd   `cmd:"" help:"Show a changeset (--diff: its diff)."`
	Review changesetReviewCmd `cmd:"" help:"Review a changeset."`
	Accept changesetAcceptCmd `cmd:"" help:"Accept a changeset onto its target branch."`
	Undo   changesetUndoCmd   `cmd:"" help:"Revert accepted changesets (--dry-run: only show what would happen)."`
	Layers changesetLayersCmd `cmd:"" help:"List the changesets accepted on a branch."`
}

type changesetSubmitCmd struct {
	ID     string `arg:"" optional:"" help:"Session to submit (default: --session)."`
	Intent string `help:"What the change is for (default: the session's intent)." placeholder:"TEXT"`
	Target string `help:"Branch to accept onto (default: the session's base branch)." placeholder:"BRANCH"`
	Quiet  bool   `help:"Print only the changeset id." short:"q"`
}

func (c *changesetSubmitCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr(c.ID)
	if err != nil {
		return err
	}
	cs, err := x.c.Submit(ctx, id, apitypes.SubmitRequest{Intent: c.Intent, TargetBranch: c.Target})
	if err != nil {
		return err
	}
	if c.Quiet && !x.json {
		fmt.Fprintln(x.stdout, cs.ID)
		return nil
	}
	return x.out(cs, func(w io.Writer) { printChangeset(w, cs) })
}

func printChangeset(w io.Writer, c apitypes.Changeset) {
	fmt.Fprintf(w, "changeset %s (revision %d) %s\n", c.ID, c.Revision, c.Status)
	fmt.Fprintf(w, "  session %s, agent %s, %s → %s\n", c.Session, record.AgentLabel(c.AgentID, ""), c.Repo, c.TargetBranch)
	fmt.Fprintf(w, "  intent: %s\n", c.Intent)
	fmt.Fprintf(w, "  base %s, head %s\n", short(c.BaseCommit), short(c.HeadCommit))
	if c.AcceptedCommit != "" {
		fmt.Fprintf(w, "  accepted as %s\n", c.AcceptedCommit)
	}
	if c.Stats != nil {
		fmt.Fprintf(w, "  %s, +%d -%d\n", count(c.Stats.Files, "file"), c.Stats.Insertions, c.Stats.Deletions)
	}
	printSymbols(w, c.Symbols)
	for _, r := range c.Reviews {
		fmt.Fprintf(w, "  review by %s (revision %d): %s %s\n", reviewAuthor(r), r.Revision, r.Verdict, r.Body)
		for _, lc := range r.Comments {
			fmt.Fprintf(w, "    %s:%d: %s\n", merge.QuotePath(lc.Path), lc.Line, lc.Body)
		}
	}
}

// printSymbols lists per source file the symbols a changeset added,
// modified and removed.
func printSymbols(w io.Writer, files []apitypes.FileSymbols) {
	for _, f := range files {
		fmt.Fprintf(w, "  %s (%s)\n", merge.QuotePath(f.Path), f.Status)
		if f.ParseError != "" {
			fmt.Fprintf(w, "    not parsed: %s\n", f.ParseError)
		}
		for _, g := range []struct {
			verb string
			keys []apitypes.SymbolKey
		}{{"added", f.Added}, {"modified", f.Modified}, {"removed", f.Removed}} {
			for _, k := range g.keys {
				fmt.Fprintf(w, "    %s %s\n", g.verb, k)
			}
		}
	}
}

type changesetLsCmd struct {
	Repo   string `help:"Only this repository." placeholder:"NAME"`
	Status string `help:"Only this status (open, approved, changes_requested, rejected, accepted, …)." placeholder:"STATUS"`
}

func (c *changesetLsCmd) Run(ctx context.Context, x *cli) error {
	cs, err := x.c.ListChangesets(ctx, client.ChangesetFilter{Repo: c.Repo, Status: c.Status})
	if err != nil {
		return err
	}
	return x.out(map[string]any{"changesets": cs}, func(w io.Writer) {
		table(w, "ID\tSTATUS\tREPO\tBRANCH\tAGENT\tUPDATED\tINTENT", func(tw io.Writer) {
			for _, c := range cs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, c.Status, c.Repo, c.TargetBranch, record.AgentLabel(c.AgentID, ""),
					c.UpdatedAt.Local().Format(time.DateTime), c.Intent)
			}
		})
	})
}

type changesetShowCmd struct {
	ID        string `arg:"" help:"Changeset id."`
	Diff      bool   `help:"Print the unified diff under review."`
	colorFlag `embed:""`
}

func (c *changesetShowCmd) Run(ctx context.Context, x *cli) error {
	if c.Diff && !x.json {
		d, err := x.c.ChangesetDiff(ctx, c.ID)
		if err != nil {
			return err
		}
		_, err = x.stdout.Write(c.paint(x.stdout, d))
		return err
	}
	cs, err := x.c.GetChangeset(ctx, c.ID)
	if err != nil {
		return err
	}
	if x.json {
		return x.out(cs, nil)
	}
	checks, err := x.c.Checks(ctx, c.ID, 0)
	if err != nil {
		return err
	}
	return x.out(cs, func(w io.Writer) {
		printChangeset(w, cs)
		printChecks(w, checks)
	})
}

// printChecks lists the checks of a revision, one line each, as the
// review page shows them at the top.
func printChecks(w io.Writer, cs apitypes.ChecksResponse) {
	if len(cs.Checks) == 0 {
		fmt.Fprintf(w, "checks: none (the session ran no command)\n")
		return
	}
	fmt.Fprintf(w, "checks: %s\n", cs.State)
	for _, c := range cs.Checks {
		req := ""
		if c.Required {
			req = " (required)"
		}
		if c.ExitCode == nil {
			fmt.Fprintf(w, "  %-7s %s%s\n", c.State, shellWords(c.Argv), req)
			continue
		}
		fmt.Fprintf(w, "  %-7s %s%s: exit %d in %s\n", c.State, shellWords(c.Argv), req, *c.ExitCode,
			(time.Duration(c.DurationMS) * time.Millisecond).String())
	}
}

// lineComment is a --comment PATH:LINE:BODY.
type lineComment apitypes.LineComment

func (c *lineComment) UnmarshalText(b []byte) error {
	parts := strings.SplitN(string(b), ":", 3)
	if len(parts) != 3 {
		return fmt.Errorf("comment %q: want PATH:LINE:BODY", b)
	}
	line, err := strconv.Atoi(parts[1])
	if err != nil || line < 1 {
		return fmt.Errorf("comment %q: line %q is not a line number", b, parts[1])
	}
	*c = lineComment{Path: parts[0], Line: line, Body: parts[2]}
	return nil
}

type changesetReviewCmd struct {
	ID       string        `arg:"" help:"Changeset id."`
	Verdict  string        `help:"approve, request_changes, reject or comment." enum:"approve,request_changes,reject,comment" default:"comment"`
	Message  string        `help:"The review's text." short:"m" placeholder:"TEXT"`
	Author   string        `help:"A name to give with the admin token, where the review then counts as a comment; a reviewer token's review is by its name, and a daemon without an admin token reviews as its local user." default:"${user}" placeholder:"NAME"`
	Comments []lineComment `help:"A line comment PATH:LINE:BODY (repeatable)." name:"comment" sep:"none" placeholder:"PATH:LINE:BODY"`
}

func (c *changesetReviewCmd) Run(ctx context.Context, x *cli) error {
	req := apitypes.ReviewRequest{Verdict: c.Verdict, Body: c.Message, Author: c.Author}
	for _, lc := range c.Comments {
		req.Comments = append(req.Comments, apitypes.LineComment(lc))
	}
	res, err := x.c.Review(ctx, c.ID, req)
	if err != nil {
		return err
	}
	return x.out(res, func(w io.Writer) {
		fmt.Fprintf(w, "reviewed %s as %s: %s; changeset is %s\n", res.Changeset.ID, reviewAuthor(res.Review),
			strings.ReplaceAll(res.Review.Verdict, "_", " "), strings.ReplaceAll(res.Changeset.Status, "_", " "))
		if res.Review.Verdict != c.Verdict {
			fmt.Fprintf(w, "  counted as a comment, not %s: a name the admin token gives is vouched for by nothing; review with a reviewer token (sessiond reviewer add NAME) to vote\n",
				strings.ReplaceAll(c.Verdict, "_", " "))
		}
	})
}

// reviewAuthor says who a review is by and who vouches for it.
func reviewAuthor(r apitypes.Review) string {
	switch r.AuthorKind {
	case apitypes.AuthorReviewer:
		return fmt.Sprintf("%s (reviewer token)", r.Author)
	case apitypes.AuthorLocal:
		return fmt.Sprintf("%s (local user)", r.Author)
	case apitypes.AuthorAsserted:
		return fmt.Sprintf("%q (named with the admin token)", r.Author)
	case apitypes.AuthorSession:
		return fmt.Sprintf("%s (its own session)", r.Author)
	}
	return r.Author
}

// reviewerCmd is `sessiond reviewer add NAME`.
type reviewerCmd struct {
	Add reviewerAddCmd `cmd:"" help:"Issue the reviewer token of NAME (needs the admin token); give it to that reviewer, whose reviews then count as one identity."`
}

type reviewerAddCmd struct {
	Name  string `arg:"" help:"The reviewer's name, as reviews will show it."`
	Quiet bool   `help:"Print only the token." short:"q"`
}

func (c *reviewerAddCmd) Run(ctx context.Context, x *cli) error {
	r, err := x.c.CreateReviewer(ctx, c.Name)
	if err != nil {
		return err
	}
	if c.Quiet && !x.json {
		fmt.Fprintln(x.stdout, r.Token)
		return nil
	}
	return x.out(r, func(w io.Writer) {
		fmt.Fprintf(w, "reviewer token of %s (reviews with it are by %s; the same name always gets the same token):\n%s\n", r.Name, r.Name, r.Token)
	})
}

// selectFlag is one --select: a whole file (PATH) or some of its hunks
// (PATH:N,M with hunk numbers from 1, as the review page counts them; the
// API's indexes are one less).
type selectFlag struct {
	path  string
	hunks []int // API indexes; nil for the whole file
}

func (f *selectFlag) UnmarshalText(b []byte) error {
	v := string(b)
	f.path, f.hunks = v, nil
	i := strings.LastIndex(v, ":")
	if i <= 0 {
		return nil
	}
	var hunks []int
	for _, part := range strings.Split(v[i+1:], ",") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil // a path with a colon in its name
		}
		if n < 1 {
			return fmt.Errorf("select %q: hunk %d: hunks are numbered from 1", v, n)
		}
		hunks = append(hunks, n-1)
	}
	f.path, f.hunks = v[:i], hunks
	return nil
}

type changesetAcceptCmd struct {
	ID                string       `arg:"" help:"Changeset id."`
	ExpectedHead      string       `help:"Fail unless the branch is at this commit (no rebase)." placeholder:"OID"`
	Message           string       `help:"Commit message (default: the intent)." short:"m" placeholder:"TEXT"`
	Actor             string       `help:"Committer name." placeholder:"NAME"`
	RequireFreshReads bool         `help:"Refuse when files the session read changed on the branch."`
	Select            []selectFlag `help:"Accept only this file, or only these hunks of it (numbered from 1 in the file's diff); repeatable. What is left out stays in the session." sep:"none" placeholder:"PATH[:N,…]"`
	DryRun            bool         `help:"Show the commit's diff and write nothing."`
	Revision          int          `help:"Fail unless the changeset is still at this revision (the one reviewed)." placeholder:"N"`
}

func (c *changesetAcceptCmd) Run(ctx context.Context, x *cli) error {
	req := apitypes.AcceptRequest{ExpectedHead: c.ExpectedHead, Message: c.Message,
		Actor: c.Actor, RequireFreshReads: c.RequireFreshReads, DryRun: c.DryRun, Revision: c.Revision}
	if len(c.Select) > 0 {
		req.Select = &apitypes.Selection{}
		for _, s := range c.Select {
			if s.hunks == nil {
				req.Select.Files = append(req.Select.Files, s.path)
				continue
			}
			if req.Select.Hunks == nil {
				req.Select.Hunks = map[string][]int{}
			}
			req.Select.Hunks[s.path] = append(req.Select.Hunks[s.path], s.hunks...)
		}
	}
	res, err := x.c.Accept(ctx, c.ID, req)
	if err != nil {
		return err
	}
	return x.out(res, func(w io.Writer) {
		if res.DryRun {
			fmt.Fprintf(w, "dry run: nothing written; the commit on %s at %s would change:\n", res.Branch, short(res.Head))
			if res.Diff != nil {
				for _, f := range res.Diff.Files {
					fmt.Fprintf(w, "  %-12s %s +%d -%d\n", f.Status, merge.QuotePath(f.Path), f.Insertions, f.Deletions)
					for _, h := range f.Hunks {
						fmt.Fprintf(w, "    %s\n", strings.TrimSpace(fmt.Sprintf("@@ -%d,%d +%d,%d @@ %s", h.OldStart, h.OldLines, h.NewStart, h.NewLines, h.Function)))
						for _, l := range h.Lines {
							fmt.Fprintf(w, "    %s\n", strings.TrimSuffix(l, "\n"))
						}
					}
				}
			}
		} else {
			how := "committed"
			if res.Rebased {
				how = "rebased and committed"
			}
			fmt.Fprintf(w, "%s %s on %s\n", how, res.Commit, res.Branch)
			workTreeNote(w, res.Branch, res.WorkTreeUpdated, res.WorkTreeError)
		}
		for _, s := range res.StaleReads {
			fmt.Fprintf(w, "  stale read: %s changed on %s since the session read it\n", merge.QuotePath(s.Path), res.Branch)
		}
		if res.Selection != nil {
			left := res.Selection.LeftOut
			for _, p := range left.Files {
				fmt.Fprintf(w, "  left out: %s\n", merge.QuotePath(p))
			}
			for _, p := range slices.Sorted(maps.Keys(left.Hunks)) {
				if hs := left.Hunks[p]; len(hs) > 0 {
					nums := make([]string, len(hs))
					for i, h := range hs {
						nums[i] = strconv.Itoa(h + 1)
					}
					fmt.Fprintf(w, "  left out: %s hunks %s\n", merge.QuotePath(p), strings.Join(nums, ","))
				}
			}
			if res.SessionRebased {
				fmt.Fprintf(w, "  the session keeps what was left out, on %s\n", short(res.Commit))
			}
			if res.SessionError != "" || len(res.SessionConflicts) > 0 {
				fmt.Fprintf(w, "  the session was not rebased (%s) %s: rebase it by hand\n", count(len(res.SessionConflicts), "conflict"), res.SessionError)
			}
		}
	})
}

type changesetUndoCmd struct {
	IDs    []string `arg:"" name:"id" help:"Changeset ids; several are undone together, as layers of one repository."`
	DryRun bool     `help:"Show what would come back, what stays and any conflict; write nothing."`
	Actor  string   `help:"Author of the revert commits." placeholder:"NAME"`
}

// Run exits 3 when the undo conflicts.
func (c *changesetUndoCmd) Run(ctx context.Context, x *cli) error {
	req := apitypes.UndoRequest{DryRun: c.DryRun, Actor: c.Actor}
	var res apitypes.UndoResult
	var err error
	if len(c.IDs) == 1 {
		res, err = x.c.Undo(ctx, c.IDs[0], req)
	} else {
		var cs apitypes.Changeset
		if cs, err = x.c.GetChangeset(ctx, c.IDs[0]); err != nil {
			return err
		}
		req.Changesets = c.IDs
		res, err = x.c.UndoLayers(ctx, cs.Repo, req)
	}
	if err != nil {
		return err
	}
	_ = x.out(res, func(w io.Writer) {
		if res.DryRun {
			fmt.Fprintf(w, "dry run on %s at %s: nothing written\n", res.Branch, short(res.Head))
		} else {
			fmt.Fprintf(w, "%s is now at %s\n", res.Branch, res.Commit)
			workTreeNote(w, res.Branch, res.WorkTreeUpdated, res.WorkTreeError)
		}
		for _, p := range res.ComesBack {
			fmt.Fprintf(w, "  comes back: %s\n", merge.QuotePath(p))
		}
		for _, p := range res.Stays {
			fmt.Fprintf(w, "  stays:      %s\n", merge.QuotePath(p))
		}
		for _, c := range res.Conflicts {
			fmt.Fprintf(w, "  conflict:   %s (%s)\n", merge.QuotePath(c.Path), c.Kind)
		}
	})
	if len(res.Conflicts) > 0 {
		return &exitCodeError{code: exitConflict}
	}
	return nil
}

type changesetLayersCmd struct {
	Repo   string `arg:"" help:"Repository name."`
	Branch string `help:"Branch (default: the repository's HEAD branch)." placeholder:"BRANCH"`
}

func (c *changesetLayersCmd) Run(ctx context.Context, x *cli) error {
	ls, err := x.c.Layers(ctx, c.Repo, c.Branch)
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
}

type rebaseCmd struct {
	ID   string `arg:"" optional:"" help:"Session to rebase (default: --session)."`
	Onto string `help:"Branch, tag or commit (default: the session's base branch)." placeholder:"REV"`
	conflictFlags
}

func (c *rebaseCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr(c.ID)
	if err != nil {
		return err
	}
	res, err := x.c.RebaseWith(ctx, id, c.Onto, c.mode())
	if err != nil {
		return err
	}
	return x.out(res, func(w io.Writer) {
		fmt.Fprintf(w, "rebased onto %s (%s changed)\n", res.Session.BaseCommit, count(len(res.Mutation.Paths), "path"))
		printKept(w, res)
	})
}

type mergeCmd struct {
	From      string `arg:"" name:"from-session" help:"Session whose changes to merge in."`
	FromToken string `name:"from-token" env:"SESSIOND_FROM_TOKEN" help:"Token of the session merged in; needed when --token is a session token, which reaches only its own session."`
	conflictFlags
}

func (c *mergeCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	res, err := x.c.MergeWith(ctx, id, c.From, c.FromToken, c.mode())
	if err != nil {
		return err
	}
	return x.out(res, func(w io.Writer) {
		fmt.Fprintf(w, "merged %s into %s (%s changed)\n", c.From, id, count(len(res.Mutation.Paths), "path"))
		printKept(w, res)
	})
}

// shellWords writes argv as a POSIX shell would read it back: a word of
// only safe characters as it is, any other in single quotes.
func shellWords(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			words[i] = a
			continue
		}
		words[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(words, " ")
}
