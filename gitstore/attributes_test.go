package gitstore_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestAttributesMatchCheckAttr compares Attributes, reading the
// .gitattributes of a commit's tree, with git check-attr reading the same
// files from the work tree: git's patterns (wildmatch, with and without a
// slash, anchored, "**", classes, quoted names, escapes, directory-only
// and negative patterns), precedence (deeper files, later lines,
// info/attributes above all), macros (git's binary, the root file's own,
// and one a subdirectory may not define), and set, unset, unspecified and
// valued states.
func TestAttributesMatchCheckAttr(t *testing.T) {
	files := map[string]string{
		".gitattributes": strings.Join([]string{
			"# comment",
			"[attr]golang diff=golang text",
			"*.go golang",
			"*.py diff=python",
			"/root.txt diff=root",
			"docs/**/*.md diff=markdown",
			"**/gen/* diff=generated",
			"a/*/c diff=star",
			"[ab]*.c diff=class",
			"*.[ch] filter=lfs",
			"[!x]y diff=negclass",
			"x?z diff=question",
			"[[:digit:]]*.log diff=digits",
			"sub/ diff=dironly",
			`"quoted name.txt" diff=quoted`,
			"!neg diff=negative",
			`\!bang diff=bang`,
			"foo/** diff=under",
			"**/deep diff=deep",
			"*.bin binary",
			"*.txt diff",
			"   indented.txt    diff=indented   -text",
			"bad.txt diff=x -bad=y 0=1",
			"*.unset -diff",
		}, "\n") + "\n",
		"sub/.gitattributes":   "*.py -diff\n*.go !diff\n[attr]mine diff=mine\nm.txt mine\nlocal.txt diff=local\n/anchored.txt diff=anchored\n",
		"sub/x/.gitattributes": "*.py diff=deeper\nc diff=deepest\n",
	}
	paths := []string{
		"a.go", "sub/a.go", "x.py", "sub/x.py", "sub/x/y.py", "root.txt", "sub/root.txt",
		"docs/a.md", "docs/x/y/z.md", "a.md", "gen/x", "p/q/gen/x", "a/b/c", "a/b/d/c", "sub/x/c",
		"a.c", "b2.c", "c.c", "z.h", "ay", "xy", "xaz", "1.log", "a1.log", "sub/file", "sub",
		"quoted name.txt", "neg", "!bang", "foo/x", "foo/x/y", "deep", "a/b/deep", "f.bin",
		"plain.txt", "indented.txt", "bad.txt", "k.unset", "sub/m.txt", "m.txt", "sub/local.txt",
		"sub/anchored.txt", "sub/x/anchored.txt", "other",
	}
	names := []string{"diff", "text", "filter", "merge", "bad"}
	dir := testrepo.Init(t)
	for p, c := range files {
		full := filepath.Join(dir, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".git", "info"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".git", "info", "attributes"), []byte("other diff=info\nsub/local.txt diff=fromInfo\n"), 0o644))
	testrepo.Git(t, dir, "add", "-A")
	testrepo.Git(t, dir, "commit", "-q", "-m", "attrs")
	out := testrepo.Git(t, dir, append(append([]string{"check-attr"}, names...), append([]string{"--"}, paths...)...)...)
	want := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		// "<path>: <attr>: <value>"
		i := strings.LastIndex(l, ": ")
		want[l[:i]] = l[i+2:]
	}

	repo, err := gitstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	head, err := repo.ReadRef(t.Context(), "HEAD")
	require.NoError(t, err)
	attrs, err := gitstore.NewAttributes(t.Context(), repo, head)
	require.NoError(t, err)
	for _, p := range paths {
		got, err := attrs.Get(t.Context(), p, names...)
		require.NoError(t, err)
		for _, n := range names {
			var text string
			switch a := got[n]; a.State {
			case gitstore.AttrUnspecified:
				text = "unspecified"
			case gitstore.AttrSet:
				text = "set"
			case gitstore.AttrUnset:
				text = "unset"
			default:
				text = a.Value
			}
			assert.Equal(t, want[p+": "+n], text, "%s: %s", p, n)
		}
	}
}
