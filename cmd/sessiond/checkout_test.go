package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// workTree describes every path of a work tree but .git: type,
// permissions, content or symlink target.
func workTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, p)
		switch {
		case rel == ".git":
			return filepath.SkipDir
		case rel == ".":
			return nil
		}
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			require.NoError(t, err)
			out[rel] = "-> " + target
		case fi.IsDir():
			out[rel] = "dir " + fi.Mode().Perm().String()
		default:
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			out[rel] = fi.Mode().Perm().String() + " " + string(data)
		}
		return nil
	}))
	return out
}

// checkoutOf is the work tree git checkout of rev makes, in a fresh clone
// of repo.
func checkoutOf(t *testing.T, repo, rev string) map[string]string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "checkout")
	testrepo.Git(t, "", "clone", "-q", "--no-checkout", repo, dir)
	testrepo.Git(t, dir, "checkout", "-q", rev)
	return workTree(t, dir)
}

// TestAcceptOntoCheckedOutBranch: `sessiond serve --repo` of a normal
// checkout accepts onto the branch it has checked out, as git push with
// receive.denyCurrentBranch=updateInstead does: a dirty work tree is
// refused with 409 naming its paths and nothing moves; git's index.lock
// held by another command is refused; a clean one is updated with the
// branch, so git status --porcelain and git diff HEAD are empty and the
// files are what git checkout of the commit writes (contents, the
// executable bit, a symlink, deletions, a new directory). An undo onto
// the branch does the same.
func TestAcceptOntoCheckedOutBranch(t *testing.T) {
	plainRunOnly(t, "accepts onto a checked-out branch by the daemon's binary")
	ctx := t.Context()
	repo := testrepo.Init(t)
	for p, c := range map[string]string{"keep.txt": "keep\n", "mod.txt": "one\n", "del.txt": "gone\n",
		"old/only.txt": "only\n", "tool.sh": "#!/bin/sh\necho hi\n"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(repo, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(repo, p), []byte(c), 0o644))
	}
	testrepo.Git(t, repo, "add", "-A")
	testrepo.Git(t, repo, "commit", "-q", "-m", "initial")
	base := testrepo.Git(t, repo, "rev-parse", "main")

	d := newDaemon(t, stores[0], "--repo", "r="+repo)
	s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", AgentName: "newcomer"})
	require.NoError(t, err)
	for _, w := range []struct{ path, content, mode string }{
		{"mod.txt", "one\ntwo\n", ""},
		{"new/dir/file.txt", "new\n", ""},
		{"tool.sh", "#!/bin/sh\necho hi\n", "100755"},
		{"link", "mod.txt", "120000"},
	} {
		_, err := d.C.WriteFile(ctx, s.ID, w.path, []byte(w.content), client.WriteOptions{Mode: w.mode})
		require.NoError(t, err, w.path)
	}
	for _, p := range []string{"del.txt", "old/only.txt"} {
		_, err := d.C.DeleteFile(ctx, s.ID, p, false)
		require.NoError(t, err, p)
	}
	cs, err := d.C.Submit(ctx, s.ID, apitypes.SubmitRequest{Intent: "onto the checkout"})
	require.NoError(t, err)

	// Dirty: a modified tracked file and an untracked file where the
	// changeset adds one. Refused, named, nothing moved.
	require.NoError(t, os.WriteFile(filepath.Join(repo, "keep.txt"), []byte("mine\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "new", "dir"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "new", "dir", "file.txt"), []byte("mine too\n"), 0o644))
	dirty := workTree(t, repo)
	_, err = d.C.Accept(ctx, cs.ID, apitypes.AcceptRequest{})
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 409, apiErr.Status)
	assert.Equal(t, apitypes.CodeConflict, apiErr.Code)
	assert.Contains(t, apiErr.Message, "keep.txt (modified)")
	assert.Contains(t, apiErr.Message, "new/dir/file.txt (untracked)")
	assert.Equal(t, []any{map[string]any{"path": "keep.txt", "status": "modified"}, map[string]any{"path": "new/dir/file.txt", "status": "untracked"}},
		apiErr.Details["dirty_paths"])
	assert.Equal(t, base, testrepo.Git(t, repo, "rev-parse", "main"), "the branch did not move")
	assert.Equal(t, dirty, workTree(t, repo), "the work tree is untouched")

	testrepo.Git(t, repo, "checkout", "--", "keep.txt")
	r := runCLIWith(t, d, "changeset", "accept", cs.ID)
	assert.Equal(t, exitConflict, r.code, r.stderr)
	assert.Contains(t, r.stderr, "new/dir/file.txt (untracked)")
	assert.Equal(t, base, testrepo.Git(t, repo, "rev-parse", "main"))
	require.NoError(t, os.RemoveAll(filepath.Join(repo, "new")))

	// Another git command holds the index: refused, its lock left alone.
	lock := filepath.Join(repo, ".git", "index.lock")
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	_, err = d.C.Accept(ctx, cs.ID, apitypes.AcceptRequest{})
	assert.Equal(t, apitypes.CodeConflict, client.Code(err))
	assert.ErrorContains(t, err, "index.lock")
	assert.FileExists(t, lock)
	assert.Equal(t, base, testrepo.Git(t, repo, "rev-parse", "main"))
	require.NoError(t, os.Remove(lock))

	// Clean: accepted, and the work tree is the commit's.
	r = runCLIWith(t, d, "changeset", "accept", cs.ID)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "the work tree that has main checked out was updated with it")
	head := testrepo.Git(t, repo, "rev-parse", "main")
	require.NotEqual(t, base, head)
	assert.Empty(t, testrepo.Git(t, repo, "status", "--porcelain"))
	assert.Empty(t, testrepo.Git(t, repo, "diff", "HEAD"))
	got := workTree(t, repo)
	assert.Equal(t, checkoutOf(t, repo, head), got)
	assert.Equal(t, "-> mod.txt", got["link"])
	assert.Equal(t, "-rwxr-xr-x #!/bin/sh\necho hi\n", got["tool.sh"])
	assert.NotContains(t, got, "old", "a directory left empty is removed")

	// Undo onto the checked-out branch: index.lock refused, then the work
	// tree goes back with the branch.
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	_, err = d.C.Undo(ctx, cs.ID, apitypes.UndoRequest{})
	assert.Equal(t, apitypes.CodeConflict, client.Code(err))
	assert.Equal(t, head, testrepo.Git(t, repo, "rev-parse", "main"))
	require.NoError(t, os.Remove(lock))
	undone, err := d.C.Undo(ctx, cs.ID, apitypes.UndoRequest{})
	require.NoError(t, err)
	assert.True(t, undone.WorkTreeUpdated)
	assert.Empty(t, testrepo.Git(t, repo, "status", "--porcelain"))
	assert.Empty(t, testrepo.Git(t, repo, "diff", "HEAD"))
	assert.Equal(t, checkoutOf(t, repo, base), workTree(t, repo), "the files of the base again")
}

// runCLIWith runs the command line against d.
func runCLIWith(t *testing.T, d *daemon, args ...string) cliResult {
	t.Helper()
	return runCLI(t, "", append(args, "--server", d.URL, "--token", d.Token)...)
}
