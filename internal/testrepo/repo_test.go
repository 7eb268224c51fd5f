package testrepo_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/internal/testrepo"
)

// fixtureRefs pins every ref of every fixture. The ids only change when a
// fixture is edited; update them then, on purpose.
var fixtureRefs = map[string]map[string]string{
	"small": {
		"refs/heads/main":    "17c1691e5a5636db7cec2ef7da3261b2543d194a",
		"refs/heads/feature": "df2a2af43fa009d78291f7425f15333eb730767e",
		"refs/tags/v0":       "515e9518f7397ac62881b86e081d0e4f9e1d4087",
		"refs/tags/v1":       "33b06b1b3f2e2f08760dccee4d59727889f3dc88",
	},
	"gitlink": {
		"refs/heads/main": "d54f67dd3a8cecc58f792182a1e7ea28b322c9c5",
	},
	"unicode": {
		"refs/heads/main": "c44f880b42f3b7029096e932240191340c004fbe",
	},
	"merge": {
		"refs/heads/main":   "00f495dd6f3a5e6b0878353bf91ad7a50256301f",
		"refs/heads/ours":   "e233aadd308a0a7005ca22d2e0243bd418c70102",
		"refs/heads/theirs": "5c79c94fc5beb220ea44b2f92ef41efe70f33a3a",
		"refs/heads/clean":  "2cd8f67a834ea2196d45dbe7055b34f7bceff7d4",
	},
}

func refs(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(testrepo.Git(t, dir, "for-each-ref", "--format=%(refname) %(objectname)"), "\n") {
		name, oid, ok := strings.Cut(line, " ")
		require.True(t, ok, "for-each-ref line %q", line)
		got[name] = oid
	}
	return got
}

func TestFixtures(t *testing.T) {
	names := testrepo.Fixtures(t)
	require.ElementsMatch(t, names, keys(fixtureRefs), "every fixture has its refs pinned above")
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, build := range []struct {
				kind string
				fn   func(testing.TB, string) string
			}{{"worktree", testrepo.Build}, {"bare", testrepo.BuildBare}} {
				t.Run(build.kind, func(t *testing.T) {
					dir := build.fn(t, name)
					testrepo.Git(t, dir, "fsck", "--strict", "--no-dangling")
					assert.Equal(t, fixtureRefs[name], refs(t, dir))
					assert.Equal(t, "refs/heads/main", testrepo.Git(t, dir, "symbolic-ref", "HEAD"))
					if build.kind == "worktree" {
						assert.Empty(t, testrepo.Git(t, dir, "status", "--porcelain", "--ignore-submodules=none"), "work tree matches main")
					} else {
						assert.Equal(t, "true", testrepo.Git(t, dir, "rev-parse", "--is-bare-repository"))
					}
				})
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestSmallFixtureContents(t *testing.T) {
	dir := testrepo.Build(t, "small")

	// git's order: a directory sorts as if its name ended in '/'.
	assert.Equal(t, "a-b\na.txt\na\na0", grepNames(testrepo.Git(t, dir, "ls-tree", "--name-only", "main"), "a"))

	modes := map[string]string{}
	for _, line := range strings.Split(testrepo.Git(t, dir, "ls-tree", "-r", "main"), "\n") {
		meta, path, _ := strings.Cut(line, "\t")
		modes[path] = strings.Fields(meta)[0]
	}
	assert.Equal(t, "100755", modes["bin/run.sh"])
	assert.Equal(t, "120000", modes["link"])
	assert.Equal(t, "120000", modes["dirlink"])
	assert.Equal(t, "100644", modes["a/b/c/deep.txt"])
	assert.NotContains(t, modes, "obsolete.txt")

	assert.Equal(t, []byte("bin\x00ary\n"), testrepo.GitRaw(t, dir, nil, "cat-file", "blob", "main:data/blob.bin"))
	assert.Equal(t, "0", testrepo.Git(t, dir, "cat-file", "-s", "main:empty.txt"))
	assert.Equal(t, "tag", testrepo.Git(t, dir, "cat-file", "-t", "v1"))
	assert.Equal(t, "commit", testrepo.Git(t, dir, "cat-file", "-t", "v0"))
	assert.Equal(t, testrepo.Git(t, dir, "rev-parse", "main~1"), testrepo.Git(t, dir, "rev-parse", "v1^{commit}"))
	assert.Equal(t, testrepo.Git(t, dir, "rev-parse", "main~1"), testrepo.Git(t, dir, "merge-base", "main", "feature"))

	target, err := os.Readlink(filepath.Join(dir, "link"))
	require.NoError(t, err)
	assert.Equal(t, "README.md", target)
}

func grepNames(list, prefix string) string {
	var out []string
	for _, n := range strings.Split(list, "\n") {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return strings.Join(out, "\n")
}

func TestGitlinkFixtureContents(t *testing.T) {
	dir := testrepo.BuildBare(t, "gitlink")
	assert.Equal(t, "160000 commit 2222222222222222222222222222222222222222\tvendor/lib",
		testrepo.Git(t, dir, "ls-tree", "main", "vendor/lib"))
	assert.Equal(t, "160000 commit 3333333333333333333333333333333333333333\tthird_party/deep/tool",
		testrepo.Git(t, dir, "ls-tree", "-r", "main", "third_party"))
	assert.Equal(t, "vendor/lib", testrepo.Git(t, dir, "config", "--blob", "main:.gitmodules", "submodule.vendor/lib.path"))
}

func TestUnicodeFixtureContents(t *testing.T) {
	dir := testrepo.BuildBare(t, "unicode")
	paths := strings.Split(strings.TrimRight(string(testrepo.GitRaw(t, dir, nil, "ls-tree", "-r", "-z", "--name-only", "main")), "\x00"), "\x00")
	for _, want := range []string{
		"nfc/caf\u00e9.txt",
		"nfd/cafe\u0301.txt",
		"日本語/ファイル.md",
		"src/Readme.md",
		"lib/README.md",
		"with space.txt",
	} {
		assert.Contains(t, paths, want)
	}
}

func TestMergeFixtureContents(t *testing.T) {
	dir := testrepo.BuildBare(t, "merge")
	// merge-tree exits 1 on conflicts, which Git reports as a failure, so
	// the conflicting pair runs through exec directly.
	assert.Regexp(t, "^[0-9a-f]{40}$", testrepo.Git(t, dir, "merge-tree", "--write-tree", "ours", "clean"))
	cmd := exec.Command("git", "-C", dir, "merge-tree", "--write-tree", "--name-only", "--no-messages", "ours", "theirs")
	cmd.Env = testrepo.Env()
	out, err := cmd.Output()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode(), "conflicts")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	assert.Equal(t, []string{"added.txt", "conflict.txt", "fd~ours", "moddel.txt"}, lines[1:])
}

func TestInit(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(testing.TB) string
		bare string
	}{{"worktree", testrepo.Init, "false"}, {"bare", testrepo.InitBare, "true"}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.fn(t)
			assert.Equal(t, tc.bare, testrepo.Git(t, dir, "rev-parse", "--is-bare-repository"))
			assert.Equal(t, "refs/heads/main", testrepo.Git(t, dir, "symbolic-ref", "HEAD"))
			assert.Empty(t, testrepo.Git(t, dir, "for-each-ref"))
		})
	}
}

func TestGitIsHermetic(t *testing.T) {
	t.Setenv("GIT_AUTHOR_NAME", "Someone Else")
	t.Setenv("GIT_DIR", "/nonexistent")
	dir := testrepo.Init(t)
	tree := testrepo.Git(t, dir, "mktree")
	a := testrepo.Git(t, dir, "commit-tree", "-m", "x", tree)
	b := testrepo.Git(t, dir, "commit-tree", "-m", "x", tree)
	assert.Equal(t, a, b, "fixed dates make commits deterministic")
	assert.Contains(t, testrepo.Git(t, dir, "cat-file", "-p", a), "author "+testrepo.AuthorName+" <"+testrepo.AuthorEmail+"> "+testrepo.Date)
}

func TestCloneShared(t *testing.T) {
	src := testrepo.BuildBare(t, "small")
	dst := testrepo.CloneShared(t, src)
	assert.Equal(t, refs(t, src), refs(t, dst))
	alt, err := os.ReadFile(filepath.Join(dst, "objects", "info", "alternates"))
	require.NoError(t, err)
	assert.Contains(t, string(alt), src)

	// Writes land in the clone only.
	testrepo.Git(t, dst, "update-ref", "refs/heads/new", "main")
	assert.NotContains(t, refs(t, src), "refs/heads/new")
	testrepo.Git(t, dst, "fsck", "--strict")
}
