package changeset_test

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
)

// csEnv is an engine with a bare repository "bare" (accepts go to its
// main branch) beside the fixture's work repository "r".
type csEnv struct {
	*env
	bare string
}

func newChangesetEnv(t *testing.T) *csEnv {
	t.Helper()
	e := newEnv(t, "small")
	bare := testrepo.BuildBare(t, "small")
	_, err := e.en.Repos.Register(t.Context(), "bare", bare)
	require.NoError(t, err)
	return &csEnv{env: e, bare: bare}
}

func (e *csEnv) bgit(args ...string) string {
	e.t.Helper()
	return testrepo.Git(e.t, e.bare, args...)
}

func (e *csEnv) head() gitstore.OID {
	e.t.Helper()
	return gitstore.MustParseOID(e.bgit("rev-parse", "main"))
}

// session starts a session on the bare repository's main with files
// written (an empty content deletes).
func (e *csEnv) session(files map[string]string) session.Session {
	e.t.Helper()
	s := e.create(session.CreateOptions{Repo: "bare", Base: "main"})
	for p, content := range files {
		if content == "" {
			_, err := e.m.Delete(e.t.Context(), s.ID, p, false, "")
			require.NoError(e.t, err)
			continue
		}
		e.write(s.ID, p, content)
	}
	return s
}

func (e *csEnv) submit(s session.Session, intent string) changeset.Changeset {
	e.t.Helper()
	c, err := e.cs.Submit(e.t.Context(), s.ID, changeset.SubmitOptions{Intent: intent})
	require.NoError(e.t, err)
	return c.Changeset
}

func (e *csEnv) accept(c changeset.Changeset) changeset.AcceptResult {
	e.t.Helper()
	res, err := e.cs.Accept(e.t.Context(), c.ID, changeset.AcceptOptions{Actor: "reviewer"})
	require.NoError(e.t, err)
	return res
}

// file returns a file of a commit on the bare repository, "" when absent.
func (e *csEnv) file(rev, p string) string {
	e.t.Helper()
	cmd := exec.Command("git", "show", rev+":"+p)
	cmd.Dir, cmd.Env = e.bare, testrepo.Env()
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// gitMaybe runs git in dir and returns its trimmed output, or an error
// when it fails (a lost compare-and-swap, a missing file).
func gitMaybe(dir string, stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, testrepo.Env(), bytes.NewReader(stdin)
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

func lines(n int, edit map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := edit[i]; ok {
			b.WriteString(s + "\n")
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// TestChangesetTimeMachine: accept A, B, C (C edits a file A created, B is
// independent); undo B and keep A and C; a preview of undoing A names the
// file C still depends on; undo C and A together. Every result is the
// tree git revert gives on the same history.
func TestChangesetTimeMachine(t *testing.T) {
	e := newChangesetEnv(t)
	ctx := t.Context()
	e.accept(e.submit(e.session(map[string]string{"lib.txt": lines(12, nil)}), "base: lib.txt"))

	sa := e.session(map[string]string{"feature.txt": lines(5, nil), "lib.txt": lines(12, map[int]string{2: "A's line 2"})})
	sb := e.session(map[string]string{"other.txt": "B\n", "lib.txt": lines(12, map[int]string{11: "B's line 11"})})
	a := e.accept(e.submit(sa, "A: add feature.txt"))
	assert.False(t, a.Rebased)
	b := e.accept(e.submit(sb, "B: independent"))
	assert.True(t, b.Rebased, "B's base moved under it: merged")
	sc := e.session(map[string]string{"feature.txt": lines(5, map[int]string{5: "C's line 5"})})
	c := e.accept(e.submit(sc, "C: edit feature.txt"))

	head := e.head()
	assert.Equal(t, c.Commit, head)
	assert.Equal(t, lines(12, map[int]string{2: "A's line 2", 11: "B's line 11"}), e.file("main", "lib.txt"))
	msg := e.bgit("log", "-1", "--format=%B", a.Commit.String())
	assert.Contains(t, msg, "A: add feature.txt\n\nSessiond-Session: "+sa.ID.String()+"\nSessiond-Changeset: "+a.Changeset.ID.String()+"\nSessiond-Agent: agent-1")
	assert.Equal(t, "agent-1 <agent-1@sessiond>|reviewer <reviewer@sessiond>", e.bgit("log", "-1", "--format=%an <%ae>|%cn <%ce>", a.Commit.String()))
	got, err := e.m.Get(ctx, sa.ID)
	require.NoError(t, err)
	assert.Equal(t, session.StateAccepted, got.State)

	layers, err := e.cs.Layers(ctx, "bare", "main")
	require.NoError(t, err)
	require.Len(t, layers, 4)
	assert.Equal(t, []uuid.UUID{c.Changeset.ID, b.Changeset.ID, a.Changeset.ID}, []uuid.UUID{layers[0].Changeset, layers[1].Changeset, layers[2].Changeset})

	// The oracle: git revert in a clone of the same history.
	work := filepath.Join(t.TempDir(), "work")
	testrepo.Git(t, filepath.Dir(work), "clone", "-q", e.bare, work)
	gitWork := func(args ...string) string { return testrepo.Git(t, work, args...) }

	// Undo B: B's changes are gone, A's and C's stay.
	undoB, err := e.cs.Undo(ctx, changeset.UndoOptions{Changesets: []uuid.UUID{b.Changeset.ID}, Actor: "undoer"})
	require.NoError(t, err)
	assert.Equal(t, []string{"lib.txt", "other.txt"}, undoB.ComesBack)
	assert.Empty(t, undoB.Stays)
	assert.Equal(t, undoB.Commit, e.head())
	assert.Equal(t, "", e.file("main", "other.txt"))
	assert.Equal(t, lines(12, map[int]string{2: "A's line 2"}), e.file("main", "lib.txt"))
	assert.Equal(t, lines(5, map[int]string{5: "C's line 5"}), e.file("main", "feature.txt"))
	gitWork("revert", "--no-edit", b.Commit.String())
	assert.Equal(t, gitWork("rev-parse", "HEAD^{tree}"), e.bgit("rev-parse", "main^{tree}"), "undo B = git revert B")

	// Undo A: a preview names feature.txt, which C still builds on.
	before := e.head()
	preview, err := e.cs.Undo(ctx, changeset.UndoOptions{Changesets: []uuid.UUID{a.Changeset.ID}, DryRun: true})
	require.NoError(t, err)
	require.Len(t, preview.Conflicts, 1)
	assert.Equal(t, "feature.txt", preview.Conflicts[0].Path)
	assert.Equal(t, merge.ConflictModifyDelete, preview.Conflicts[0].Kind)
	assert.Equal(t, []string{"lib.txt"}, preview.ComesBack)
	assert.True(t, preview.Commit.IsZero())
	assert.Equal(t, before, e.head(), "a preview writes nothing")
	_, err = e.cs.Undo(ctx, changeset.UndoOptions{Changesets: []uuid.UUID{a.Changeset.ID}})
	var ce *merge.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, before, e.head(), "a conflicting undo writes nothing")
	layers, err = e.cs.Layers(ctx, "bare", "main")
	require.NoError(t, err)
	assert.Equal(t, changeset.LayerAccepted, layers[2].State)

	// A preview of undoing A and C at once: clean.
	preview, err = e.cs.Undo(ctx, changeset.UndoOptions{Changesets: []uuid.UUID{a.Changeset.ID, c.Changeset.ID}, DryRun: true})
	require.NoError(t, err)
	assert.Empty(t, preview.Conflicts)
	assert.Equal(t, []string{"feature.txt", "lib.txt"}, preview.ComesBack)
	assert.Equal(t, before, e.head())

	// Undo A and C together (given oldest first, applied newest first).
	undoAC, err := e.cs.Undo(ctx, changeset.UndoOptions{Changesets: []uuid.UUID{a.Changeset.ID, c.Changeset.ID}})
	require.NoError(t, err)
	require.Len(t, undoAC.Reverts, 2)
	assert.Equal(t, c.Changeset.ID, undoAC.Reverts[0].Changeset, "newest first")
	assert.Equal(t, "", e.file("main", "feature.txt"))
	assert.Equal(t, lines(12, nil), e.file("main", "lib.txt"))
	gitWork("revert", "--no-edit", c.Commit.String(), a.Commit.String())
	assert.Equal(t, gitWork("rev-parse", "HEAD^{tree}"), e.bgit("rev-parse", "main^{tree}"), "undo C, A = git revert C A")
	assert.Equal(t, undoAC.Reverts[0].RevertCommit.String(), e.bgit("rev-parse", "main~1"), "one revert commit per layer")
	assert.Contains(t, e.bgit("log", "-1", "--format=%B", "main"), "Sessiond-Undo: "+a.Changeset.ID.String())

	layers, err = e.cs.Layers(ctx, "bare", "main")
	require.NoError(t, err)
	for i, want := range []changeset.LayerState{changeset.LayerUndone, changeset.LayerUndone, changeset.LayerUndone, changeset.LayerAccepted} {
		assert.Equal(t, want, layers[i].State, "layer %d", i)
		if want == changeset.LayerUndone {
			assert.False(t, layers[i].UndoneAt.IsZero())
			assert.False(t, layers[i].RevertCommit.IsZero())
		}
	}
	cs, err := e.cs.Get(ctx, b.Changeset.ID)
	require.NoError(t, err)
	assert.Equal(t, changeset.StatusUndone, cs.Status)
	// Undone is final.
	_, err = e.cs.Undo(ctx, changeset.UndoOptions{Changesets: []uuid.UUID{b.Changeset.ID}})
	assert.ErrorIs(t, err, record.ErrConflict)
	e.bgit("fsck", "--strict", "--no-dangling")
}

// TestChangesetAcceptConcurrent: 8 accepts onto one branch at once all
// land, one on top of another.
func TestChangesetAcceptConcurrent(t *testing.T) {
	e := newChangesetEnv(t)
	ctx := t.Context()
	base := e.head()
	const n = 8
	var cs []changeset.Changeset
	for i := range n {
		s := e.session(map[string]string{fmt.Sprintf("c/%d.txt", i): fmt.Sprintf("change %d\n", i)})
		cs = append(cs, e.submit(s, fmt.Sprintf("change %d", i)))
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = e.cs.Accept(ctx, cs[i].ID, changeset.AcceptOptions{}) })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "accept %d", i)
	}
	for i := range n {
		assert.Equal(t, fmt.Sprintf("change %d\n", i), e.file("main", fmt.Sprintf("c/%d.txt", i)))
	}
	revs := strings.Fields(e.bgit("rev-list", "--first-parent", base.String()+"..main"))
	assert.Len(t, revs, n)
	assert.Empty(t, e.bgit("rev-list", "--merges", "main"), "linear history")
	assert.Len(t, strings.Fields(e.bgit("rev-list", base.String()+"..main")), n)
	e.bgit("fsck", "--strict", "--no-dangling")
	layers, err := e.cs.Layers(ctx, "bare", "main")
	require.NoError(t, err)
	assert.Len(t, layers, n)
}

// TestChangesetAcceptRaceGitCLI: git update-ref moves the branch in a loop
// while sessiond accepts; no update of either is lost.
func TestChangesetAcceptRaceGitCLI(t *testing.T) {
	e := newChangesetEnv(t)
	ctx := t.Context()
	const n = 6
	var cs []changeset.Changeset
	for i := range n {
		s := e.session(map[string]string{fmt.Sprintf("s/%d.txt", i): "sessiond\n"})
		cs = append(cs, e.submit(s, fmt.Sprintf("sessiond %d", i)))
	}
	var done atomic.Bool
	var cliCommits, cliFiles []string
	var landed atomic.Int32 // git update-refs that won
	var stop atomic.Bool    // set when the test ends, however it ends
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop.Store(true)
	wg.Go(func() {
		for i := 0; !stop.Load() && (!done.Load() || len(cliCommits) < 5); i++ {
			// A commit adding cli-<i>.txt on top of the branch, then a
			// compare-and-swap of the branch with git update-ref.
			old, err := gitMaybe(e.bare, nil, "rev-parse", "main")
			if err != nil {
				continue
			}
			name := fmt.Sprintf("cli-%d.txt", i)
			blob, err1 := gitMaybe(e.bare, []byte(name+"\n"), "hash-object", "-w", "--stdin")
			top, err2 := gitMaybe(e.bare, nil, "ls-tree", old)
			tree, err3 := gitMaybe(e.bare, []byte(top+"\n100644 blob "+blob+"\t"+name+"\n"), "mktree")
			commit, err4 := gitMaybe(e.bare, nil, "commit-tree", tree, "-p", old, "-m", "cli "+name)
			if err := errors.Join(err1, err2, err3, err4); err != nil {
				t.Errorf("git: %v", err)
				return
			}
			if _, err := gitMaybe(e.bare, nil, "update-ref", "refs/heads/main", commit, old); err == nil {
				cliCommits = append(cliCommits, commit)
				cliFiles = append(cliFiles, name)
				landed.Add(1)
			}
		}
	})
	var accepted []gitstore.OID
	for _, c := range cs {
		// Interleave: let git move the branch between two accepts.
		for seen := landed.Load(); landed.Load() == seen; {
			time.Sleep(time.Millisecond)
		}
		// A lost race ends in a conflict; the client tries again, as
		// clients of a compare-and-swap do.
		var res changeset.AcceptResult
		var err error
		for range 20 {
			if res, err = e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{}); !errors.Is(err, record.ErrConflict) {
				break
			}
		}
		require.NoError(t, err)
		accepted = append(accepted, res.Commit)
		assert.True(t, res.Rebased, "git moved the branch since the base")
	}
	done.Store(true)
	wg.Wait()
	for _, c := range cliCommits {
		e.bgit("merge-base", "--is-ancestor", c, "main")
	}
	for _, c := range accepted {
		e.bgit("merge-base", "--is-ancestor", c.String(), "main")
	}
	for i := range n {
		assert.Equal(t, "sessiond\n", e.file("main", fmt.Sprintf("s/%d.txt", i)))
	}
	for _, name := range cliFiles {
		assert.Equal(t, name+"\n", e.file("main", name))
	}
	t.Logf("%d git update-ref commits, %d accepts", len(cliCommits), len(accepted))
	e.bgit("fsck", "--strict", "--no-dangling")
}

// TestChangesetReview: verdicts move the status, a policy of required
// approvals gates accept, and a new submission keeps the review history.
func TestChangesetReview(t *testing.T) {
	e := newChangesetEnv(t)
	ctx := t.Context()
	_, err := e.en.Repos.SetPolicy(ctx, repos.Policy{Repo: "bare", RequiredApprovals: 2})
	require.NoError(t, err)
	s := e.session(map[string]string{"a.txt": "reviewed\n"})
	c := e.submit(s, "needs review")
	assert.Equal(t, changeset.StatusOpen, c.Status)
	assert.Equal(t, 1, c.Revision)
	got, err := e.m.Get(ctx, s.ID)
	require.NoError(t, err)
	assert.Equal(t, session.StateSubmitted, got.State)

	_, err = e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{})
	assert.ErrorIs(t, err, record.ErrConflict, "two approvals required")

	review := func(author string, v changeset.Verdict, comments ...changeset.LineComment) changeset.Changeset {
		t.Helper()
		_, cs, err := e.cs.Review(ctx, c.ID, changeset.ReviewInput{Verdict: v, Reviewer: changeset.Reviewer{Name: author, Kind: changeset.ReviewerToken}, Body: string(v), Comments: comments})
		require.NoError(t, err)
		return cs.Changeset
	}
	assert.Equal(t, changeset.StatusChangesRequested, review("bob", changeset.VerdictRequestChanges, changeset.LineComment{Path: "a.txt", Line: 1, Body: "why?"}).Status)
	assert.Equal(t, changeset.StatusChangesRequested, review("alice", changeset.VerdictApprove).Status)
	assert.Equal(t, changeset.StatusChangesRequested, review("bob", changeset.VerdictComment).Status)
	assert.Equal(t, changeset.StatusApproved, review("bob", changeset.VerdictApprove).Status)
	_, _, err = e.cs.Review(ctx, c.ID, changeset.ReviewInput{Verdict: "lgtm", Reviewer: changeset.Reviewer{Name: "x", Kind: changeset.ReviewerToken}})
	assert.ErrorIs(t, err, record.ErrInvalid)
	_, _, err = e.cs.Review(ctx, c.ID, changeset.ReviewInput{Verdict: changeset.VerdictComment, Reviewer: changeset.Reviewer{Name: "x", Kind: changeset.ReviewerToken},
		Comments: []changeset.LineComment{{Path: "README.md", Line: 1, Body: "not in the diff"}}})
	assert.ErrorIs(t, err, record.ErrInvalid)

	// Writing after submit is allowed; the changeset stays frozen until
	// the session is submitted again, which starts a new revision.
	e.write(s.ID, "a.txt", "reviewed, then changed\n")
	_, patch, err := e.cs.Diff(ctx, c.ID)
	require.NoError(t, err)
	assert.Contains(t, string(patch.Unified()), "+reviewed\n")
	c2 := e.submit(s, "")
	assert.Equal(t, c.ID, c2.ID)
	assert.Equal(t, 2, c2.Revision)
	assert.Equal(t, changeset.StatusOpen, c2.Status, "approvals were for revision 1")
	assert.Equal(t, "needs review", c2.Intent)
	reviews, err := e.cs.Reviews(ctx, c.ID)
	require.NoError(t, err)
	assert.Len(t, reviews, 4, "the history stays")
	assert.Equal(t, c2, e.submit(s, ""), "submitting an unchanged session changes nothing")

	review("alice", changeset.VerdictApprove)
	review("carol", changeset.VerdictApprove)
	res := e.accept(c2)
	assert.Equal(t, "reviewed, then changed\n", e.file(res.Commit.String(), "a.txt"))
	_, _, err = e.cs.Review(ctx, c.ID, changeset.ReviewInput{Verdict: changeset.VerdictReject, Reviewer: changeset.Reviewer{Name: "late", Kind: changeset.ReviewerToken}})
	assert.ErrorIs(t, err, record.ErrConflict, "an accepted changeset takes comments only")
	_, err = e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{})
	assert.ErrorIs(t, err, record.ErrConflict, "accepted once")
	_, _, err = e.m.Write(ctx, s.ID, "a.txt", []byte("x"), session.WriteOptions{})
	assert.ErrorIs(t, err, record.ErrSessionClosed, "an accepted session is closed")

	rejected := e.submit(e.session(map[string]string{"b.txt": "b\n"}), "no")
	_, cs, err := e.cs.Review(ctx, rejected.ID, changeset.ReviewInput{Verdict: changeset.VerdictReject, Reviewer: changeset.Reviewer{Name: "bob", Kind: changeset.ReviewerToken}})
	require.NoError(t, err)
	assert.Equal(t, changeset.StatusRejected, cs.Status)
	_, err = e.cs.Accept(ctx, rejected.ID, changeset.AcceptOptions{})
	assert.ErrorIs(t, err, record.ErrConflict)
}

// TestChangesetAcceptRules: expected head, conflicts, stale reads, the
// checked-out branch, and recovery of an accept that moved the branch but
// was not recorded.
func TestChangesetAcceptRules(t *testing.T) {
	e := newChangesetEnv(t)
	ctx := t.Context()
	base := e.head()
	s1 := e.session(map[string]string{"a.txt": "one\n"})
	s2 := e.session(map[string]string{"a.txt": "two\n"})
	reader := e.create(session.CreateOptions{Repo: "bare", Base: "main"})
	e.read(reader.ID, "a.txt")
	e.write(reader.ID, "notes.txt", "read a.txt\n")
	c1, c2, c3 := e.submit(s1, "one"), e.submit(s2, "two"), e.submit(reader, "reader")

	wrong := gitstore.MustParseOID(strings.Repeat("1", 40))
	_, err := e.cs.Accept(ctx, c1.ID, changeset.AcceptOptions{ExpectedHead: &wrong})
	var ce *record.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "head", ce.Field)
	assert.Equal(t, base.String(), ce.Current)
	r1, err := e.cs.Accept(ctx, c1.ID, changeset.AcceptOptions{ExpectedHead: &base})
	require.NoError(t, err)

	_, err = e.cs.Accept(ctx, c2.ID, changeset.AcceptOptions{})
	var mc *merge.ConflictError
	require.ErrorAs(t, err, &mc)
	assert.Equal(t, "a.txt", mc.Conflicts[0].Path)
	assert.Equal(t, r1.Commit, e.head(), "a conflict writes nothing")

	_, err = e.cs.Accept(ctx, c3.ID, changeset.AcceptOptions{RequireFreshReads: true})
	var se *changeset.StaleReadsError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "a.txt", se.Reads[0].Path)
	assert.ErrorIs(t, err, record.ErrConflict)
	r3, err := e.cs.Accept(ctx, c3.ID, changeset.AcceptOptions{})
	require.NoError(t, err)
	require.Len(t, r3.StaleReads, 1, "reported, not refused")
	assert.Equal(t, "a.txt", r3.StaleReads[0].Path)

	// The branch a work tree has checked out: refused when the policy
	// says so, else accepted with the work tree.
	w := e.create(session.CreateOptions{Repo: "r", Base: "main"})
	e.write(w.ID, "w.txt", "w\n")
	cw, err := e.cs.Submit(ctx, w.ID, changeset.SubmitOptions{})
	require.NoError(t, err)
	_, err = e.en.Repos.SetPolicy(ctx, repos.Policy{Repo: "r", RefuseCheckedOut: true})
	require.NoError(t, err)
	_, err = e.cs.Accept(ctx, cw.ID, changeset.AcceptOptions{})
	assert.ErrorIs(t, err, record.ErrForbidden)
	_, err = e.en.Repos.SetPolicy(ctx, repos.Policy{Repo: "r"})
	require.NoError(t, err)
	acc, err := e.cs.Accept(ctx, cw.ID, changeset.AcceptOptions{})
	require.NoError(t, err)
	assert.True(t, acc.WorkTreeUpdated)
	assert.Empty(t, e.git("status", "--porcelain"))

}

// TestAcceptRecognisesOnlyItsOwnCommit: a commit another writer put on
// the branch for a changeset, with no accept of it in flight, is taken
// for the accept only when it carries the changeset's and the revision's
// trailers and the tree this accept makes on its parent; by the
// changeset's id alone, another revision's or another tree, it is just a
// commit on the branch and the accept writes its own on top.
func TestAcceptRecognisesOnlyItsOwnCommit(t *testing.T) {
	cases := []struct {
		name      string
		trailers  string
		tree      string // "head": the changeset's head tree, else the base's
		recovered bool
	}{
		{"its revision and tree", "Sessiond-Changeset: %[1]s\nSessiond-Revision: 1", "head", true},
		{"the changeset id alone", "Sessiond-Changeset: %[1]s", "head", false},
		{"another revision", "Sessiond-Changeset: %[1]s\nSessiond-Revision: 2", "head", false},
		{"another tree", "Sessiond-Changeset: %[1]s\nSessiond-Revision: 1", "base", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newChangesetEnv(t)
			ctx := t.Context()
			c := e.submit(e.session(map[string]string{"d.txt": "d\n"}), "four")
			head := e.head().String()
			require.Equal(t, head, c.BaseCommit.String())
			tree := e.bgit("rev-parse", head+"^{tree}")
			if tc.tree == "head" {
				tree = e.bgit("rev-parse", c.HeadCommit.String()+"^{tree}")
			}
			msg := "four\n\n" + fmt.Sprintf(tc.trailers, c.ID)
			commit := e.bgit("commit-tree", tree, "-p", head, "-m", msg)
			e.bgit("update-ref", "refs/heads/main", commit, head)

			res, err := e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.recovered, res.Recovered)
			if tc.recovered {
				assert.Equal(t, commit, res.Commit.String())
				assert.Equal(t, commit, e.head().String(), "nothing new written")
			} else {
				assert.Equal(t, commit, e.bgit("rev-parse", "main^"), "a commit of its own on top")
				assert.Contains(t, e.bgit("log", "-1", "--format=%B", "main"), "Sessiond-Revision: 1")
			}
			assert.Equal(t, "d", e.bgit("show", "main:d.txt"))
			layers, err := e.cs.Layers(ctx, "bare", "main")
			require.NoError(t, err)
			require.Len(t, layers, 1)
			assert.Equal(t, c.ID, layers[0].Changeset)
			assert.Equal(t, res.Commit, layers[0].Commit)
		})
	}
}

// TestAcceptHoldsToSessionPolicy: a changeset carrying a path its session
// may not write (a fork's inherited change under its deny glob) is not
// accepted; the branch does not move.
func TestAcceptHoldsToSessionPolicy(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	_, err := e.en.Repos.SetPolicy(ctx, repos.Policy{Repo: "r"})
	require.NoError(t, err)
	p := e.create(session.CreateOptions{})
	e.write(p.ID, "secret/key", "k\n")
	e.write(p.ID, "src/ok.go", "package ok\n")
	f, err := e.m.Fork(ctx, p.ID, session.ForkOptions{Policy: &session.Policy{Deny: []string{"secret/**"}}})
	require.NoError(t, err)
	c, err := e.cs.Submit(ctx, f.ID, changeset.SubmitOptions{})
	require.NoError(t, err)
	main := e.git("rev-parse", "main")
	_, err = e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{})
	assert.ErrorIs(t, err, record.ErrForbidden)
	assert.Equal(t, main, e.git("rev-parse", "main"), "the branch did not move")
	got, err := e.cs.Get(ctx, c.ID)
	require.NoError(t, err)
	assert.Equal(t, changeset.StatusOpen, got.Status)

	// The parent, which may write both, can.
	cp, err := e.cs.Submit(ctx, p.ID, changeset.SubmitOptions{})
	require.NoError(t, err)
	_, err = e.cs.Accept(ctx, cp.ID, changeset.AcceptOptions{})
	require.NoError(t, err)
}
