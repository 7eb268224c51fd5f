package worktree_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/worktree"
)

// scenario builds a checkout on main at commit A, clean, with commit B
// on branch next: B modifies, deletes (one file whose directory then
// empties), adds in a new directory, makes a file executable and another
// not, adds a symlink, turns a file into a symlink and a symlink into a
// file, a directory into a file and a file into a directory, and leaves
// other files as they are.
func scenario(t *testing.T) (dir string, a, b gitstore.OID) {
	t.Helper()
	dir = testrepo.Init(t)
	write := func(p, content string, perm os.FileMode) {
		full := filepath.Join(dir, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		_ = os.Remove(full)
		require.NoError(t, os.WriteFile(full, []byte(content), perm))
		require.NoError(t, os.Chmod(full, perm))
	}
	link := func(p, target string) {
		full := filepath.Join(dir, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		_ = os.RemoveAll(full)
		require.NoError(t, os.Symlink(target, full))
	}
	write("keep.txt", "keep\n", 0o644)
	write("mod.txt", "one\ntwo\n", 0o644)
	write("del.txt", "gone\n", 0o644)
	write("gone/only.txt", "only\n", 0o644)
	write("exec.sh", "#!/bin/sh\n", 0o644)
	write("unexec.sh", "#!/bin/sh\n", 0o755)
	write("ftype", "was a file\n", 0o644)
	link("ltype", "keep.txt")
	write("d2f/x", "in a dir\n", 0o644)
	write("f2d", "a file\n", 0o644)
	write("deep/er/keep.txt", "deep\n", 0o644)
	write("name with space.txt", "space\n", 0o644)
	testrepo.Git(t, dir, "add", "-A")
	testrepo.Git(t, dir, "commit", "-q", "-m", "A")
	testrepo.Git(t, dir, "checkout", "-q", "-b", "next")
	write("mod.txt", "one\ntwo\nthree\n", 0o644)
	require.NoError(t, os.Remove(filepath.Join(dir, "del.txt")))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "gone")))
	write("newdir/sub/new.txt", "new\n", 0o644)
	require.NoError(t, os.Chmod(filepath.Join(dir, "exec.sh"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(dir, "unexec.sh"), 0o644))
	link("link", "mod.txt")
	link("ftype", "keep.txt")
	write("ltype", "now a file\n", 0o644)
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "d2f")))
	write("d2f", "now a file\n", 0o644)
	require.NoError(t, os.Remove(filepath.Join(dir, "f2d")))
	write("f2d/y", "now in a dir\n", 0o644)
	write("deep/er/new.txt", "deeper\n", 0o644)
	testrepo.Git(t, dir, "add", "-A")
	testrepo.Git(t, dir, "commit", "-q", "-m", "B")
	testrepo.Git(t, dir, "checkout", "-q", "main")
	return dir, gitstore.MustParseOID(testrepo.Git(t, dir, "rev-parse", "main")), gitstore.MustParseOID(testrepo.Git(t, dir, "rev-parse", "next"))
}

// update runs an update of dir's checkout from a to b as an accept does:
// Begin, Apply, the branch's compare-and-swap, Commit (or Abort when a
// step fails).
func update(t *testing.T, dir string, a, b gitstore.OID) error {
	t.Helper()
	ctx := t.Context()
	r, err := gitstore.Open(dir)
	require.NoError(t, err)
	defer r.Close()
	u, err := worktree.Begin(ctx, r, a, b)
	if err != nil {
		return err
	}
	if err := u.Apply(ctx); err != nil {
		require.NoError(t, u.Abort(ctx))
		return err
	}
	if err := r.UpdateRef(ctx, gitstore.BranchRef("main"), b, a); err != nil {
		require.NoError(t, u.Abort(ctx))
		return err
	}
	return u.Commit()
}

// snapshot describes every path of a work tree (.git aside): its type,
// permission bits, and content or symlink target.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, p)
		if rel == ".git" {
			return filepath.SkipDir
		}
		if rel == "." {
			return nil
		}
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			require.NoError(t, err)
			out[rel] = "symlink " + target
		case fi.IsDir():
			out[rel] = "dir " + fi.Mode().Perm().String()
		default:
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			out[rel] = "file " + fi.Mode().Perm().String() + " " + string(data)
		}
		return nil
	}))
	return out
}

// TestUpdateMatchesCheckout: an update of a clean checkout from A to B
// leaves what git checkout of B leaves (every path's type, permissions,
// content, symlink target; directories made and removed), an index git
// reads as B's (git status --porcelain and git diff HEAD empty, git
// ls-files -s is git ls-tree -r B), and git's lock released.
func TestUpdateMatchesCheckout(t *testing.T) {
	dir, a, b := scenario(t)
	require.NoError(t, update(t, dir, a, b))

	assert.Empty(t, testrepo.Git(t, dir, "status", "--porcelain"), "git status")
	assert.Empty(t, testrepo.Git(t, dir, "diff", "HEAD"), "git diff HEAD")
	testrepo.Git(t, dir, "diff-files", "--quiet") // exits 1 on a difference
	lsFiles := testrepo.Git(t, dir, "ls-files", "-s")
	lsTree := testrepo.Git(t, dir, "ls-tree", "-r", b.String())
	assert.Equal(t, strings.ReplaceAll(lsTree, " blob ", " "), stageless(lsFiles), "the index is B's")
	assert.NoFileExists(t, filepath.Join(dir, ".git", "index.lock"))

	want := filepath.Join(t.TempDir(), "checkout")
	testrepo.Git(t, "", "clone", "-q", "--no-checkout", dir, want)
	testrepo.Git(t, want, "checkout", "-q", b.String())
	assert.Equal(t, snapshot(t, want), snapshot(t, dir), "the work tree is what git checkout of B makes")
}

// stageless turns git ls-files -s lines ("mode oid stage\tpath") into
// git ls-tree's without the type ("mode oid\tpath").
func stageless(ls string) string {
	var out []string
	for _, l := range strings.Split(ls, "\n") {
		head, path, _ := strings.Cut(l, "\t")
		f := strings.Fields(head)
		out = append(out, f[0]+" "+f[1]+"\t"+path)
	}
	return strings.Join(out, "\n")
}

// TestUpdateRefusesAsPushToCheckout: each work tree state is refused (or
// not) as git push into a checkout with receive.denyCurrentBranch=
// updateInstead refuses it, naming the paths; a refused update changes
// nothing (branch, index, work tree, no lock left). An ignored file in
// the way is the one difference: git overwrites it, sessiond refuses.
func TestUpdateRefusesAsPushToCheckout(t *testing.T) {
	plainRunOnly(t, "a table of work tree states against git push, on trees too small for a second stat worker")
	cases := []struct {
		name    string
		mess    func(t *testing.T, dir string)
		refused []worktree.DirtyPath // nil: the update goes through
		gitOK   bool                 // git's answer where it differs from ours
	}{
		{name: "clean"},
		{name: "an untracked file out of the way", mess: func(t *testing.T, dir string) {
			writeFile(t, dir, "notes.txt", "mine\n")
		}},
		{name: "a file touched but not changed", mess: func(t *testing.T, dir string) {
			require.NoError(t, os.Chtimes(filepath.Join(dir, "keep.txt"), timeAgo(), timeAgo()))
		}},
		{name: "an assume-unchanged file changed", mess: func(t *testing.T, dir string) {
			testrepo.Git(t, dir, "update-index", "--assume-unchanged", "keep.txt")
			writeFile(t, dir, "keep.txt", "changed\n")
		}},
		{name: "a modified tracked file", mess: func(t *testing.T, dir string) {
			writeFile(t, dir, "keep.txt", "changed\n")
		}, refused: []worktree.DirtyPath{{Path: "keep.txt", Status: worktree.Modified}}},
		{name: "a change of the same size, in the same second", mess: func(t *testing.T, dir string) {
			fi, err := os.Stat(filepath.Join(dir, "keep.txt"))
			require.NoError(t, err)
			writeFile(t, dir, "keep.txt", "KEEP\n")
			require.NoError(t, os.Chtimes(filepath.Join(dir, "keep.txt"), fi.ModTime(), fi.ModTime()))
		}, refused: []worktree.DirtyPath{{Path: "keep.txt", Status: worktree.Modified}}},
		{name: "a conflict in the index", mess: func(t *testing.T, dir string) {
			id := testrepo.Git(t, dir, "rev-parse", "HEAD:keep.txt")
			testrepo.GitInput(t, dir, []byte("0 "+strings.Repeat("0", 40)+"\tkeep.txt\n100644 "+id+" 1\tkeep.txt\n100644 "+id+" 2\tkeep.txt\n"),
				"update-index", "--index-info")
		}, refused: []worktree.DirtyPath{{Path: "keep.txt", Status: worktree.Unmerged}}},
		{name: "a modified file the update changes too", mess: func(t *testing.T, dir string) {
			writeFile(t, dir, "mod.txt", "one\n")
		}, refused: []worktree.DirtyPath{{Path: "mod.txt", Status: worktree.Modified}}},
		{name: "a staged change", mess: func(t *testing.T, dir string) {
			writeFile(t, dir, "keep.txt", "staged\n")
			testrepo.Git(t, dir, "add", "keep.txt")
		}, refused: []worktree.DirtyPath{{Path: "keep.txt", Status: worktree.Staged}}},
		{name: "a staged new file", mess: func(t *testing.T, dir string) {
			writeFile(t, dir, "added.txt", "new\n")
			testrepo.Git(t, dir, "add", "added.txt")
		}, refused: []worktree.DirtyPath{{Path: "added.txt", Status: worktree.Staged}}},
		{name: "a file removed from the index only", mess: func(t *testing.T, dir string) {
			testrepo.Git(t, dir, "rm", "-q", "--cached", "keep.txt")
		}, refused: []worktree.DirtyPath{{Path: "keep.txt", Status: worktree.Staged}}},
		{name: "a deleted tracked file", mess: func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "deep/er/keep.txt")))
		}, refused: []worktree.DirtyPath{{Path: "deep/er/keep.txt", Status: worktree.Deleted}}},
		{name: "an executable bit", mess: func(t *testing.T, dir string) {
			require.NoError(t, os.Chmod(filepath.Join(dir, "keep.txt"), 0o755))
		}, refused: []worktree.DirtyPath{{Path: "keep.txt", Status: worktree.Modified}}},
		{name: "a file turned into a symlink", mess: func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "keep.txt")))
			require.NoError(t, os.Symlink("mod.txt", filepath.Join(dir, "keep.txt")))
		}, refused: []worktree.DirtyPath{{Path: "keep.txt", Status: worktree.TypeChanged}}},
		{name: "an untracked file where a new one goes", mess: func(t *testing.T, dir string) {
			writeFile(t, dir, "newdir/sub/new.txt", "mine\n")
		}, refused: []worktree.DirtyPath{{Path: "newdir/sub/new.txt", Status: worktree.Untracked}}},
		{name: "an untracked file where a new directory goes", mess: func(t *testing.T, dir string) {
			writeFile(t, dir, "newdir", "mine\n")
		}, refused: []worktree.DirtyPath{{Path: "newdir", Status: worktree.Untracked}}},
		{name: "an untracked file in a directory a file replaces", mess: func(t *testing.T, dir string) {
			writeFile(t, dir, "d2f/mine.txt", "mine\n")
		}, refused: []worktree.DirtyPath{{Path: "d2f/mine.txt", Status: worktree.Untracked}}},
		{name: "an ignored file where a new one goes", mess: func(t *testing.T, dir string) {
			writeFile(t, dir, ".git/info/exclude", "newdir/\n")
			writeFile(t, dir, "newdir/sub/new.txt", "build output\n")
		}, refused: []worktree.DirtyPath{{Path: "newdir/sub/new.txt", Status: worktree.Untracked}}, gitOK: true},
		{name: "several at once, in the way too", mess: func(t *testing.T, dir string) {
			writeFile(t, dir, "keep.txt", "changed\n")
			writeFile(t, dir, "name with space.txt", "changed\n")
			require.NoError(t, os.Remove(filepath.Join(dir, "mod.txt")))
			writeFile(t, dir, "newdir/sub/new.txt", "mine\n")
		}, refused: []worktree.DirtyPath{{Path: "keep.txt", Status: worktree.Modified}, {Path: "mod.txt", Status: worktree.Deleted},
			{Path: "name with space.txt", Status: worktree.Modified}, {Path: "newdir/sub/new.txt", Status: worktree.Untracked}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// git's answer, on the same state in another checkout.
			gdir, _, _ := scenario(t)
			if c.mess != nil {
				c.mess(t, gdir)
			}
			testrepo.Git(t, gdir, "config", "receive.denyCurrentBranch", "updateInstead")
			push := exec.Command("git", "push", "-q", ".", "next:main")
			push.Dir, push.Env = gdir, testrepo.Env()
			gitErr := push.Run()
			wantGitOK := c.refused == nil || c.gitOK
			assert.Equal(t, wantGitOK, gitErr == nil, "git push's answer")

			dir, a, b := scenario(t)
			if c.mess != nil {
				c.mess(t, dir)
			}
			before := snapshot(t, dir)
			status := testrepo.Git(t, dir, "status", "--porcelain")
			err := update(t, dir, a, b)
			assert.NoFileExists(t, filepath.Join(dir, ".git", "index.lock"), "the lock is released")
			if c.refused == nil {
				require.NoError(t, err)
				assert.Equal(t, b.String(), testrepo.Git(t, dir, "rev-parse", "main"))
				assert.Equal(t, status, testrepo.Git(t, dir, "status", "--porcelain"), "untracked files stay")
				return
			}
			var de *worktree.DirtyError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, c.refused, de.Paths)
			for _, p := range c.refused {
				assert.Contains(t, err.Error(), p.Path)
			}
			assert.Equal(t, a.String(), testrepo.Git(t, dir, "rev-parse", "main"), "the branch did not move")
			assert.Equal(t, before, snapshot(t, dir), "the work tree is untouched")
			assert.Equal(t, status, testrepo.Git(t, dir, "status", "--porcelain"), "git status is as before")
		})
	}
}

// TestUpdateHonoursIndexLock: a git process holding index.lock makes
// the update fail with ErrLocked and leaves its lock alone; an update
// holding the lock makes git's own index writers fail cleanly.
func TestUpdateHonoursIndexLock(t *testing.T) {
	ctx := t.Context()
	dir, a, b := scenario(t)
	lock := filepath.Join(dir, ".git", "index.lock")
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	err := update(t, dir, a, b)
	require.ErrorIs(t, err, worktree.ErrLocked)
	assert.FileExists(t, lock, "someone else's lock stays")
	assert.Equal(t, a.String(), testrepo.Git(t, dir, "rev-parse", "main"))
	require.NoError(t, os.Remove(lock))

	r, err := gitstore.Open(dir)
	require.NoError(t, err)
	defer r.Close()
	u, err := worktree.Begin(ctx, r, a, b)
	require.NoError(t, err)
	writeFile(t, dir, "x.txt", "x\n")
	add := exec.Command("git", "add", "x.txt")
	add.Dir, add.Env = dir, testrepo.Env()
	out, err := add.CombinedOutput()
	assert.Error(t, err, "git add while the update holds the lock")
	assert.Contains(t, string(out), "index.lock")
	require.NoError(t, u.Apply(ctx))
	require.NoError(t, u.Abort(ctx))
	assert.NoFileExists(t, lock)
	assert.Equal(t, "?? x.txt", testrepo.Git(t, dir, "status", "--porcelain"), "Abort gave back A's work tree")
}

// TestAbortRestores: an update applied and then aborted (the branch's
// compare-and-swap lost) leaves the work tree and the index as they were.
func TestAbortRestores(t *testing.T) {
	ctx := t.Context()
	dir, a, b := scenario(t)
	before := snapshot(t, dir)
	index, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	require.NoError(t, err)
	r, err := gitstore.Open(dir)
	require.NoError(t, err)
	defer r.Close()
	u, err := worktree.Begin(ctx, r, a, b)
	require.NoError(t, err)
	require.NoError(t, u.Apply(ctx))
	assert.NotEqual(t, before, snapshot(t, dir), "Apply wrote the work tree")
	require.NoError(t, u.Abort(ctx))
	assert.Equal(t, before, snapshot(t, dir))
	after, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	require.NoError(t, err)
	assert.Equal(t, index, after, "the index file is untouched")
	assert.Empty(t, testrepo.Git(t, dir, "status", "--porcelain"))
	assert.NoFileExists(t, filepath.Join(dir, ".git", "index.lock"))
}

// TestUpdateRefusesConversions: a path the update would write with a
// content filter (git-lfs) is refused before anything is written.
func TestUpdateRefusesConversions(t *testing.T) {
	dir, a, _ := scenario(t)
	testrepo.Git(t, dir, "checkout", "-q", "-b", "lfs")
	writeFile(t, dir, ".gitattributes", "*.bin filter=lfs\n")
	writeFile(t, dir, "big.bin", "pointer\n")
	testrepo.Git(t, dir, "-c", "filter.lfs.clean=cat", "-c", "filter.lfs.smudge=cat", "add", "-A")
	testrepo.Git(t, dir, "commit", "-q", "-m", "lfs")
	c := gitstore.MustParseOID(testrepo.Git(t, dir, "rev-parse", "HEAD"))
	testrepo.Git(t, dir, "checkout", "-q", "main")
	err := update(t, dir, a, c)
	require.ErrorIs(t, err, worktree.ErrUnsupported)
	assert.Contains(t, err.Error(), "big.bin")
	assert.NoFileExists(t, filepath.Join(dir, "big.bin"))
	assert.Empty(t, testrepo.Git(t, dir, "status", "--porcelain"))
}

func writeFile(t *testing.T, dir, p, content string) {
	t.Helper()
	full := filepath.Join(dir, p)
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
}

func timeAgo() time.Time { return time.Now().Add(-time.Hour) }

// plainRunOnly skips t in make test's race detector run (-short): what
// says what t runs, all of which the plain run covers, with no goroutines
// of the daemon's own against each other for the detector to watch.
func plainRunOnly(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what + ": the plain run covers it; nothing of the daemon's races here")
	}
}

// TestDirtyAcrossStatWorkers: a work tree large enough that Begin stats
// its files with several workers (one per 500) names exactly the files
// git status names, wherever in the index they fall. It runs under the
// race detector too: the workers share the entries and the answer.
func TestDirtyAcrossStatWorkers(t *testing.T) {
	dir := testrepo.Init(t)
	const n = 1600
	for i := range n {
		writeFile(t, dir, fmt.Sprintf("d%02d/f%04d.txt", i%16, i), fmt.Sprintf("file %d\n", i))
	}
	testrepo.Git(t, dir, "add", "-A")
	testrepo.Git(t, dir, "commit", "-q", "-m", "A")
	testrepo.Git(t, dir, "checkout", "-q", "-b", "next")
	writeFile(t, dir, "next.txt", "next\n")
	testrepo.Git(t, dir, "add", "-A")
	testrepo.Git(t, dir, "commit", "-q", "-m", "B")
	testrepo.Git(t, dir, "checkout", "-q", "main")
	a := gitstore.MustParseOID(testrepo.Git(t, dir, "rev-parse", "main"))
	b := gitstore.MustParseOID(testrepo.Git(t, dir, "rev-parse", "next"))
	// Changed content, a removal and a mode change, spread over the
	// whole index (and so over every worker's share).
	for i := 7; i < n; i += 131 {
		writeFile(t, dir, fmt.Sprintf("d%02d/f%04d.txt", i%16, i), "changed\n")
	}
	require.NoError(t, os.Remove(filepath.Join(dir, "d03/f0003.txt")))
	require.NoError(t, os.Chmod(filepath.Join(dir, "d15/f1599.txt"), 0o755))

	var want []string
	for _, l := range strings.Split(testrepo.Git(t, dir, "status", "--porcelain"), "\n") {
		want = append(want, strings.TrimSpace(l)[2:])
	}
	want = slices.Compact(want)
	require.Greater(t, len(want), 10)

	r, err := gitstore.Open(dir)
	require.NoError(t, err)
	defer r.Close()
	_, err = worktree.Begin(t.Context(), r, a, b)
	var dirty *worktree.DirtyError
	require.ErrorAs(t, err, &dirty)
	var got []string
	for _, p := range dirty.Paths {
		got = append(got, p.Path)
	}
	slices.Sort(got)
	slices.Sort(want)
	assert.Equal(t, want, got)
}
