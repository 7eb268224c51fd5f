package gitstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// history is a generated repository for the revision differential test.
type history struct {
	dir     string
	names   []string // branches, tags and full ref names that exist
	objects []string // every object id in the repository
}

// genHistory draws a small history with merges (octopus ones too, so
// that ^3 has something to find), branches, lightweight and annotated
// tags (of commits, of a tag, of a tree and of a blob), and imports it
// with fast-import.
func genHistory(t *rapid.T, tb testing.TB) history {
	dir := testrepo.InitBare(tb)
	n := rapid.IntRange(1, 10).Draw(t, "commits")
	var fi bytes.Buffer
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&fi, "commit refs/heads/main\nmark :%d\ncommitter A <a@x> %d +0000\ndata 2\nc%d\n", i, 1700000000+i, i%10)
		if i > 1 {
			fmt.Fprintf(&fi, "from :%d\n", rapid.IntRange(1, i-1).Draw(t, "parent"))
			merges := rapid.IntRange(0, 2).Draw(t, "merges")
			for range merges {
				fmt.Fprintf(&fi, "merge :%d\n", rapid.IntRange(1, i-1).Draw(t, "merge"))
			}
		}
		fmt.Fprintf(&fi, "M 100644 inline d/f%d\ndata 2\n%d\n", i%3, i%10)
	}
	branches := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"feature", "topic", "x", "v2"}), 0, 3, rapid.ID[string]).Draw(t, "branches")
	for _, b := range branches {
		fmt.Fprintf(&fi, "reset refs/heads/%s\nfrom :%d\n", b, rapid.IntRange(1, n).Draw(t, "branch at"))
	}
	fi.WriteString("done\n")
	testrepo.GitInput(tb, dir, fi.Bytes(), "fast-import", "--quiet", "--done")
	h := history{dir: dir, names: []string{"main", "refs/heads/main", "heads/main"}}
	h.names = append(h.names, branches...)
	commits := strings.Fields(testrepo.Git(tb, dir, "rev-list", "--all"))
	tags := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"v1", "v1.0", "light", "x", "ann"}), 0, 4, rapid.ID[string]).Draw(t, "tags")
	for i, tag := range tags {
		target := rapid.SampledFrom(commits).Draw(t, "tag target")
		switch rapid.IntRange(0, 5).Draw(t, "tag kind") {
		case 0:
			testrepo.Git(tb, dir, "tag", tag, target)
		case 1:
			testrepo.Git(tb, dir, "tag", "-a", "-m", "t", tag, target)
		case 2:
			testrepo.Git(tb, dir, "tag", "-a", "-m", "t", tag, target+"^{tree}")
		case 3:
			blob := strings.Fields(testrepo.Git(tb, dir, "ls-tree", "-r", target))[2]
			testrepo.Git(tb, dir, "tag", "-a", "-m", "t", tag, blob)
		default:
			if i > 0 {
				// A tag of a tag.
				testrepo.Git(tb, dir, "tag", "-a", "-m", "t", tag, "refs/tags/"+tags[i-1])
			} else {
				testrepo.Git(tb, dir, "tag", tag, target)
			}
		}
		h.names = append(h.names, tag, "tags/"+tag, "refs/tags/"+tag)
	}
	h.objects = append(h.objects, strings.Split(testrepo.Git(tb, dir, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"), "\n")...)
	return h
}

// genRevision draws a revision expression: mostly ones git accepts,
// and some it refuses (missing names, parents that do not exist, the
// wrong kind, broken syntax).
func genRevision(t *rapid.T, h history) string {
	var base string
	switch rapid.IntRange(0, 5).Draw(t, "base kind") {
	case 0, 1:
		base = rapid.SampledFrom(h.names).Draw(t, "name")
	case 2:
		base = rapid.SampledFrom([]string{"HEAD", "@", "nope", "refs/heads/nope", "main..x", "", "deadbeef", "0000000000000000000000000000000000000000"}).Draw(t, "special")
	default:
		id := rapid.SampledFrom(h.objects).Draw(t, "object")
		base = id[:rapid.IntRange(3, 40).Draw(t, "digits")]
		if rapid.Bool().Draw(t, "upper") {
			base = strings.ToUpper(base)
		}
	}
	suffixes := rapid.SliceOfN(rapid.SampledFrom([]string{
		"~", "~1", "~2", "~3", "~0", "~01", "^", "^0", "^1", "^2", "^3", "^^",
		"^{commit}", "^{tree}", "^{blob}", "^{tag}", "^{object}", "^{}",
		"^{bogus}", "^{", "}", "~x", "{commit}", "^{commit}}",
	}), 0, 4).Draw(t, "suffixes")
	return base + strings.Join(suffixes, "")
}

// gitRevParse is `git rev-parse --verify -q rev`, or "" when git refuses.
func gitRevParse(tb testing.TB, dir, rev string) string {
	tb.Helper()
	cmd := exec.Command("git", "rev-parse", "--verify", "-q", "--end-of-options", rev)
	cmd.Dir = dir
	cmd.Env = testrepo.Env()
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return ""
	}
	require.NoError(tb, err)
	return strings.TrimSpace(string(out))
}

// TestRevParseMatchesGit is the differential test: random expressions
// over random histories resolve to what `git rev-parse` says, or are
// refused where git refuses them; as any object, as a commit and as a
// tree.
func TestRevParseMatchesGit(t *testing.T) {
	plainRunOnly(t, "random revisions resolved one at a time against git rev-parse")
	rapid.Check(t, func(rt *rapid.T) {
		h := genHistory(rt, t)
		r, err := gitstore.Open(h.dir)
		require.NoError(rt, err)
		defer r.Close()
		ctx := t.Context()
		for range 6 {
			rev := genRevision(rt, h)
			// ^{object} makes git check that the object exists, as we do.
			want := gitRevParse(t, h.dir, rev+"^{object}")
			got, kind, err := r.RevParse(ctx, rev)
			if want == "" {
				require.Error(rt, err, "git refuses %q; we resolved it to %s", rev, got)
			} else {
				require.NoError(rt, err, "git resolves %q to %s", rev, want)
				require.Equal(rt, want, got.String(), rev)
				require.Equal(rt, testrepo.Git(t, h.dir, "cat-file", "-t", want), kind.String(), rev)
			}
			for _, c := range []struct {
				peel    string
				resolve func() (gitstore.OID, error)
			}{
				{"^{commit}", func() (gitstore.OID, error) { return r.ResolveRevision(ctx, rev) }},
				{"^{tree}", func() (gitstore.OID, error) { return r.ResolveTree(ctx, rev) }},
			} {
				want := gitRevParse(t, h.dir, rev+c.peel)
				got, err := c.resolve()
				if want == "" {
					require.Error(rt, err, "git refuses %q; we resolved it to %s", rev+c.peel, got)
					continue
				}
				require.NoError(rt, err, "git resolves %q to %s", rev+c.peel, want)
				require.Equal(rt, want, got.String(), rev+c.peel)
			}
		}
	})
}

// TestResolveRevisionSyntax names the forms of issue 13's report.
func TestResolveRevisionSyntax(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := open(t, dir)
	ctx := t.Context()
	for _, rev := range []string{"main~1", "main^", "HEAD~2", "v1^{commit}", "v1~1^{commit}", "main^0", "HEAD^{tree}~0"} {
		want := gitRevParse(t, dir, rev+"^{commit}")
		got, err := r.ResolveRevision(ctx, rev)
		if want == "" {
			assert.Error(t, err, rev)
			continue
		}
		if assert.NoError(t, err, rev) {
			assert.Equal(t, want, got.String(), rev)
		}
	}
	_, err := r.ResolveRevision(ctx, "main^{tree}")
	assert.ErrorIs(t, err, gitstore.ErrWrongKind)
	_, err = r.ResolveRevision(ctx, "main~1000")
	assert.ErrorIs(t, err, gitstore.ErrNotFound)
}

// TestValidateBranchName compares the branch name rule with git branch,
// which creates a branch exactly when the name passes.
func TestValidateBranchName(t *testing.T) {
	dir := testrepo.Init(t)
	testrepo.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "c")
	names := []string{"main2", "topic/x", "a@b", "@", "\u00e9t\u00e9", "v1.0", "refs/sessions/x",
		"HEAD", "-x", "", "a..b", "a.lock", "a.lock/b", "x@{y", "@{-1}", "foo.", "a/.b", ".x", "/a", "x/", "a//b",
		"a b", "a~1", "a^", "a:b", "a?", "a*", "a[", `a\b`, "a\x7f", "a\tb"}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command("git", "branch", "--", name)
			cmd.Dir, cmd.Env = dir, testrepo.Env()
			gitOK := cmd.Run() == nil
			if gitOK {
				testrepo.Git(t, dir, "branch", "-D", "--", name)
			}
			err := gitstore.ValidateBranchName(name)
			assert.Equal(t, gitOK, err == nil, "git branch %q ok=%v, ValidateBranchName: %v", name, gitOK, err)
			if err != nil {
				assert.ErrorIs(t, err, gitstore.ErrInvalidRef)
			}
		})
	}
}

// TestDWIMRef: the ref a name means is the one git rev-parse
// --symbolic-full-name names, and none for a name that is no ref.
func TestDWIMRef(t *testing.T) {
	dir := testrepo.Init(t)
	testrepo.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "c")
	testrepo.Git(t, dir, "branch", "topic")
	testrepo.Git(t, dir, "tag", "v1")
	testrepo.Git(t, dir, "update-ref", "refs/remotes/origin/main", "HEAD")
	testrepo.Git(t, dir, "update-ref", "refs/sessions/s1/head", "HEAD")
	testrepo.Git(t, dir, "branch", "both")
	testrepo.Git(t, dir, "tag", "both")
	r, err := gitstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	for _, name := range []string{"main", "topic", "v1", "tags/v1", "heads/topic", "origin/main", "origin", "sessions/s1/head", "refs/sessions/s1/head", "nope", "refs/heads/nope"} {
		t.Run(name, func(t *testing.T) {
			got, err := r.DWIMRef(t.Context(), name)
			require.NoError(t, err)
			cmd := exec.Command("git", "rev-parse", "--verify", "--quiet", "--symbolic-full-name", name)
			cmd.Dir, cmd.Env = dir, testrepo.Env()
			out, _ := cmd.Output()
			assert.Equal(t, strings.TrimSpace(string(out)), string(got))
		})
	}
	// HEAD is itself, not followed to its branch.
	got, err := r.DWIMRef(t.Context(), "HEAD")
	require.NoError(t, err)
	assert.Equal(t, gitstore.RefName("HEAD"), got)
	// Ambiguous: git resolves "both" to the tag (and warns), by the same
	// order.
	got, err = r.DWIMRef(t.Context(), "both")
	require.NoError(t, err)
	assert.Equal(t, gitstore.RefName("refs/tags/both"), got)
	assert.Equal(t, testrepo.Git(t, dir, "rev-parse", "refs/tags/both"), testrepo.Git(t, dir, "rev-parse", "both"))
}
