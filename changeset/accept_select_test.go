package changeset_test

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/session"
)

// changedLines are the removed and added lines of hunks in order: what a
// diff changes, without the context and line numbers that move when
// other hunks are applied first.
func changedLines(hs []merge.Hunk) []string {
	var out []string
	for _, h := range hs {
		for _, l := range h.Lines {
			if l[0] != ' ' {
				out = append(out, l)
			}
		}
	}
	return out
}

// gitApply applies a patch with git apply onto tree in a temporary index
// of the bare repository and returns the tree git writes.
func (e *csEnv) gitApply(tree gitstore.OID, patch []byte) gitstore.OID {
	e.t.Helper()
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(e.t.TempDir(), "index")}
	testrepo.GitEnv(e.t, e.bare, env, nil, "read-tree", tree.String())
	if len(patch) > 0 {
		testrepo.GitEnv(e.t, e.bare, env, patch, "apply", "--cached", "--binary", "-")
	}
	return gitstore.MustParseOID(testrepo.GitEnv(e.t, e.bare, env, nil, "write-tree"))
}

// selectPatch is p with only the files and hunks of sel, as a reviewer
// would cut the unified diff by hand.
func selectPatch(p *merge.Patch, sel merge.Selection) *merge.Patch {
	out := &merge.Patch{}
	for _, f := range p.Files {
		switch {
		case slices.Contains(sel.Files, f.Path()):
			out.Files = append(out.Files, f)
		case sel.Hunks[f.Path()] != nil:
			g := f
			g.Hunks = nil
			for _, i := range sel.Hunks[f.Path()] {
				g.Hunks = append(g.Hunks, f.Hunks[i])
			}
			out.Files = append(out.Files, g)
		}
	}
	return out
}

// TestAcceptSelectProperty: for random changesets (edits, additions,
// deletions, renames, mode changes, binary files) and random selections of
// their files and hunks, the accepted branch's tree is the base with the
// selected part of the unified diff applied by git apply, and the
// session, rebased onto it, keeps exactly the rest: its diff changes the
// lines of the hunks left out, and git apply of those onto the branch
// gives the session's tree.
func TestAcceptSelectProperty(t *testing.T) {
	e := newChangesetEnv(t)
	ctx := t.Context()
	iter := 0
	limitChecks(t, 40)
	rapid.Check(t, func(rt *rapid.T) {
		iter++
		dir := fmt.Sprintf("p%d", iter)
		nfiles := rapid.IntRange(1, 4).Draw(rt, "files")
		type file struct {
			path  string
			lines []string
			eol   bool
		}
		files := make([]file, nfiles)
		base := e.session(nil)
		var edits []session.Edit
		for i := range files {
			f := &files[i]
			f.path = fmt.Sprintf("%s/f%d.txt", dir, i)
			n := rapid.IntRange(1, 40).Draw(rt, "lines")
			for j := range n {
				f.lines = append(f.lines, fmt.Sprintf("%s base %d", f.path, j))
			}
			f.eol = rapid.IntRange(0, 4).Draw(rt, "eol") > 0
			edits = append(edits, session.Edit{Op: "write", Path: f.path, Content: render(f.lines, f.eol)})
		}
		edits = append(edits, session.Edit{Op: "write", Path: dir + "/bin.dat", Content: "bin\x00base\x00"})
		_, err := e.m.Edits(ctx, base.ID, edits, false, "")
		require.NoError(rt, err)
		e.accept(e.submit(base, "base "+dir))
		baseHead := e.head()

		s := e.session(nil)
		fresh := 0
		newLine := func() string { fresh++; return fmt.Sprintf("%s new %d", dir, fresh) }
		for _, f := range files {
			switch rapid.SampledFrom([]string{"edit", "edit", "edit", "edit+mode", "delete", "rename", "mode", "keep"}).Draw(rt, "action") {
			case "edit", "edit+mode":
				ls := slices.Clone(f.lines)
				for range rapid.IntRange(1, 5).Draw(rt, "edits") {
					at := rapid.IntRange(0, len(ls)).Draw(rt, "at")
					switch op := rapid.IntRange(0, 2).Draw(rt, "op"); {
					case op == 0 || len(ls) == 0 || at == len(ls):
						ls = slices.Insert(ls, at, newLine())
					case op == 1:
						ls[at] = newLine()
					default:
						ls = slices.Delete(ls, at, at+1)
					}
				}
				eol := f.eol
				if rapid.IntRange(0, 5).Draw(rt, "flip eol") == 0 {
					eol = !eol
				}
				content := render(ls, eol)
				if content == render(f.lines, f.eol) {
					continue
				}
				mode := gitstore.Mode(0)
				if strings.HasSuffix(rapid.SampledFrom([]string{"edit", "edit+mode"}).Draw(rt, "mode?"), "mode") {
					mode = gitstore.ModeExec
				}
				_, _, err := e.m.Write(ctx, s.ID, f.path, []byte(content), session.WriteOptions{Mode: mode})
				require.NoError(rt, err)
			case "delete":
				_, err := e.m.Delete(ctx, s.ID, f.path, false, "")
				require.NoError(rt, err)
			case "rename":
				_, err := e.m.Move(ctx, s.ID, f.path, f.path+".moved", "")
				require.NoError(rt, err)
			case "mode":
				_, _, err := e.m.Write(ctx, s.ID, f.path, []byte(render(f.lines, f.eol)), session.WriteOptions{Mode: gitstore.ModeExec})
				require.NoError(rt, err)
			}
		}
		if rapid.Bool().Draw(rt, "add") {
			e.write(s.ID, dir+"/added.txt", newLine()+"\n"+newLine()+"\n")
		}
		if rapid.Bool().Draw(rt, "binary") {
			e.write(s.ID, dir+"/bin.dat", "bin\x00"+newLine()+"\x00")
		}
		tree, _, err := e.m.Tree(ctx, s.ID)
		require.NoError(rt, err)
		baseCommit, err := e.en.Repos.Open(ctx, "bare")
		require.NoError(rt, err)
		bc, err := baseCommit.Commit(ctx, baseHead)
		require.NoError(rt, err)
		if tree == bc.Tree {
			e.write(s.ID, dir+"/added.txt", newLine()+"\n")
		}
		c := e.submit(s, "work "+dir)
		_, patch, err := e.cs.Diff(ctx, c.ID)
		require.NoError(rt, err)

		// A random selection: per file whole, left out, or some hunks.
		var sel, left merge.Selection
		sel.Hunks, left.Hunks = map[string][]int{}, map[string][]int{}
		for _, f := range patch.Files {
			choice := rapid.IntRange(0, 2).Draw(rt, "choice "+f.Path())
			if choice == 2 && (!f.Partial() || len(f.Hunks) < 2) {
				choice = rapid.IntRange(0, 1).Draw(rt, "whole or none")
			}
			switch choice {
			case 0:
				sel.Files = append(sel.Files, f.Path())
			case 1:
				left.Files = append(left.Files, f.Path())
			case 2:
				take := rapid.SliceOfNDistinct(rapid.IntRange(0, len(f.Hunks)-1), 1, len(f.Hunks)-1, rapid.ID).Draw(rt, "hunks")
				slices.Sort(take)
				sel.Hunks[f.Path()] = take
				for h := range f.Hunks {
					if !slices.Contains(take, h) {
						left.Hunks[f.Path()] = append(left.Hunks[f.Path()], h)
					}
				}
			}
		}
		if sel.IsEmpty() {
			sel.Files, left.Files = append(sel.Files, left.Files[0]), left.Files[1:]
		}

		res, err := e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{Actor: "reviewer", Select: &sel})
		require.NoError(rt, err)
		branch := gitstore.MustParseOID(e.bgit("rev-parse", "main^{tree}"))
		assert.Equal(rt, e.gitApply(bc.Tree, selectPatch(patch, sel).Unified()), branch,
			"the branch is the base with the selected hunks applied by git apply")
		assert.Equal(rt, res.Commit.String(), e.bgit("rev-parse", "main"))
		assert.Equal(rt, baseHead.String(), e.bgit("rev-parse", "main^"))

		partial := !left.IsEmpty()
		got, err := e.cs.Get(ctx, c.ID)
		require.NoError(rt, err)
		assert.Equal(rt, changeset.StatusAccepted, got.Status)
		if !partial {
			assert.Nil(rt, got.Selection, "a selection of everything is a whole accept")
			return
		}
		require.NotNil(rt, got.Selection)
		assert.ElementsMatch(rt, left.Files, got.Selection.LeftOut.Files)
		for p, hs := range left.Hunks {
			assert.Equal(rt, hs, got.Selection.LeftOut.Hunks[p], "left out of %s", p)
		}
		assert.True(rt, res.SessionRebased, "session rebased: %s %v", res.SessionError, res.SessionConflicts)

		ss, err := e.m.Get(ctx, s.ID)
		require.NoError(rt, err)
		assert.Equal(rt, res.Commit, ss.BaseCommit, "the session is based on the accepted commit")
		assert.Equal(rt, session.StateActive, ss.State, "the session stays open with the rest")
		after, afterBase, err := e.m.Tree(ctx, s.ID)
		require.NoError(rt, err)
		assert.Equal(rt, tree, after, "the session's view does not change")
		assert.Equal(rt, branch, afterBase)

		rest := selectPatch(patch, left)
		for i := range rest.Files {
			if sel.Hunks[rest.Files[i].Path()] != nil { // the mode went with the hunks taken
				rest.Files[i].OldMode = rest.Files[i].NewMode
			}
		}
		assert.Equal(rt, after, e.gitApply(branch, rest.Unified()), "the hunks left out, applied by git apply to the branch, give the session's view")
		repo, err := e.en.Repos.Open(ctx, "bare")
		require.NoError(rt, err)
		remaining, err := merge.Diff(ctx, repo, afterBase, after, merge.DiffOptions{}, merge.PatchOptions{})
		require.NoError(rt, err)
		want, have := map[string]string{}, map[string]string{}
		for _, f := range rest.Files {
			want[f.Path()] = string(f.Status) + "\n" + strings.Join(changedLines(f.Hunks), "")
		}
		for _, f := range remaining.Files {
			have[f.Path()] = string(f.Status) + "\n" + strings.Join(changedLines(f.Hunks), "")
		}
		assert.Equal(rt, want, have, "the session's remaining diff is the part left out")
	})
}

// limitChecks runs n rapid checks (a tenth with -short) unless
// -rapid.checks says how many: each check here is a few accepts and git
// processes.
func limitChecks(t *testing.T, n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if set {
		return
	}
	if testing.Short() {
		n = max(n/10, 1)
	}
	old := flag.Lookup("rapid.checks").Value.String()
	require.NoError(t, flag.Set("rapid.checks", strconv.Itoa(n)))
	t.Cleanup(func() { _ = flag.Set("rapid.checks", old) })
}

func render(lines []string, eol bool) string {
	s := strings.Join(lines, "\n")
	if eol && len(lines) > 0 {
		s += "\n"
	}
	return s
}

// TestAcceptSelect: a partial accept onto a moved branch merges the
// selected hunks onto the head; dry_run shows the commit's diff and writes
// nothing; bad selections are refused with nothing written.
func TestAcceptSelect(t *testing.T) {
	e := newChangesetEnv(t)
	ctx := t.Context()
	base := e.session(map[string]string{"doc.txt": lines(40, nil), "other.txt": "other\n"})
	e.accept(e.submit(base, "base"))

	s := e.session(map[string]string{
		"doc.txt": lines(40, map[int]string{2: "two", 20: "twenty", 38: "thirty-eight"}),
		"new.txt": "new\n",
	})
	c := e.submit(s, "three hunks and a file")
	_, patch, err := e.cs.Diff(ctx, c.ID)
	require.NoError(t, err)
	require.Len(t, patch.Files, 2)
	require.Len(t, patch.Files[0].Hunks, 3)

	before := e.head()
	bad := []struct {
		name string
		sel  merge.Selection
		want string
	}{
		{"no such hunk", merge.Selection{Hunks: map[string][]int{"doc.txt": {3}}}, "no hunk 3"},
		{"negative hunk", merge.Selection{Hunks: map[string][]int{"doc.txt": {-1}}}, "no hunk -1"},
		{"no such file", merge.Selection{Files: []string{"nope.txt"}}, "not a file"},
		{"hunks of a file taken whole", merge.Selection{Hunks: map[string][]int{"new.txt": {0, 1}}}, "no hunk 1"},
		{"both", merge.Selection{Files: []string{"doc.txt"}, Hunks: map[string][]int{"doc.txt": {0}}}, "both"},
		{"nothing", merge.Selection{Hunks: map[string][]int{"doc.txt": {}}}, "takes no change"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{Select: &tc.sel})
			require.ErrorIs(t, err, record.ErrInvalid)
			require.ErrorIs(t, err, merge.ErrBadSelection)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, before, e.head(), "nothing written")
			got, err := e.cs.Get(ctx, c.ID)
			require.NoError(t, err)
			assert.Equal(t, changeset.StatusOpen, got.Status)
		})
	}

	// A selection made on another revision is refused.
	_, err = e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{Select: &merge.Selection{Hunks: map[string][]int{"doc.txt": {0}}}, Revision: 2})
	var rce *record.ConflictError
	require.ErrorAs(t, err, &rce)
	assert.Equal(t, "revision", rce.Field)
	assert.Equal(t, "1", rce.Current)
	assert.Equal(t, before, e.head(), "nothing written")

	// The branch moves: another change to other.txt lands first.
	o := e.session(map[string]string{"other.txt": "changed elsewhere\n"})
	e.accept(e.submit(o, "elsewhere"))
	moved := e.head()

	sel := merge.Selection{Hunks: map[string][]int{"doc.txt": {0, 2}}}
	dry, err := e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{Select: &sel, DryRun: true})
	require.NoError(t, err)
	assert.True(t, dry.DryRun)
	assert.Equal(t, moved, dry.Head)
	assert.Equal(t, moved, e.head(), "a dry run does not move the branch")
	require.NotNil(t, dry.Preview)
	require.Len(t, dry.Preview.Files, 1)
	assert.Equal(t, []string{"-line 2\n", "+two\n", "-line 38\n", "+thirty-eight\n"}, changedLines(dry.Preview.Files[0].Hunks))
	got, err := e.cs.Get(ctx, c.ID)
	require.NoError(t, err)
	assert.Equal(t, changeset.StatusOpen, got.Status)
	assert.Nil(t, got.Selection)

	res, err := e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{Select: &sel, Revision: 1})
	require.NoError(t, err)
	assert.True(t, res.Rebased)
	assert.Equal(t, moved.String(), e.bgit("rev-parse", "main^"))
	assert.Equal(t, lines(40, map[int]string{2: "two", 38: "thirty-eight"}), e.file("main", "doc.txt"))
	assert.Equal(t, "changed elsewhere\n", e.file("main", "other.txt"))
	assert.Empty(t, e.file("main", "new.txt"))
	require.NotNil(t, res.Selection)
	assert.Equal(t, merge.Selection{Files: []string{"new.txt"}, Hunks: map[string][]int{"doc.txt": {1}}}, res.Selection.LeftOut)

	// The session is on the new head, with the rest as its diff, and can
	// submit it again.
	require.True(t, res.SessionRebased, res.SessionError)
	assert.Equal(t, "changed elsewhere\n", e.read(s.ID, "other.txt"), "the session sees the branch's other change")
	assert.Equal(t, lines(40, map[int]string{2: "two", 20: "twenty", 38: "thirty-eight"}), e.read(s.ID, "doc.txt"))
	c2 := e.submit(s, "the rest")
	assert.NotEqual(t, c.ID, c2.ID)
	_, rest, err := e.cs.Diff(ctx, c2.ID)
	require.NoError(t, err)
	require.Len(t, rest.Files, 2)
	assert.Equal(t, []string{"-line 20\n", "+twenty\n"}, changedLines(rest.Files[0].Hunks))
	assert.Equal(t, "new.txt", rest.Files[1].Path())

	// An accepted changeset cannot be accepted again, in part or whole.
	_, err = e.cs.Accept(ctx, c.ID, changeset.AcceptOptions{Select: &sel})
	var ce *record.ConflictError
	require.True(t, errors.As(err, &ce), "%v", err)
}
