package session_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
)

// notes is a file that is a valid .gitmodules; notesBad the same with one
// line changed into a refused one. Long enough for rename detection to
// pair them.
var (
	notes    = strings.Repeat("# a comment line that stays the same\n", 20) + "[submodule \"x\"]\n\tpath = x\n"
	notesBad = strings.Repeat("# a comment line that stays the same\n", 20) + "[submodule \"x\"]\n\tpath = -x\n"
)

// requireRule asserts err is a *overlay.PathError for rule.
func requireRule(t *testing.T, err error, rule overlay.Rule) {
	t.Helper()
	var pe *overlay.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, rule, pe.Rule, "%v", err)
}

// fsckClean asserts `git fsck --strict` finds nothing wrong.
func fsckClean(t *testing.T, e *env) {
	t.Helper()
	cmd := exec.Command("git", "fsck", "--strict", "--no-dangling")
	cmd.Dir, cmd.Env = e.repoDir, testrepo.Env()
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "git fsck --strict: %s", out)
	assert.NotContains(t, string(out), "gitmodules")
}

// Every engine operation that writes a path runs the content rules on
// what it writes, and a refused operation changes nothing.
func TestContentRulesOnEveryWrite(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	bad := "[submodule \"x\"]\n\tpath = -x\n"
	e.write(s.ID, "notes.txt", bad) // not .gitmodules: no rule
	e.write(s.ID, ".gitmodules", "[submodule \"x\"]\n\tpath = x\n")
	view := e.view(s.ID)
	seq := func() int64 {
		got, err := e.m.Get(ctx, s.ID)
		require.NoError(t, err)
		return got.Seq
	}
	before := seq()

	_, _, err := e.m.Write(ctx, s.ID, ".gitmodules", []byte(bad), session.WriteOptions{})
	requireRule(t, err, overlay.RuleGitmodulesPath)
	_, _, err = e.m.Write(ctx, s.ID, "deep/dir/.gitmodules", []byte("[submodule \"../../evil\"]\n\tpath = y\n"), session.WriteOptions{})
	requireRule(t, err, overlay.RuleGitmodulesName)
	_, _, err = e.m.Write(ctx, s.ID, ".gitmodules", []byte("[submodule \"x\"]\n\turl = --upload-pack=touch$IFS/tmp/pwn\n"), session.WriteOptions{})
	requireRule(t, err, overlay.RuleGitmodulesURL)
	_, _, err = e.m.Append(ctx, s.ID, ".gitmodules", []byte("\tupdate = !sh\n"), session.WriteOptions{})
	requireRule(t, err, overlay.RuleGitmodulesUpdate)
	_, err = e.m.Copy(ctx, s.ID, "notes.txt", "sub/.gitmodules", "")
	requireRule(t, err, overlay.RuleGitmodulesPath)
	_, err = e.m.Move(ctx, s.ID, "notes.txt", "GITMOD~1", "")
	requireRule(t, err, overlay.RuleGitmodulesPath)
	for _, ed := range [][]session.Edit{
		{{Op: "write", Path: "new.txt", Content: bad}, {Op: "move", Path: "new.txt", To: "x/.gitmodules"}}, // a blob queued in the batch
		{{Op: "replace", Path: ".gitmodules", Old: "path = x", New: "path = -x"}},
		{{Op: "replace", Glob: "**/.gitmodules", Old: "path = x", New: "path = -x"}},
		{{Op: "write", Path: ".gitattributes", Content: strings.Repeat("a", 4096)}},
	} {
		_, err = e.m.Edits(ctx, s.ID, ed, false, "")
		var pe *overlay.PathError
		require.ErrorAs(t, err, &pe, "%+v", ed)
		_, err = e.m.Edits(ctx, s.ID, ed, true, "")
		require.ErrorAs(t, err, &pe, "dry run of %+v", ed)
	}
	assert.Equal(t, view, e.view(s.ID))
	assert.Equal(t, before, seq(), "nothing recorded")
	fsckClean(t, e)
}

// A merge can make a refused .gitmodules out of two accepted sides: one
// side renames a file to .gitmodules, the other changes the file. Merge,
// rebase and accept refuse the result.
func TestContentRulesOnMerges(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	// notes.txt on main, valid as a .gitmodules.
	e.git("checkout", "-q", "main")
	writeWorkFile(t, e, "notes.txt", notes)
	e.git("add", "notes.txt")
	e.git("commit", "-q", "-m", "notes")

	a := e.create(session.CreateOptions{})
	b := e.create(session.CreateOptions{AgentID: "b"})
	_, err := e.m.Move(ctx, a.ID, "notes.txt", ".gitmodules", "")
	require.NoError(t, err)
	e.write(b.ID, "notes.txt", notesBad)
	_, _, err = e.m.MergeFrom(ctx, a.ID, b.ID, "")
	requireRule(t, err, overlay.RuleGitmodulesPath)
	assert.Equal(t, notes, e.read(a.ID, ".gitmodules"))

	// The branch changes notes.txt the same way: rebasing the session
	// onto it is refused, and so is accepting its changeset onto it.
	_, err = e.en.Repos.SetPolicy(ctx, repos.Policy{Repo: "r"})
	require.NoError(t, err)
	c, err := e.cs().Submit(ctx, a.ID, changeset.SubmitOptions{Intent: "modules"})
	require.NoError(t, err)
	writeWorkFile(t, e, "notes.txt", notesBad)
	e.git("commit", "-q", "-am", "upstream")
	head := e.oid("main")
	_, _, err = e.m.Rebase(ctx, a.ID, "main", "")
	requireRule(t, err, overlay.RuleGitmodulesPath)
	_, err = e.cs().Accept(ctx, c.ID, changeset.AcceptOptions{})
	requireRule(t, err, overlay.RuleGitmodulesPath)
	assert.Equal(t, head, e.oid("main"), "the branch did not move")
	assert.Equal(t, notes, e.read(a.ID, ".gitmodules"))
	fsckClean(t, e)
}

// Writing back the base's own blob is a revert, allowed whatever it holds:
// the session adds nothing to the repository.
func TestContentRulesAllowRevert(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	e.git("checkout", "-q", "main")
	writeWorkFile(t, e, ".gitmodules", "[submodule \"x\"]\n\tpath = -x\n")
	e.git("add", ".gitmodules")
	e.git("commit", "-q", "-m", "written with the git CLI")
	s := e.create(session.CreateOptions{})
	_, err := e.m.Delete(ctx, s.ID, ".gitmodules", false, "")
	require.NoError(t, err)
	_, _, err = e.m.Write(ctx, s.ID, ".gitmodules", []byte("[submodule \"x\"]\n\tpath = -x\n"), session.WriteOptions{})
	require.NoError(t, err)
	ents, err := e.m.ListFiles(ctx, s.ID, session.ListOptions{OnlyModified: true, Recursive: true})
	require.NoError(t, err)
	assert.Empty(t, ents)
}
