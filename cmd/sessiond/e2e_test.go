package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestWorkflow drives a whole agent workflow through the client against
// the real binary, on both stores, and checks the results with the git
// CLI on the repository.
func TestWorkflow(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			testWorkflow(t, st)
		})
	}
}

func testWorkflow(t *testing.T, st store) {
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	d := newDaemon(t, st, "--repo", "r="+repo, "--admin-token", "admin-secret", "--heartbeat", "200ms")
	c := d.C

	// Create.
	s, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", AgentID: "agent-7", Intent: "e2e"})
	require.NoError(t, err)
	assert.Equal(t, git(t, repo, "rev-parse", "main"), s.BaseCommit)
	assert.Equal(t, "main", s.BaseRef)
	require.NotEmpty(t, s.Token)
	sc := c.WithToken(s.Token) // the agent uses its session token from here on

	// Follow the session's events from the start.
	evctx, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	events, err := sc.SessionEvents(evctx, s.ID, 0)
	require.NoError(t, err)

	// Read from the base.
	data, meta, err := sc.ReadFile(ctx, s.ID, "README.md")
	require.NoError(t, err)
	assert.Equal(t, git(t, repo, "show", "main:README.md"), strings.TrimSpace(string(data)))
	assert.Equal(t, "base", meta.Source)
	assert.Equal(t, git(t, repo, "rev-parse", "main:README.md"), meta.OID)
	part, _, err := sc.ReadRange(ctx, s.ID, "README.md", "bytes=0-6")
	require.NoError(t, err)
	assert.Equal(t, string(data[:7]), string(part))

	// Write, then write again only over that version.
	w1, err := sc.WriteFile(ctx, s.ID, "src/new.go", []byte("package main\n"), client.WriteOptions{IfNoneMatch: true})
	require.NoError(t, err)
	_, err = sc.WriteFile(ctx, s.ID, "src/new.go", []byte("x"), client.WriteOptions{IfNoneMatch: true})
	assert.Equal(t, "precondition_failed", client.Code(err))
	w2, err := sc.WriteFile(ctx, s.ID, "src/new.go", []byte("package main\n\nfunc New() {}\n"), client.WriteOptions{IfMatch: w1.File.OID})
	require.NoError(t, err)
	_, err = sc.WriteFile(ctx, s.ID, "src/new.go", []byte("stale"), client.WriteOptions{IfMatch: w1.File.OID})
	assert.Equal(t, "precondition_failed", client.Code(err))
	data, meta, err = sc.ReadFile(ctx, s.ID, "src/new.go")
	require.NoError(t, err)
	assert.Equal(t, "package main\n\nfunc New() {}\n", string(data))
	assert.Equal(t, "overlay", meta.Source)
	assert.Equal(t, w2.File.OID, meta.OID)
	_, err = sc.WriteFile(ctx, s.ID, "bin/tool.sh", []byte("#!/bin/sh\necho tool\n"), client.WriteOptions{Mode: "100755"})
	require.NoError(t, err)

	// Batch edit: a dry run changes nothing, then the batch applies whole.
	batch := apitypes.EditsRequest{Edits: []apitypes.Edit{
		{Op: "write", Path: "notes/todo.md", Content: "- ship it\n"},
		{Op: "replace", Path: "src/main.go", Old: "hello, world", New: "hello, sessiond"},
		{Op: "move", Path: "docs/guide.md", To: "docs/manual.md"},
		{Op: "delete", Path: "empty.txt"},
	}}
	before, err := sc.Tree(ctx, s.ID, client.TreeOptions{OnlyModified: true, Recursive: true})
	require.NoError(t, err)
	batch.DryRun = true
	dry, err := sc.Edits(ctx, s.ID, batch)
	require.NoError(t, err)
	assert.True(t, dry.DryRun)
	after, err := sc.Tree(ctx, s.ID, client.TreeOptions{OnlyModified: true, Recursive: true})
	require.NoError(t, err)
	assert.Equal(t, before, after, "a dry run changes nothing")
	batch.DryRun = false
	res, err := sc.Edits(ctx, s.ID, batch)
	require.NoError(t, err)
	assert.Equal(t, dry.Changes, res.Changes)
	// A batch with one bad edit applies nothing.
	_, err = sc.Edits(ctx, s.ID, apitypes.EditsRequest{Edits: []apitypes.Edit{
		{Op: "write", Path: "ok.txt", Content: "x"},
		{Op: "delete", Path: "no/such/file"},
	}})
	assert.Equal(t, "not_found", client.Code(err))
	_, err = sc.StatFile(ctx, s.ID, "ok.txt")
	assert.Equal(t, "not_found", client.Code(err))

	// Search sees the overlay.
	found, err := sc.Search(ctx, s.ID, apitypes.SearchRequest{Pattern: "hello, (world|sessiond)"})
	require.NoError(t, err)
	require.Len(t, found.Matches, 1)
	assert.Equal(t, "src/main.go", found.Matches[0].Path)
	assert.Contains(t, found.Matches[0].Text, "hello, sessiond")

	// Checkpoint: a real commit, checked with git.
	cp, err := sc.Checkpoint(ctx, s.ID, "first", "")
	require.NoError(t, err)
	assert.Equal(t, cp.Commit, git(t, repo, "rev-parse", cp.Ref))
	assert.Equal(t, s.BaseCommit, git(t, repo, "rev-parse", cp.Commit+"^"))
	assert.Equal(t, "package main\n\nfunc New() {}", git(t, repo, "show", cp.Commit+":src/new.go"))
	assert.Equal(t, "- ship it", git(t, repo, "show", cp.Commit+":notes/todo.md"))
	assert.Contains(t, git(t, repo, "ls-tree", cp.Commit, "bin/tool.sh"), "100755 blob")
	assert.Contains(t, git(t, repo, "ls-tree", "-r", "--name-only", cp.Commit), "docs/manual.md")
	assert.NotContains(t, git(t, repo, "ls-tree", "-r", "--name-only", cp.Commit), "empty.txt")
	diff := git(t, repo, "diff", "--name-status", s.BaseCommit, cp.Commit)
	for _, want := range []string{"A\tbin/tool.sh", "A\tnotes/todo.md", "A\tsrc/new.go", "M\tsrc/main.go", "D\tempty.txt"} {
		assert.Contains(t, diff, want)
	}

	// The diff against the base applies with git apply and names the same
	// files as git diff between base and checkpoint.
	patch, err := sc.Diff(ctx, s.ID, "")
	require.NoError(t, err)
	checkApply := exec.Command("git", "apply", "--check", "-")
	checkApply.Dir, checkApply.Stdin = repo, bytes.NewReader(patch)
	out, err := checkApply.CombinedOutput()
	require.NoError(t, err, "git apply --check: %s\n%s", out, patch)
	dj, err := sc.DiffJSON(ctx, s.ID, "base")
	require.NoError(t, err)
	assert.Equal(t, cp.Tree, dj.To)
	var statuses []string
	for _, f := range dj.Files {
		statuses = append(statuses, f.Status+" "+f.Path)
	}
	assert.Contains(t, statuses, "renamed docs/manual.md")
	assert.Contains(t, statuses, "added src/new.go")
	assert.Contains(t, statuses, "deleted empty.txt")
	empty, err := sc.Diff(ctx, s.ID, "1")
	require.NoError(t, err)
	assert.Empty(t, string(empty), "nothing changed since checkpoint 1")

	// Rollback: more changes, then back to the checkpoint exactly.
	_, err = sc.WriteFile(ctx, s.ID, "scratch.txt", []byte("throwaway\n"), client.WriteOptions{})
	require.NoError(t, err)
	_, err = sc.DeleteFile(ctx, s.ID, "src", true)
	require.NoError(t, err)
	rb, err := sc.Rollback(ctx, s.ID, "1")
	require.NoError(t, err)
	assert.Equal(t, cp.Tree, rb.Checkpoint.Tree)
	assert.Equal(t, cp.Tree, git(t, repo, "rev-parse", rb.Checkpoint.Commit+"^{tree}"))
	_, err = sc.StatFile(ctx, s.ID, "scratch.txt")
	assert.Equal(t, "not_found", client.Code(err))
	data, _, err = sc.ReadFile(ctx, s.ID, "src/new.go")
	require.NoError(t, err)
	assert.Equal(t, "package main\n\nfunc New() {}\n", string(data))

	// Fork: the fork starts from the view, and the two are isolated.
	f, err := sc.Fork(ctx, s.ID, apitypes.ForkRequest{AgentID: "agent-8", Intent: "try another way"})
	require.NoError(t, err)
	assert.Equal(t, s.ID, f.Parent)
	fc := c.WithToken(f.Token)
	data, _, err = fc.ReadFile(ctx, f.ID, "notes/todo.md")
	require.NoError(t, err)
	assert.Equal(t, "- ship it\n", string(data))
	_, err = fc.WriteFile(ctx, f.ID, "notes/todo.md", []byte("- fork only\n"), client.WriteOptions{})
	require.NoError(t, err)
	data, _, err = sc.ReadFile(ctx, s.ID, "notes/todo.md")
	require.NoError(t, err)
	assert.Equal(t, "- ship it\n", string(data), "a fork's write never reaches its source")
	_, _, err = fc.ReadFile(ctx, s.ID, "notes/todo.md")
	assert.Equal(t, "forbidden", client.Code(err), "a session token reaches only its session")

	// The mutation log and the event stream tell the same story.
	muts, err := sc.Mutations(ctx, s.ID, 0, 0)
	require.NoError(t, err)
	var ops []string
	for _, m := range muts {
		ops = append(ops, m.Op)
	}
	assert.Equal(t, []string{"write", "write", "write", "edits", "write", "delete", "rollback"}, ops)
	var evTypes []string
	var lastID int64
	timeout := time.After(10 * time.Second)
collect:
	for {
		select {
		case e, ok := <-events:
			require.True(t, ok, "event stream ended early")
			evTypes = append(evTypes, e.Type)
			lastID = e.ID
			if e.Type == "checkpoint.created" && strings.Contains(string(mustJSON(e.Payload)), `"n":2`) {
				break collect
			}
		case <-timeout:
			t.Fatalf("events so far: %v", evTypes)
		}
	}
	assert.Equal(t, "session.state", evTypes[0])
	assert.Contains(t, evTypes, "file.written")
	assert.Contains(t, evTypes, "file.deleted")
	assert.Contains(t, evTypes, "checkpoint.created")
	stopEvents()

	// Abandon; the session refuses writes, also after a restart, and the
	// repository stays registered without --repo.
	_, err = sc.AbandonSession(ctx, f.ID)
	assert.Equal(t, "forbidden", client.Code(err))
	_, err = c.AbandonSession(ctx, f.ID)
	require.NoError(t, err)
	_, err = fc.WriteFile(ctx, f.ID, "x", []byte("x"), client.WriteOptions{})
	assert.Equal(t, "session_closed", client.Code(err))

	d.Args = []string{"--admin-token", "admin-secret"}
	d.Restart()
	c, sc = d.C, d.C.WithToken(s.Token)
	repos, err := c.ListRepos(ctx)
	require.NoError(t, err)
	require.Len(t, repos, 1)
	data, _, err = sc.ReadFile(ctx, s.ID, "src/new.go")
	require.NoError(t, err, "the session token survives a restart")
	assert.Equal(t, "package main\n\nfunc New() {}\n", string(data))
	// Resume the stream after the last event seen: nothing is replayed.
	ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resumed, err := sc.SessionEvents(ectx, s.ID, lastID)
	require.NoError(t, err)
	_, err = sc.WriteFile(ctx, s.ID, "after-restart.txt", []byte("x"), client.WriteOptions{})
	require.NoError(t, err)
	e := <-resumed
	for e.Type == "overlap.detected" { // the fork changed notes/todo.md too
		e = <-resumed
	}
	assert.Greater(t, e.ID, lastID)
	assert.Equal(t, "file.written", e.Type)

	assert.Empty(t, git(t, repo, "fsck", "--strict", "--no-dangling"))

	testChangesetWorkflow(t, d, repo, s.ID, s.Token)
}

// testChangesetWorkflow continues the workflow: merge another session in,
// submit, review, accept onto main and undo, through the client and the
// command line, checked with the git CLI.
func testChangesetWorkflow(t *testing.T, d *daemon, repo, id, token string) {
	ctx := t.Context()
	c, sc := d.C, d.C.WithToken(token)

	// Merge another session's change into this one.
	other, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", AgentID: "agent-9"})
	require.NoError(t, err)
	_, err = c.WithToken(other.Token).WriteFile(ctx, other.ID, "merged.txt", []byte("from agent-9\n"), client.WriteOptions{})
	require.NoError(t, err)
	_, err = sc.Merge(ctx, id, other.ID)
	require.Error(t, err, "a session token alone does not reach the other session")
	_, err = sc.MergeWithToken(ctx, id, other.ID, other.Token)
	require.NoError(t, err)
	data, _, err := sc.ReadFile(ctx, id, "merged.txt")
	require.NoError(t, err)
	assert.Equal(t, "from agent-9\n", string(data))
	_, err = sc.Rebase(ctx, id, "")
	require.NoError(t, err, "rebase onto its unchanged base branch is a no-op")

	// Submit, then review with a line comment.
	cs, err := sc.Submit(ctx, id, apitypes.SubmitRequest{Intent: "e2e: new code"})
	require.NoError(t, err)
	assert.Equal(t, "open", cs.Status)
	assert.Equal(t, "main", cs.TargetBranch)
	require.NotNil(t, cs.Stats)
	assert.Positive(t, cs.Stats.Files)
	// The lead reviews with a reviewer token the admin issued: the review
	// is by the name the token carries.
	lead, err := c.CreateReviewer(ctx, "lead")
	require.NoError(t, err)
	rv, err := c.WithToken(lead.Token).Review(ctx, cs.ID, apitypes.ReviewRequest{Verdict: "request_changes",
		Comments: []apitypes.LineComment{{Path: "src/new.go", Line: 3, Body: "doc comment?"}}})
	require.NoError(t, err)
	assert.Equal(t, "changes_requested", rv.Changeset.Status)
	assert.Equal(t, "lead", rv.Review.Author)
	cliAs := func(token string, want int, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		args = append(args, "--server", d.URL, "--token", token)
		code := run(args, strings.NewReader(""), &stdout, &stderr)
		require.Equal(t, want, code, "sessiond %v: %s%s", args, stdout.String(), stderr.String())
		return stdout.String()
	}
	cli := func(want int, args ...string) string { t.Helper(); return cliAs("admin-secret", want, args...) }
	out := cliAs(lead.Token, exitOK, "changeset", "review", cs.ID, "--verdict", "approve", "-m", "fine")
	assert.Contains(t, out, "as lead (reviewer token): approve; changeset is approved")
	assert.Contains(t, cli(exitOK, "changeset", "ls", "--repo", "r"), cs.ID)
	diff := cli(exitOK, "changeset", "show", cs.ID, "--diff")
	checkApply := exec.Command("git", "apply", "--check", "-")
	checkApply.Dir, checkApply.Stdin = repo, strings.NewReader(diff)
	applied, err := checkApply.CombinedOutput()
	require.NoError(t, err, "git apply --check: %s", applied)

	// main is checked out in the repository's work tree: refused while
	// the repository's policy says so, then accepted with the work tree.
	before := git(t, repo, "rev-parse", "main")
	_, err = c.SetRepoPolicy(ctx, "r", apitypes.RepoPolicy{AllowCheckedOut: new(false)})
	require.NoError(t, err)
	_, err = c.Accept(ctx, cs.ID, apitypes.AcceptRequest{})
	assert.Equal(t, "forbidden", client.Code(err))
	_, err = c.SetRepoPolicy(ctx, "r", apitypes.RepoPolicy{AllowCheckedOut: new(true)})
	require.NoError(t, err)
	_, err = c.Accept(ctx, cs.ID, apitypes.AcceptRequest{ExpectedHead: strings.Repeat("0", 40)})
	assert.Equal(t, "conflict", client.Code(err), "a stale expected_head")
	out = cli(exitOK, "changeset", "accept", cs.ID, "--expected-head", before, "--actor", "lead", "--json")
	var acc apitypes.AcceptResult
	require.NoError(t, json.Unmarshal([]byte(out), &acc))
	assert.Equal(t, git(t, repo, "rev-parse", "main"), acc.Commit)
	assert.Equal(t, before, git(t, repo, "rev-parse", "main^"))
	msg := git(t, repo, "log", "-1", "--format=%B", "main")
	assert.Contains(t, msg, "e2e: new code")
	assert.Contains(t, msg, "Sessiond-Changeset: "+cs.ID)
	assert.Contains(t, msg, "Sessiond-Session: "+id)
	assert.Equal(t, "package main\n\nfunc New() {}", git(t, repo, "show", "main:src/new.go"))
	assert.True(t, acc.WorkTreeUpdated, "the checked-out work tree moved with main")
	assert.Empty(t, git(t, repo, "status", "--porcelain"))
	got, err := os.ReadFile(filepath.Join(repo, "src", "new.go"))
	require.NoError(t, err)
	assert.Equal(t, "package main\n\nfunc New() {}\n", string(got))
	assert.Equal(t, "from agent-9", git(t, repo, "show", "main:merged.txt"))
	ss, err := c.GetSession(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "accepted", ss.State)
	layers, err := c.Layers(ctx, "r", "main")
	require.NoError(t, err)
	require.Len(t, layers, 1)
	assert.Equal(t, "accepted", layers[0].State)

	// Undo: a preview writes nothing, then the revert commit.
	prev, err := c.Undo(ctx, cs.ID, apitypes.UndoRequest{DryRun: true})
	require.NoError(t, err)
	assert.Contains(t, prev.ComesBack, "src/new.go")
	assert.Equal(t, acc.Commit, git(t, repo, "rev-parse", "main"))
	out = cli(exitOK, "changeset", "undo", cs.ID)
	assert.Contains(t, out, "main is now at")
	assert.Equal(t, acc.Commit, git(t, repo, "rev-parse", "main^"))
	assert.Equal(t, git(t, repo, "rev-parse", before+"^{tree}"), git(t, repo, "rev-parse", "main^{tree}"), "the undo restores the tree before the accept")
	layers, err = c.Layers(ctx, "r", "main")
	require.NoError(t, err)
	assert.Equal(t, "undone", layers[0].State)
	assert.NotNil(t, layers[0].UndoneAt)
	cli(exitConflict, "changeset", "undo", cs.ID)
	git(t, repo, "fsck", "--strict", "--no-dangling")
}
