package session_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/session"
)

// The conflicts tests: the git CLI, rebasing the same commit in a clone
// with merge.conflictStyle=diff3, is the oracle.

const conflictBase = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"

// sessionEdits are the session's changes (and the commit's in the clone).
var sessionEdits = map[string]string{
	"c.txt":   "one\nTWO by the session\nthree\nfour\nfive\nsix\nseven\nEIGHT by the session\nnine\nten\n",
	"new.txt": "the session's new file\n",
}

// conflictRepo commits c.txt and d.txt on main, starts a session there,
// makes sessionEdits (plus what more holds) in it, and then moves main:
// c.txt's line two changed differently (a conflict), line five changed
// (clean), d.txt deleted when deleteD, and a new upstream file.
func conflictRepo(t *testing.T, more map[string]string, deleteD bool) (*env, session.Session, gitstore.OID) {
	e := newEnv(t, "small")
	e.git("checkout", "-q", "main")
	writeWorkFile(t, e, "c.txt", conflictBase)
	writeWorkFile(t, e, "d.txt", "d\n")
	e.git("add", "c.txt", "d.txt")
	e.git("commit", "-qm", "conflict base")
	base := e.oid("main")
	s := e.create(session.CreateOptions{Base: "main"})
	for p, c := range sessionEdits {
		e.write(s.ID, p, c)
	}
	for p, c := range more {
		e.write(s.ID, p, c)
	}
	writeWorkFile(t, e, "c.txt", strings.Replace(strings.Replace(conflictBase, "two", "Two upstream", 1), "five", "FIVE upstream", 1))
	writeWorkFile(t, e, "up.txt", "upstream's file\n")
	e.git("add", "c.txt", "up.txt")
	if deleteD {
		e.git("rm", "-q", "d.txt")
	}
	e.git("commit", "-qm", "upstream")
	return e, s, base
}

// gitRebase replays the session's edits as one commit on base in a clone
// and rebases it onto main with git's diff3 conflict style; it returns
// the clone, left mid-rebase.
func gitRebase(t *testing.T, e *env, base gitstore.OID, edits map[string]string, deletes ...string) string {
	dir := filepath.Join(t.TempDir(), "clone")
	testrepo.Git(t, filepath.Dir(dir), "clone", "-q", e.repoDir, dir)
	git := func(args ...string) string { return testrepo.Git(t, dir, args...) }
	git("checkout", "-q", "-b", "work", base.String())
	for p, c := range edits {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644))
		git("add", p)
	}
	for _, p := range deletes {
		git("rm", "-q", p)
	}
	git("commit", "-qm", "the session's change")
	cmd := exec.Command("git", "-c", "merge.conflictStyle=diff3", "rebase", "origin/main")
	cmd.Dir, cmd.Env = dir, testrepo.Env()
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "git rebase conflicts: %s", out)
	return dir
}

var markerLabel = regexp.MustCompile(`(?m)^(<{7}|\|{7}|>{7}) .*$`)

// unlabelled drops the labels of conflict markers: git's name commits,
// sessiond's the branch, the session and its base.
func unlabelled(s string) string { return markerLabel.ReplaceAllString(s, "$1") }

// workFiles returns a work tree's files (not .git): path → content.
func workFiles(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Type()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[filepath.ToSlash(rel)] = target
			return err
		}
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	}))
	return out
}

// gitStages is git ls-files -u as path → "stage mode oid" lines.
func gitStages(t *testing.T, dir string) []string {
	var out []string
	for _, l := range strings.Split(testrepo.Git(t, dir, "ls-files", "-u"), "\n") {
		if l == "" {
			continue
		}
		meta, p, _ := strings.Cut(l, "\t")
		f := strings.Fields(meta)
		out = append(out, p+" "+f[2]+" "+f[0]+" "+f[1])
	}
	return out
}

// stageLines renders ConflictStages as gitStages does.
func stageLines(es []session.StageEntry) []string {
	var out []string
	for _, e := range es {
		for i, v := range []*merge.Version{e.Base, e.Ours, e.Theirs} {
			if v != nil {
				out = append(out, e.Path+" "+string(rune('1'+i))+" "+v.Mode.String()+" "+v.OID.String())
			}
		}
	}
	return out
}

// rebaseBesideGit rebases session s onto onto with conflicts "keep", and
// the same edits (sessionEdits and more) from base in a clone with git;
// the conflicts must be of the kinds want, the view git's work tree (the
// markers' labels aside) and the stages git ls-files -u's. It returns
// the clone, left mid-rebase.
func rebaseBesideGit(t *testing.T, e *env, s session.Session, base gitstore.OID, more map[string]string, onto string, want map[string]merge.ConflictKind) string {
	t.Helper()
	edits := map[string]string{}
	for p, c := range sessionEdits {
		edits[p] = c
	}
	for p, c := range more {
		edits[p] = c
	}
	clone := gitRebase(t, e, base, edits)
	res, err := e.m.RebaseWith(t.Context(), s.ID, onto, "", session.ConflictsKeep)
	require.NoError(t, err)
	kinds := map[string]merge.ConflictKind{}
	for _, c := range res.Conflicts {
		kinds[c.Path] = c.Kind
	}
	assert.Equal(t, want, kinds)
	got, gitView := e.view(s.ID), workFiles(t, clone)
	got["c.txt"], gitView["c.txt"] = unlabelled(got["c.txt"]), unlabelled(gitView["c.txt"])
	assert.Equal(t, gitView, got)
	stages, err := e.m.ConflictStages(t.Context(), s.ID)
	require.NoError(t, err)
	assert.Equal(t, gitStages(t, clone), stageLines(stages))
	return clone
}

// acceptBesideGit resolves the clone as the session was: gitRm removed,
// c.txt theirs, and continues git's rebase; the session's changeset,
// submitted and accepted, must commit the tree git's rebase did.
func acceptBesideGit(t *testing.T, e *env, s session.Session, clone, gitRm string) {
	t.Helper()
	testrepo.Git(t, clone, "rm", "-q", gitRm)
	testrepo.Git(t, clone, "checkout", "--theirs", "c.txt")
	testrepo.Git(t, clone, "add", "c.txt")
	testrepo.Git(t, clone, "-c", "core.editor=true", "rebase", "--continue")
	cs, err := e.cs().Submit(t.Context(), s.ID, changeset.SubmitOptions{Intent: "x"})
	require.NoError(t, err)
	acc, err := e.cs().Accept(t.Context(), cs.ID, changeset.AcceptOptions{})
	require.NoError(t, err)
	assert.Equal(t, testrepo.Git(t, clone, "rev-parse", "HEAD^{tree}"), e.git("rev-parse", acc.Commit.String()+"^{tree}"))
}

// TestRebaseKeepConflictsAsGit: a rebase with conflicts "keep" leaves the
// session's view as git rebase (merge.conflictStyle=diff3) leaves the work
// tree: the same markers, base section included, every clean change
// applied; the stages ConflictStages gives are git ls-files -u's.
// Unresolved, the conflict blocks submit and the accept of a changeset
// submitted before; resolved the same way in both, the accepted tree is
// the tree git's rebase --continue commits.
func TestRebaseKeepConflictsAsGit(t *testing.T) {
	e, s, base := conflictRepo(t, nil, false)
	ctx := t.Context()
	// A changeset submitted before the conflict.
	cs, err := e.cs().Submit(ctx, s.ID, changeset.SubmitOptions{Intent: "edits"})
	require.NoError(t, err)

	clone := gitRebase(t, e, base, sessionEdits)
	res, err := e.m.RebaseWith(ctx, s.ID, "main", "", session.ConflictsKeep)
	require.NoError(t, err)
	assert.Equal(t, e.oid("main"), res.Session.BaseCommit, "the session moved")
	require.Len(t, res.Conflicts, 1)
	assert.Equal(t, "c.txt", res.Conflicts[0].Path)
	assert.Equal(t, merge.ConflictContent, res.Conflicts[0].Kind)
	require.Len(t, res.Conflicts[0].Hunks, 1)

	gitView := workFiles(t, clone)
	got := e.view(s.ID)
	require.Contains(t, got["c.txt"], "|||||||", "diff3 style: the base's section")
	assert.Contains(t, got["c.txt"], "\n<<<<<<< HEAD\n", "ours is HEAD, as git rebase labels it")
	assert.Equal(t, unlabelled(gitView["c.txt"]), unlabelled(got["c.txt"]), "the markers git rebase writes")
	assert.NotEqual(t, got["c.txt"], unlabelled(got["c.txt"]), "labelled")
	kept := got["c.txt"]
	got["c.txt"], gitView["c.txt"] = "", ""
	assert.Equal(t, gitView, got, "every clean change applied, as git's")
	stages, err := e.m.ConflictStages(ctx, s.ID)
	require.NoError(t, err)
	assert.Equal(t, gitStages(t, clone), stageLines(stages), "git ls-files -u")

	// Unresolved: submit and accept are refused with the list.
	_, err = e.cs().Submit(ctx, s.ID, changeset.SubmitOptions{})
	var ue *session.UnresolvedError
	require.ErrorAs(t, err, &ue)
	require.ErrorIs(t, err, session.ErrUnresolvedConflicts)
	assert.Equal(t, "c.txt", ue.Conflicts[0].Path)
	_, err = e.cs().Accept(ctx, cs.ID, changeset.AcceptOptions{})
	require.ErrorAs(t, err, &ue)
	// Nor does another rebase go over them.
	_, err = e.m.RebaseWith(ctx, s.ID, "main", "", session.ConflictsKeep)
	require.ErrorIs(t, err, session.ErrUnresolvedConflicts)
	list, err := e.m.Conflicts(ctx, s.ID)
	require.NoError(t, err)
	require.Len(t, list, 1)

	// A marker left in is still a conflict; all gone resolves it.
	half := strings.Replace(kept, "=======\n", "", 1)
	e.write(s.ID, "c.txt", half)
	list, err = e.m.Conflicts(ctx, s.ID)
	require.NoError(t, err)
	require.Len(t, list, 1, "markers remain")
	resolved := strings.Replace(strings.Replace(conflictBase, "two", "TWO by both", 1), "five", "FIVE upstream", 1)
	resolved = strings.Replace(resolved, "eight", "EIGHT by the session", 1)
	e.write(s.ID, "c.txt", resolved)
	list, err = e.m.Conflicts(ctx, s.ID)
	require.NoError(t, err)
	assert.Empty(t, list)

	require.NoError(t, os.WriteFile(filepath.Join(clone, "c.txt"), []byte(resolved), 0o644))
	testrepo.Git(t, clone, "add", "c.txt")
	testrepo.Git(t, clone, "-c", "core.editor=true", "rebase", "--continue")
	cs, err = e.cs().Submit(ctx, s.ID, changeset.SubmitOptions{})
	require.NoError(t, err)
	acc, err := e.cs().Accept(ctx, cs.ID, changeset.AcceptOptions{})
	require.NoError(t, err)
	assert.Equal(t, testrepo.Git(t, clone, "rev-parse", "HEAD^{tree}"), e.git("rev-parse", acc.Commit.String()+"^{tree}"),
		"the accepted tree is git's after the same resolution")
}

// TestKeepModifyDelete: the session modified a file upstream deleted.
// git keeps the session's file, stages 1 and 3; deleting it resolves the
// conflict, as git rm does, and the accepted tree is git's.
func TestKeepModifyDelete(t *testing.T) {
	more := map[string]string{"d.txt": "d changed by the session\n"}
	e, s, base := conflictRepo(t, more, true)
	ctx := t.Context()
	clone := rebaseBesideGit(t, e, s, base, more, "", map[string]merge.ConflictKind{"c.txt": merge.ConflictContent, "d.txt": merge.ConflictDeleteModify})

	// Taking git's resolution of c.txt (theirs) and deleting d.txt.
	_, err := e.m.Delete(ctx, s.ID, "d.txt", false, "")
	require.NoError(t, err)
	list, err := e.m.Conflicts(ctx, s.ID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "c.txt", list[0].Path)
	// An explicit resolve takes the file as it is, markers and all.
	_, err = e.m.Resolve(ctx, s.ID, []string{"d.txt"})
	require.ErrorIs(t, err, record.ErrInvalid, "no conflict there any more")
	list, err = e.m.Resolve(ctx, s.ID, []string{"c.txt"})
	require.NoError(t, err)
	assert.Empty(t, list)
	e.write(s.ID, "c.txt", sessionEdits["c.txt"])
	acceptBesideGit(t, e, s, clone, "d.txt")
}

// TestRerereReuse: a conflict resolved in one session is remembered for
// the repository; the same conflict in another session is offered the
// resolution, and a rebase with conflicts "reuse" applies it.
func TestRerereReuse(t *testing.T) {
	e, a, base := conflictRepo(t, nil, false)
	ctx := t.Context()
	b := e.create(session.CreateOptions{Base: base.String()})
	c := e.create(session.CreateOptions{Base: base.String()})
	for p, content := range sessionEdits {
		e.write(b.ID, p, content)
		e.write(c.ID, p, content)
	}
	_, err := e.m.RebaseWith(ctx, a.ID, "main", "", session.ConflictsKeep)
	require.NoError(t, err)
	resolved := strings.Replace(e.read(a.ID, "c.txt"), "<<<<<<<", "", 1) // not yet
	require.Contains(t, resolved, "|||||||")
	fixed := "one\nTWO, resolved once\nthree\nfour\nFIVE upstream\nsix\nseven\nEIGHT by the session\nnine\nten\n"
	e.write(a.ID, "c.txt", fixed)
	list, err := e.m.Conflicts(ctx, a.ID)
	require.NoError(t, err)
	require.Empty(t, list, "resolved, and remembered")

	// keep: the conflict stays, with the resolution offered.
	res, err := e.m.RebaseWith(ctx, b.ID, "main", "", session.ConflictsKeep)
	require.NoError(t, err)
	require.Len(t, res.Conflicts, 1)
	list, err = e.m.Conflicts(ctx, b.ID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, fixed, string(list[0].Offered))
	assert.NotEmpty(t, list[0].Rerere)

	// reuse: applied, nothing left to resolve.
	res, err = e.m.RebaseWith(ctx, c.ID, "main", "", session.ConflictsReuse)
	require.NoError(t, err)
	assert.Empty(t, res.Conflicts)
	assert.Equal(t, []string{"c.txt"}, res.Reused)
	assert.Equal(t, fixed, e.read(c.ID, "c.txt"))
	list, err = e.m.Conflicts(ctx, c.ID)
	require.NoError(t, err)
	assert.Empty(t, list)
}

// TestRollbackDropsConflictsUnremembered: a rollback that takes the
// markers away ends the conflict, and remembers no resolution: another
// session with the same conflict is offered none.
func TestRollbackDropsConflictsUnremembered(t *testing.T) {
	e, a, base := conflictRepo(t, nil, false)
	ctx := t.Context()
	b := e.create(session.CreateOptions{Base: base.String()})
	for p, content := range sessionEdits {
		e.write(b.ID, p, content)
	}
	_, err := e.m.RebaseWith(ctx, a.ID, "main", "", session.ConflictsKeep)
	require.NoError(t, err)
	_, _, err = e.m.Rollback(ctx, a.ID, session.RollbackBase, "")
	require.NoError(t, err)
	list, err := e.m.Conflicts(ctx, a.ID)
	require.NoError(t, err)
	assert.Empty(t, list)
	_, err = e.m.RebaseWith(ctx, b.ID, "main", "", session.ConflictsKeep)
	require.NoError(t, err)
	list, err = e.m.Conflicts(ctx, b.ID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Nil(t, list[0].Offered, "nothing was resolved")
}

// TestKeepFileDirectory: upstream added a file where the session made a
// directory. git moves the file aside to x~HEAD (stage 2 there); so does
// sessiond, and deleting it resolves the conflict, as git rm does.
func TestKeepFileDirectory(t *testing.T) {
	more := map[string]string{"x/y.txt": "the session's x/y\n"}
	e, s, base := conflictRepo(t, more, false)
	ctx := t.Context()
	e.git("checkout", "-q", "main")
	writeWorkFile(t, e, "x", "upstream's file x\n")
	e.git("add", "x")
	e.git("commit", "-qm", "upstream's x")
	// x~HEAD beside the directory x, as git leaves them.
	clone := rebaseBesideGit(t, e, s, base, more, "main", map[string]merge.ConflictKind{"c.txt": merge.ConflictContent, "x": merge.ConflictFileDirectory})

	_, err := e.m.Delete(ctx, s.ID, "x~HEAD", false, "")
	require.NoError(t, err)
	e.write(s.ID, "c.txt", sessionEdits["c.txt"])
	list, err := e.m.Conflicts(ctx, s.ID)
	require.NoError(t, err)
	assert.Empty(t, list)
	acceptBesideGit(t, e, s, clone, "x~HEAD")
}
