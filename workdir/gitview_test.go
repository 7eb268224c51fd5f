package workdir_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/workdir"
)

// gitFor is the .git a view of f gets: the session's branch at the
// base, the repository's branches as origin's.
func (f *fixture) gitFor(t *testing.T) *workdir.Git {
	t.Helper()
	head := mustRev(t, f.repo, "HEAD")
	refs, err := f.repo.ListRefs(t.Context(), "refs/heads/")
	require.NoError(t, err)
	g := &workdir.Git{Branch: "sessiond/s1", Head: head, HeadTree: f.tree, BaseRef: "main", BaseCommit: head,
		UserName: "Agent One", UserEmail: "agent@example.com", RepoGitDir: filepath.Join(f.dir, ".git"), RepoName: "r"}
	for _, r := range refs {
		g.Branches = append(g.Branches, workdir.GitRef{Name: strings.TrimPrefix(string(r.Name), "refs/heads/"), OID: r.OID})
	}
	return g
}

// runGit prepares, runs script with sh and the view's .git, and captures.
func (f *fixture) runGit(m *workdir.Manager, g *workdir.Git, script string) (workdir.Result, []workdir.Change, *workdir.Scratch) {
	f.t.Helper()
	s, err := m.Prepare(f.t.Context(), f.view())
	require.NoError(f.t, err)
	res, err := s.Run(f.t.Context(), workdir.Command{Argv: []string{"/bin/sh", "-c", script}, Git: g, NoGit: "none asked"})
	require.NoError(f.t, err)
	cs, err := s.Capture(f.t.Context(), f.view(), 0)
	require.NoError(f.t, err)
	return res, cs, s
}

// inClone runs script in a fresh clone of the fixture's repository and
// returns its output.
func inClone(t *testing.T, repoDir, script string) string {
	t.Helper()
	clone := t.TempDir()
	testrepo.Git(t, clone, "clone", "-q", repoDir, ".")
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = clone
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2020-01-01T00:00:00Z",
		"GIT_AUTHOR_NAME=Agent One", "GIT_AUTHOR_EMAIL=agent@example.com", "GIT_COMMITTER_NAME=Agent One", "GIT_COMMITTER_EMAIL=agent@example.com")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}

// gitEdits is a script of edits; gitReport what git says of them.
const gitEdits = `set -e
echo changed > a.txt
rm b.txt
echo new > dir/new.txt
chmod +x run.sh
echo staged > dir/sub/d.txt
git add dir/sub/d.txt
echo more >> dir/sub/d.txt
mkdir -p fresh/deep && echo n > fresh/deep/n.txt
rm -r gone
mkdir -p gone && echo back > gone/again.txt
echo log > x.log
`

const gitReport = `set -e
echo STATUS; git status --porcelain=v2
echo DIFF; git diff
echo CACHED; git diff --cached
echo LOG; git log --format=%H%n%T
echo BLAME; git blame -s --abbrev=40 dir/c.txt
echo LS; git ls-files -s
`

func TestGitInViewMatchesCheckout(t *testing.T) {
	plainRunOnly(t, "git in the view")
	for _, mode := range []workdir.Mode{workdir.ModeOverlay, workdir.ModeCopy} {
		t.Run(string(mode), func(t *testing.T) {
			m := newManager(t, mode)
			f := newFixture(t)
			want := inClone(t, f.dir, gitEdits+gitReport)
			g := f.gitFor(t)
			res, cs, s := f.runGit(m, g, gitEdits+gitReport)
			require.Equal(t, 0, res.ExitCode, string(res.Stderr))
			assert.True(t, res.Git.Present)
			assert.Equal(t, want, string(res.Stdout)+string(res.Stderr))
			// The .git is never part of a capture.
			for _, c := range cs {
				assert.False(t, strings.HasPrefix(c.Path, ".git"), c.Path)
			}
			require.NoError(t, s.Settle(t.Context(), f.view(), f.record(cs)))

			// Again in the next command (the index as git left it, the
			// fsmonitor hook naming what the upper directory holds).
			res, _, s = f.runGit(m, g, gitReport)
			require.Equal(t, 0, res.ExitCode, string(res.Stderr))
			assert.Equal(t, want[strings.Index(want, "STATUS"):], string(res.Stdout)+string(res.Stderr))
			require.NoError(t, s.Settle(t.Context(), f.view(), nil))

			// Files made after git built its untracked cache show too.
			res, cs2, s2 := f.runGit(m, g, "git status --porcelain >/dev/null; echo l > dir/sub/later.txt; mkdir brandnew; echo x > brandnew/x; rm dir/c.txt; git status --porcelain")
			require.Equal(t, 0, res.ExitCode, string(res.Stderr))
			assert.Contains(t, string(res.Stdout), "?? brandnew/\n")
			assert.Contains(t, string(res.Stdout), "?? dir/sub/later.txt\n")
			assert.Contains(t, string(res.Stdout), " D dir/c.txt\n")
			require.NoError(t, s2.Settle(t.Context(), f.view(), f.record(cs2)))
			res, _, s2 = f.runGit(m, g, "git status --porcelain")
			assert.Contains(t, string(res.Stdout), "?? brandnew/\n")
			assert.Contains(t, string(res.Stdout), "?? dir/sub/later.txt\n")
			assert.Contains(t, string(res.Stdout), " D dir/c.txt\n")
			require.NoError(t, s2.Settle(t.Context(), f.view(), nil))

			// The index and the staged state persist between commands.
			res, _, s = f.runGit(m, g, "git diff --cached --name-only; git rev-parse --abbrev-ref HEAD; git rev-parse origin/main main")
			require.Equal(t, 0, res.ExitCode, string(res.Stderr))
			assert.Equal(t, "dir/sub/d.txt\nsessiond/s1\n"+g.Head.String()+"\n"+g.Head.String()+"\n", string(res.Stdout))
			s.Abort()
		})
	}
}

// Changes made through the API before a session's first command show in
// git status.
func TestGitStatusSeesAPIChanges(t *testing.T) {
	plainRunOnly(t, "git in the view")
	for _, mode := range []workdir.Mode{workdir.ModeOverlay, workdir.ModeCopy} {
		t.Run(string(mode), func(t *testing.T) {
			m := newManager(t, mode)
			f := newFixture(t)
			f.write("a.txt", "from the api\n", gitstore.ModeFile)
			f.write("dir/c.txt", "charlie\n", gitstore.ModeExec)
			f.remove("gone")
			res, _, s := f.runGit(m, f.gitFor(t), "git status --porcelain")
			require.Equal(t, 0, res.ExitCode, string(res.Stderr))
			assert.Equal(t, " M a.txt\n M dir/c.txt\n D gone/e.txt\n D gone/f.txt\n", string(res.Stdout))
			s.Abort()
		})
	}
}

// Without namespaces a command gets no .git, and is told why.
func TestGitAbsentUnisolated(t *testing.T) {
	m := newManager(t, workdir.ModeAuto, true)
	f := newFixture(t)
	res, _, s := f.runGit(m, f.gitFor(t), "git status")
	assert.Equal(t, 128, res.ExitCode)
	assert.False(t, res.Git.Present)
	assert.Contains(t, res.Git.Absent, "without namespaces")
	s.Abort()
}

func TestGitAbsentWithoutGit(t *testing.T) {
	plainRunOnly(t, "git in the view")
	m := newManager(t, workdir.ModeOverlay)
	f := newFixture(t)
	s, err := m.Prepare(t.Context(), f.view())
	require.NoError(t, err)
	res, err := s.Run(t.Context(), workdir.Command{Argv: []string{"/bin/sh", "-c", "git status"}, NoGit: "the policy limits reads"})
	require.NoError(t, err)
	assert.Equal(t, 128, res.ExitCode)
	assert.Contains(t, string(res.Stderr), "not a git repository")
	assert.False(t, res.Git.Present)
	assert.Equal(t, "the policy limits reads", res.Git.Absent)
	s.Abort()
}

// Objects only another session's refs reach are neither listed nor
// readable from a view.
func TestGitViewHidesUnreachableObjects(t *testing.T) {
	plainRunOnly(t, "git in the view")
	for _, mode := range []workdir.Mode{workdir.ModeOverlay, workdir.ModeCopy} {
		t.Run(string(mode), func(t *testing.T) { testGitViewHides(t, newManager(t, mode)) })
	}
}

func testGitViewHides(t *testing.T, m *workdir.Manager) {
	f := newFixture(t)
	secret, err := f.repo.WriteBlob(t.Context(), []byte("another session's uncheckpointed file\n"))
	require.NoError(t, err)
	tree, err := f.repo.BuildTree(t.Context(), f.tree, []gitstore.Change{{Path: "secret.txt", Mode: gitstore.ModeFile, OID: secret}})
	require.NoError(t, err)
	cp, err := f.repo.WriteCommit(t.Context(), gitstore.NewCommit{Tree: tree, Parents: []gitstore.OID{mustRev(t, f.repo, "HEAD")},
		Author: gitstore.Signature{Name: "x", Email: "x@x"}, Committer: gitstore.Signature{Name: "x", Email: "x@x"}, Message: "other\n"})
	require.NoError(t, err)
	require.NoError(t, f.repo.UpdateRef(t.Context(), "refs/sessions/other/head", cp, gitstore.ZeroOID))
	// Housekeeping's consolidation and git's own repack put everything
	// in one pack: the view still lists only what branches reach.
	testrepo.Git(t, f.dir, "repack", "-a", "-d", "-q")

	res, _, s := f.runGit(m, f.gitFor(t), `git cat-file --batch-all-objects --batch-check='%(objectname)'; echo ---; git cat-file -p `+secret.String()+`; git cat-file -p `+cp.String()+`; git fsck --connectivity-only >/dev/null 2>&1 && echo fsck-ok`)
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	listed, rest, _ := strings.Cut(string(res.Stdout), "---\n")
	assert.NotContains(t, listed, secret.String())
	assert.NotContains(t, listed, cp.String())
	assert.NotContains(t, listed, tree.String())
	assert.NotContains(t, rest, "another session")
	assert.Contains(t, string(res.Stderr), "Not a valid object name "+secret.String())
	s.Abort()
}
