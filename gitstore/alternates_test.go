package gitstore_test

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
)

// objectFiles lists the files under a repository's objects directory
// with their sizes and modification times.
func objectFiles(tb testing.TB, gitDir string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	root := filepath.Join(gitDir, "objects")
	require.NoError(tb, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = fi.ModTime().String() + " " + string(rune(fi.Size()))
		return nil
	}))
	return out
}

// hasLocally reports whether gitDir holds id itself, not through its
// alternates.
func hasLocally(tb testing.TB, gitDir string, id gitstore.OID) bool {
	tb.Helper()
	alt := filepath.Join(gitDir, "objects", "info", "alternates")
	data, err := os.ReadFile(alt)
	require.NoError(tb, err)
	require.NoError(tb, os.Remove(alt))
	defer func() { require.NoError(tb, os.WriteFile(alt, data, 0o644)) }()
	cmd := exec.Command("git", "cat-file", "-e", id.String())
	cmd.Dir, cmd.Env = gitDir, testrepo.Env()
	return cmd.Run() == nil
}

// checkReadsLikeGit compares every object of main's tree, read through
// r, with what git reads in dir.
func checkReadsLikeGit(t *testing.T, r *gitstore.Repo, dir string) {
	t.Helper()
	ctx := t.Context()
	head, err := r.ResolveRevision(ctx, "main")
	require.NoError(t, err)
	assert.Equal(t, testrepo.Git(t, dir, "rev-parse", "main"), head.String())
	short, err := r.ResolveRevision(ctx, head.String()[:8]+"~1")
	require.NoError(t, err)
	assert.Equal(t, testrepo.Git(t, dir, "rev-parse", "main~1"), short.String())
	c, err := r.Commit(ctx, head)
	require.NoError(t, err)
	for _, line := range strings.Split(testrepo.Git(t, dir, "ls-tree", "-r", "main"), "\n") {
		f := strings.Fields(line)
		if f[1] != "blob" {
			continue
		}
		e, err := r.Lookup(ctx, c.Tree, line[strings.IndexByte(line, '\t')+1:])
		require.NoError(t, err)
		data, err := r.ReadBlob(ctx, e.OID)
		require.NoError(t, err)
		assert.Equal(t, string(testrepo.GitRaw(t, dir, nil, "cat-file", "blob", f[2])), string(data), line)
	}
}

// TestAlternates: repositories that reach objects through
// objects/info/alternates (git clone --shared, --reference, relative and
// nested alternates, a cycle) read as git reads them; writes go into the
// repository itself, never into an alternate, and an object an alternate
// has is not written again (issue 13, wrong results 11).
func TestAlternates(t *testing.T) {
	plainRunOnly(t, "alternates read against the git CLI")
	ctx := t.Context()
	src := testrepo.BuildBare(t, "small")
	testrepo.Git(t, src, "repack", "-adq") // packed and loose objects both
	testrepo.Git(t, src, "tag", "-a", "-m", "loose tag", "loose", "main")

	t.Run("shared", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "shared.git")
		testrepo.Git(t, "", "clone", "-q", "--bare", "--shared", src, dir)
		r := open(t, dir)
		checkReadsLikeGit(t, r, dir)
		srcBefore := objectFiles(t, src)

		known := testrepo.Git(t, dir, "rev-parse", "main:README.md")
		b := r.NewBatch()
		b.AddBlob(testrepo.GitRaw(t, dir, nil, "cat-file", "blob", known))
		fresh := b.AddBlob([]byte("only in the shared clone\n"))
		fresh2 := b.AddBlob([]byte("and another\n"))
		require.NoError(t, b.Flush(ctx))
		assert.Equal(t, srcBefore, objectFiles(t, src), "nothing written or touched in the alternate")
		assert.False(t, hasLocally(t, dir, gitstore.MustParseOID(known)), "an alternate's object is not copied")
		assert.True(t, hasLocally(t, dir, fresh))
		assert.True(t, hasLocally(t, dir, fresh2))
		ok, err := r.HasObject(ctx, gitstore.MustParseOID(known))
		require.NoError(t, err)
		assert.True(t, ok)
		testrepo.Git(t, dir, "fsck", "--strict", "--no-dangling")
	})

	t.Run("reference", func(t *testing.T) {
		// A source with one more commit than the reference.
		work := filepath.Join(t.TempDir(), "work")
		testrepo.Git(t, "", "clone", "-q", src, work)
		require.NoError(t, os.WriteFile(filepath.Join(work, "more.txt"), []byte("more\n"), 0o644))
		testrepo.Git(t, work, "add", "more.txt")
		testrepo.Git(t, work, "commit", "-q", "-m", "more")
		dir := filepath.Join(t.TempDir(), "ref.git")
		testrepo.Git(t, "", "clone", "-q", "--bare", "--reference", src, work, dir)
		r := open(t, dir)
		checkReadsLikeGit(t, r, dir)
	})

	t.Run("relative, nested and a cycle", func(t *testing.T) {
		root := t.TempDir()
		b := filepath.Join(root, "b.git")
		c := filepath.Join(root, "c.git")
		testrepo.Git(t, "", "init", "-q", "--bare", b)
		testrepo.Git(t, "", "init", "-q", "--bare", c)
		// b borrows from src by a relative path (from b's objects
		// directory), c from b by an absolute one with a trailing slash,
		// after a comment and a blank line; b also points back at c.
		rel, err := filepath.Rel(filepath.Join(b, "objects"), filepath.Join(src, "objects"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(b, "objects", "info", "alternates"), []byte(rel+"\n"+filepath.Join(c, "objects")+"\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(c, "objects", "info", "alternates"), []byte("# pool\n\n\""+filepath.Join(b, "objects")+"/\"\n"), 0o644))
		testrepo.Git(t, c, "fetch", "-q", src, "refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*")
		r := open(t, c)
		checkReadsLikeGit(t, r, c)
		tag, kind, err := r.RevParse(ctx, "loose")
		require.NoError(t, err)
		assert.Equal(t, gitstore.KindTag, kind)
		assert.Equal(t, testrepo.Git(t, c, "rev-parse", "loose"), tag.String())
	})
}
