package session_test

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/session"
)

// TestReplaceSkipsBinaryAndSymlinks: a replace by glob leaves binary files
// and symlink targets alone and says so; named explicitly, it rewrites
// them (issue 13, wrong results 3).
func TestReplaceSkipsBinaryAndSymlinks(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	e.write(s.ID, "bin.dat", "e\x00e")
	_, _, err := e.m.Write(ctx, s.ID, "elink", []byte("/etc/passwd"), session.WriteOptions{Mode: gitstore.ModeSymlink})
	require.NoError(t, err)
	e.write(s.ID, "text.txt", "hello\n")

	res, err := e.m.Edits(ctx, s.ID, []session.Edit{{Op: "replace", Glob: "**", Old: "e", New: "E"}}, false, "")
	require.NoError(t, err)
	r := res.Results[0]
	assert.Contains(t, r.Paths, "text.txt")
	assert.NotContains(t, r.Paths, "bin.dat")
	assert.NotContains(t, r.Paths, "elink")
	assert.Contains(t, r.Skipped, session.Skipped{Path: "bin.dat", Reason: "binary"})
	assert.Contains(t, r.Skipped, session.Skipped{Path: "elink", Reason: "symlink"})
	assert.Equal(t, "e\x00e", e.read(s.ID, "bin.dat"))
	assert.Equal(t, "/etc/passwd", e.read(s.ID, "elink"))
	assert.Equal(t, "hEllo\n", e.read(s.ID, "text.txt"))

	// Named explicitly, they are rewritten (the link stays a link).
	res, err = e.m.Edits(ctx, s.ID, []session.Edit{
		{Op: "replace", Path: "bin.dat", Old: "e", New: "E"},
		{Op: "replace", Path: "elink", Old: "/etc", New: "/Etc"},
	}, false, "")
	require.NoError(t, err)
	assert.Empty(t, res.Results[0].Skipped)
	assert.Equal(t, "E\x00E", e.read(s.ID, "bin.dat"))
	fi, err := e.m.Stat(ctx, s.ID, "elink")
	require.NoError(t, err)
	assert.Equal(t, gitstore.ModeSymlink, fi.Mode)
	assert.Equal(t, "/Etc/passwd", e.read(s.ID, "elink"))
}

// TestBatchAppliesInOrder: each edit sees the view the earlier ones left,
// so a directory can become a file (and back) in one batch (issue 13,
// wrong results 5).
func TestBatchAppliesInOrder(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	_, err := e.m.Edits(ctx, s.ID, []session.Edit{
		{Op: "delete", Path: "a/b", Recursive: true},
		{Op: "write", Path: "a/b", Content: "x"},
	}, false, "")
	require.NoError(t, err)
	assert.Equal(t, "x", e.read(s.ID, "a/b"))
	_, err = e.m.Stat(ctx, s.ID, "a/b/sibling.txt")
	assert.ErrorIs(t, err, record.ErrNotFound)

	_, err = e.m.Edits(ctx, s.ID, []session.Edit{
		{Op: "delete", Path: "a/b"},
		{Op: "write", Path: "a/b/new.txt", Content: "y"},
		{Op: "move", Path: "a/b/new.txt", To: "a/b/moved.txt"},
		{Op: "replace", Glob: "a/b/*", Old: "y", New: "z"},
	}, false, "")
	require.NoError(t, err)
	assert.Equal(t, "z", e.read(s.ID, "a/b/moved.txt"))
	tree, _, err := e.m.Tree(ctx, s.ID)
	require.NoError(t, err)
	assert.Equal(t, "z", e.git("show", tree.String()+":a/b/moved.txt"))
}

// TestModeOnlyChange: the same content with a new mode is a change:
// recorded with its path, evented, and in the diff as git shows it
// (issue 13, wrong results 4).
func TestModeOnlyChange(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	content := e.read(s.ID, "README.md")
	_, mu, err := e.m.Write(ctx, s.ID, "README.md", []byte(content), session.WriteOptions{Mode: gitstore.ModeExec})
	require.NoError(t, err)
	assert.Equal(t, []string{"README.md"}, mu.Paths)
	evs, err := e.en.Events.List(ctx, events.Filter{Session: s.ID})
	require.NoError(t, err)
	last := evs[len(evs)-1]
	assert.Equal(t, session.EventFileWritten, last.Type)
	assert.Contains(t, string(last.Payload), `"mode":"100755"`)
	assert.Contains(t, string(last.Payload), `"path":"README.md"`)

	tree, base, err := e.m.Tree(ctx, s.ID)
	require.NoError(t, err)
	assert.Equal(t, e.git("diff", "--raw", "--no-abbrev", base.String(), tree.String()), ":100644 100755 "+e.git("rev-parse", "main:README.md")+" "+e.git("rev-parse", "main:README.md")+" M\tREADME.md")
	r, err := e.en.Repos.Open(ctx, "r")
	require.NoError(t, err)
	patch, err := merge.Diff(ctx, r, base, tree, merge.DiffOptions{}, merge.PatchOptions{})
	require.NoError(t, err)
	unified := string(patch.Unified())
	assert.Contains(t, unified, "old mode 100644\nnew mode 100755\n")
	// The unified text applies with git apply on the base.
	e.git("checkout", "-q", "main")
	testrepo.GitInput(t, e.repoDir, patch.Unified(), "apply", "--check", "-")
	testrepo.GitInput(t, e.repoDir, patch.Unified(), "apply", "-")
	assert.Contains(t, e.git("diff", "--summary"), "mode change 100644 => 100755 README.md")

	// Back to the base mode: a change again, and the overlay is empty.
	_, mu, err = e.m.Write(ctx, s.ID, "README.md", []byte(content), session.WriteOptions{Mode: gitstore.ModeFile})
	require.NoError(t, err)
	assert.Equal(t, []string{"README.md"}, mu.Paths)
	mods, err := e.m.ListFiles(ctx, s.ID, session.ListOptions{Recursive: true, OnlyModified: true})
	require.NoError(t, err)
	assert.Empty(t, mods)
}

// TestEmptySymlinkRefused: a symlink with an empty target is refused with
// rule symlinkTarget and records nothing (issue 13, wrong results 8).
func TestEmptySymlinkRefused(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	_, _, err := e.m.Write(ctx, s.ID, "l", nil, session.WriteOptions{Mode: gitstore.ModeSymlink})
	var pe *overlay.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, overlay.RuleSymlinkTarget, pe.Rule)
	muts, err := e.m.Mutations(ctx, s.ID, 0, 10)
	require.NoError(t, err)
	assert.Empty(t, muts)
}

// newOddNamesEnv is an engine over a repository whose base has names git
// allows and the write rules refuse: a tab and a backslash, in a file
// name and in a directory name.
func newOddNamesEnv(t *testing.T) *env {
	t.Helper()
	dir := testrepo.Init(t)
	fi := "commit refs/heads/main\ncommitter A <a@x> 1700000000 +0000\ndata 2\nc\n" +
		"M 100644 inline \"tab\\there.txt\"\ndata 4\ntab\n" +
		"M 100644 inline \"back\\\\slash.txt\"\ndata 5\nback\n" +
		"M 100644 inline \"odd\\tdir/inner.txt\"\ndata 6\ninner\n" +
		"M 100644 inline ok.txt\ndata 5\nokay\n" +
		"done\n"
	testrepo.GitInput(t, dir, []byte(fi), "fast-import", "--quiet", "--done")
	e := &env{t: t, dataDir: t.TempDir(), repoDir: dir}
	e.open()
	_, err := e.en.Repos.Register(t.Context(), "r", dir)
	require.NoError(t, err)
	return e
}

// TestOddBaseNamesReachable: base files named with a tab or a backslash
// can be read, listed, searched, deleted and moved away from; a ** replace
// that meets one skips it; writing such a name stays refused (issue 13,
// wrong results 9; SPEC section 3).
func TestOddBaseNamesReachable(t *testing.T) {
	e := newOddNamesEnv(t)
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	assert.Equal(t, "tab\n", e.read(s.ID, "tab\there.txt"))
	assert.Equal(t, "back\n", e.read(s.ID, "back\\slash.txt"))
	assert.Equal(t, "inner\n", e.read(s.ID, "odd\tdir/inner.txt"))
	infos, err := e.m.ListFiles(ctx, s.ID, session.ListOptions{Prefix: "odd\tdir"})
	require.NoError(t, err)
	require.Len(t, infos, 1)
	assert.Equal(t, "odd\tdir/inner.txt", infos[0].Path)
	res, err := e.m.Search(ctx, s.ID, session.SearchOptions{Pattern: "inner", Prefix: "odd\tdir"})
	require.NoError(t, err)
	assert.Len(t, res.Matches, 1)

	// Writing such a name is refused, whether or not it exists.
	for _, p := range []string{"tab\there.txt", "new\ttab.txt", "odd\tdir/new.txt"} {
		_, _, err := e.m.Write(ctx, s.ID, p, []byte("x"), session.WriteOptions{})
		var pe *overlay.PathError
		require.ErrorAs(t, err, &pe, p)
		assert.Equal(t, overlay.RuleBadPathChar, pe.Rule, p)
	}
	_, err = e.m.Move(ctx, s.ID, "ok.txt", "moved\ttab.txt", "")
	assert.ErrorIs(t, err, overlay.ErrInvalidPath)
	// A name that does not exist is still invalid, not missing.
	_, _, err = e.m.Read(ctx, s.ID, "absent\t.txt", 0, -1)
	assert.ErrorIs(t, err, overlay.ErrInvalidPath)

	// A glob replace skips them and says why.
	br, err := e.m.Edits(ctx, s.ID, []session.Edit{{Op: "replace", Glob: "**", Old: "a", New: "A"}}, false, "")
	require.NoError(t, err)
	assert.Contains(t, br.Results[0].Skipped, session.Skipped{Path: "tab\there.txt", Reason: "invalid_path", Rule: "badPathChar"})
	assert.Contains(t, br.Results[0].Skipped, session.Skipped{Path: "back\\slash.txt", Reason: "invalid_path", Rule: "badPathChar"})

	// Moved away from, deleted, and back through a rollback.
	cp, err := e.m.Checkpoint(ctx, s.ID, "", "")
	require.NoError(t, err)
	_, err = e.m.Move(ctx, s.ID, "tab\there.txt", "tab-here.txt", "")
	require.NoError(t, err)
	assert.Equal(t, "tab\n", e.read(s.ID, "tab-here.txt"))
	_, err = e.m.Delete(ctx, s.ID, "back\\slash.txt", false, "")
	require.NoError(t, err)
	_, err = e.m.Delete(ctx, s.ID, "odd\tdir", true, "")
	require.NoError(t, err)
	mods, err := e.m.ListFiles(ctx, s.ID, session.ListOptions{Recursive: true, OnlyModified: true})
	require.NoError(t, err)
	var paths []string
	for _, m := range mods {
		paths = append(paths, m.Path+":"+m.Status.String())
	}
	assert.Contains(t, paths, "tab\there.txt:deleted")
	assert.Contains(t, paths, "back\\slash.txt:deleted")
	assert.Contains(t, paths, "odd\tdir/inner.txt:deleted")
	// The overlay (whiteouts at odd names) survives a restart.
	e.restart()
	_, _, err = e.m.Read(ctx, s.ID, "tab\there.txt", 0, -1)
	assert.ErrorIs(t, err, record.ErrNotFound)
	_, _, err = e.m.Rollback(ctx, s.ID, cp.ID.String(), "")
	require.NoError(t, err)
	assert.Equal(t, "tab\n", e.read(s.ID, "tab\there.txt"))
	assert.Equal(t, "inner\n", e.read(s.ID, "odd\tdir/inner.txt"))
}

// repoState is every file under a repository's refs and objects (and
// packed-refs), with size and modification time: what a request that
// changes nothing must leave as it was.
func repoState(t *testing.T, gitDir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, top := range []string{"refs", "objects", "packed-refs"} {
		root := filepath.Join(gitDir, top)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(gitDir, p)
			if d.IsDir() {
				out[rel+"/"] = ""
				return nil
			}
			out[rel] = fmt.Sprintf("%d %d", fi.Size(), fi.ModTime().UnixNano())
			return nil
		})
		require.NoError(t, err)
	}
	return out
}

// TestRejectedRequestsWriteNothing: a request that is refused or changes
// nothing leaves the repository's refs and objects as they were; a new
// session has no live ref until it has a change (issue 13, wrong results
// 12).
func TestRejectedRequestsWriteNothing(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	gitDir := filepath.Join(e.repoDir, ".git")
	s := e.create(session.CreateOptions{})
	other := e.create(session.CreateOptions{})
	e.write(other.ID, "a.txt", "other's a.txt\n")
	// Someone moves main with a change that conflicts with other's.
	e.git("checkout", "-q", "main")
	writeWorkFile(t, e, "a.txt", "upstream's a.txt\n")
	e.git("commit", "-q", "-am", "upstream")
	e.restart() // no session loaded: the first request loads it

	cur := e.read(s.ID, "README.md")
	readmeOID := gitstore.HashObject(gitstore.KindBlob, []byte(cur))
	wrong := gitstore.HashObject(gitstore.KindBlob, []byte("not it"))
	before := repoState(t, gitDir)
	_, hasLive := before["refs/sessions/"+s.ID.String()+"/live"]
	assert.False(t, hasLive, "a session without changes has no live ref")

	requests := map[string]func() error{
		"PUT with a stale If-Match": func() error {
			_, _, err := e.m.Write(ctx, s.ID, "README.md", []byte("x"), session.WriteOptions{IfMatch: &wrong})
			return err
		},
		"PUT with If-None-Match over a file": func() error {
			_, _, err := e.m.Write(ctx, s.ID, "README.md", []byte("x"), session.WriteOptions{IfNoneMatch: true})
			return err
		},
		"PUT of an invalid path": func() error {
			_, _, err := e.m.Write(ctx, s.ID, "a/../b", []byte("x"), session.WriteOptions{})
			return err
		},
		"PUT of an empty symlink": func() error {
			_, _, err := e.m.Write(ctx, s.ID, "l", nil, session.WriteOptions{Mode: gitstore.ModeSymlink})
			return err
		},
		"PUT through a file": func() error {
			_, _, err := e.m.Write(ctx, s.ID, "README.md/x", []byte("x"), session.WriteOptions{})
			return err
		},
		"delete of a missing file": func() error {
			_, err := e.m.Delete(ctx, s.ID, "absent", false, "")
			return err
		},
		"move onto an existing file": func() error {
			_, err := e.m.Move(ctx, s.ID, "a.txt", "README.md", "")
			return err
		},
		"a batch whose last edit fails": func() error {
			_, err := e.m.Edits(ctx, s.ID, []session.Edit{{Op: "write", Path: "new.txt", Content: "new"}, {Op: "replace", Path: "README.md", Old: "absent", New: "x"}}, false, "")
			return err
		},
		"rebase onto a missing revision": func() error {
			_, _, err := e.m.Rebase(ctx, s.ID, "main~99", "")
			return err
		},
		"rebase that conflicts": func() error {
			_, _, err := e.m.Rebase(ctx, other.ID, "main", "")
			return err
		},
		"rollback to a missing checkpoint": func() error {
			_, _, err := e.m.Rollback(ctx, s.ID, "7", "")
			return err
		},
	}
	for _, name := range sortedKeys(requests) {
		require.Error(t, requests[name](), name)
		assertSameState(t, gitDir, before, name)
	}
	unchanged := map[string]func() error{
		"PUT of the same content": func() error {
			_, _, err := e.m.Write(ctx, s.ID, "README.md", []byte(cur), session.WriteOptions{IfMatch: &readmeOID})
			return err
		},
		"a dry run": func() error {
			_, err := e.m.Edits(ctx, s.ID, []session.Edit{{Op: "write", Path: "new.txt", Content: "new"}}, true, "")
			return err
		},
		"reads": func() error {
			if _, err := e.m.ListFiles(ctx, s.ID, session.ListOptions{Recursive: true}); err != nil {
				return err
			}
			_, err := e.m.Search(ctx, s.ID, session.SearchOptions{Pattern: "a"})
			return err
		},
	}
	for _, name := range sortedKeys(unchanged) {
		require.NoError(t, unchanged[name](), name)
		assertSameState(t, gitDir, before, name)
	}
	// The first change pins the view.
	e.write(s.ID, "new.txt", "new\n")
	live := e.git("rev-parse", "refs/sessions/"+s.ID.String()+"/live")
	tree, _, err := e.m.Tree(ctx, s.ID)
	require.NoError(t, err)
	assert.Equal(t, tree.String(), live)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// assertSameState fails with the files that differ from before.
func assertSameState(t *testing.T, gitDir string, before map[string]string, what string) {
	t.Helper()
	after := repoState(t, gitDir)
	var diff []string
	for k, v := range after {
		if before[k] != v {
			diff = append(diff, "changed or new: "+k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			diff = append(diff, "gone: "+k)
		}
	}
	slices.Sort(diff)
	assert.Empty(t, diff, what)
}

// TestRollbackAndCheckpointAfterRebase: rolling back to a checkpoint taken
// before a rebase keeps the new base (the session's changes as of the
// checkpoint, rebased) or refuses with conflicts; the first checkpoint
// after a rebase has the new base as parent (issue 13, wrong results 6
// and 7).
func TestRollbackAndCheckpointAfterRebase(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{Base: "main"})
	e.write(s.ID, "notes.txt", "mine\n")
	e.write(s.ID, "a.txt", "session's a.txt\n")
	cp1, err := e.m.Checkpoint(ctx, s.ID, "one", "")
	require.NoError(t, err)
	// Back to the base's a.txt, so the rebase below is clean.
	e.write(s.ID, "a.txt", e.git("show", "main:a.txt")+"\n")

	// main moves with the git CLI: a new file, and a change to a.txt.
	e.git("checkout", "-q", "main")
	writeWorkFile(t, e, "upstream.txt", "upstream\n")
	writeWorkFile(t, e, "a.txt", "upstream's a.txt\n")
	e.git("add", "upstream.txt", "a.txt")
	e.git("commit", "-q", "-m", "upstream")
	up := e.oid("main")
	_, _, err = e.m.Rebase(ctx, s.ID, "", "")
	require.NoError(t, err)

	// The first checkpoint after the rebase builds on the new base.
	cp2, err := e.m.Checkpoint(ctx, s.ID, "two", "")
	require.NoError(t, err)
	assert.Equal(t, up.String(), e.git("rev-parse", cp2.Commit.String()+"^"))
	assert.Equal(t, "A\tnotes.txt", e.git("diff", "--name-status", cp2.Commit.String()+"^", cp2.Commit.String()),
		"git log attributes only the session's own change to it")
	assert.Equal(t, cp2.Commit.String(), e.git("rev-parse", "refs/sessions/"+s.ID.String()+"/head"))

	// Rolling back to checkpoint 1 conflicts: it changed a.txt, and so did
	// upstream. Nothing changes.
	view := e.view(s.ID)
	_, _, err = e.m.Rollback(ctx, s.ID, "1", "")
	var ce *merge.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Conflicts, 1)
	assert.Equal(t, "a.txt", ce.Conflicts[0].Path)
	assert.Equal(t, view, e.view(s.ID))

	// Without the conflict: checkpoint 3 has only notes.txt; later
	// writes; rolling back to it keeps upstream's work.
	e.write(s.ID, "later.txt", "later\n")
	cur, err := e.m.Get(ctx, s.ID)
	require.NoError(t, err)
	assert.Equal(t, up, cur.BaseCommit)
	e.git("checkout", "-q", "main")
	writeWorkFile(t, e, "upstream2.txt", "more upstream\n")
	e.git("add", "upstream2.txt")
	e.git("commit", "-q", "-m", "upstream 2")
	_, _, err = e.m.Rebase(ctx, s.ID, "", "")
	require.NoError(t, err)
	_, _, err = e.m.Rollback(ctx, s.ID, cp2.ID.String(), "")
	require.NoError(t, err)
	got := e.view(s.ID)
	assert.Equal(t, "upstream\n", got["upstream.txt"])
	assert.Equal(t, "more upstream\n", got["upstream2.txt"], "upstream's later work is kept")
	assert.Equal(t, "upstream's a.txt\n", got["a.txt"])
	assert.Equal(t, "mine\n", got["notes.txt"])
	assert.NotContains(t, got, "later.txt")
	tree, base, err := e.m.Tree(ctx, s.ID)
	require.NoError(t, err)
	assert.Equal(t, "A\tnotes.txt", e.git("diff", "--name-status", base.String(), tree.String()),
		"the diff shows only the session's change; submitting would delete nothing of main's")

	// A fork from checkpoint 1 starts on the base it was taken on.
	f, err := e.m.Fork(ctx, s.ID, session.ForkOptions{AgentID: "b", Checkpoint: cp1.ID.String()})
	require.NoError(t, err)
	assert.Equal(t, e.oid("main~2"), f.BaseCommit)
	ftree, fbase, err := e.m.Tree(ctx, f.ID)
	require.NoError(t, err)
	assert.Equal(t, "M\ta.txt\nA\tnotes.txt", e.git("diff", "--name-status", fbase.String(), ftree.String()))
}

// TestSessionOnSharedClone: a session works on a repository whose
// objects are reached through objects/info/alternates (git clone
// --shared), and writes only into that repository (issue 13, wrong
// results 11).
func TestSessionOnSharedClone(t *testing.T) {
	src := testrepo.BuildBare(t, "small")
	testrepo.Git(t, src, "repack", "-adq")
	shared := filepath.Join(t.TempDir(), "shared.git")
	testrepo.Git(t, "", "clone", "-q", "--bare", "--shared", src, shared)
	e := &env{t: t, dataDir: t.TempDir(), repoDir: shared}
	e.open()
	ctx := t.Context()
	_, err := e.en.Repos.Register(ctx, "r", shared)
	require.NoError(t, err)
	before := repoState(t, src)

	s := e.create(session.CreateOptions{Base: "main"})
	assert.Equal(t, e.git("rev-parse", "main"), s.BaseCommit.String())
	assert.Equal(t, e.git("show", "main:README.md")+"\n", e.read(s.ID, "README.md"))
	e.write(s.ID, "new.txt", "new\n")
	e.write(s.ID, "copy-of-readme.md", e.read(s.ID, "README.md"))
	cp, err := e.m.Checkpoint(ctx, s.ID, "", "")
	require.NoError(t, err)
	assert.Equal(t, "new", e.git("show", cp.Commit.String()+":new.txt"))
	e.git("fsck", "--strict", "--no-dangling")
	assertSameState(t, src, before, "the alternate is only read")
}
