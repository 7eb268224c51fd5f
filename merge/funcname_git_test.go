package merge_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/merge"
)

// funcnameSamples are real files of several languages, each with the
// driver a .gitattributes names for it: the samples in
// testdata/funcname, and files of this repository.
var funcnameSamples = []struct {
	file, driver string
	fromModule   bool
}{
	{"merge/patch.go", "golang", true},
	{"gitstore/attributes.go", "golang", true},
	{"README.md", "markdown", true},
	{"Makefile", "", true}, // no driver: git's default rule
	{"sample.py", "python", false},
	{"sample.rs", "rust", false},
	{"Sample.java", "java", false},
	{"sample.cpp", "cpp", false},
	{"Sample.cs", "csharp", false},
	{"sample.rb", "ruby", false},
	{"sample.php", "php", false},
	{"sample.pl", "perl", false},
	{"sample.html", "html", false},
	{"sample.css", "css", false},
	{"sample.sh", "bash", false},
	{"sample.f90", "fortran", false},
	{"sample.kt", "kotlin", false},
	{"sample.tex", "tex", false},
	{"sample.scm", "scheme", false},
	{"sample.ex", "elixir", false},
	{"sample.m", "objc", false},
	{"sample.pas", "pascal", false},
	{"sample.adb", "ada", false},
	{"sample.dts", "dts", false},
	{"sample.bib", "bibtex", false},
	{"sample.matlab", "matlab", false},
	{"sample.fountain", "fountain", false},
}

// editSample changes lines of data at places a seed picks: lines
// rewritten, deleted, copied from elsewhere (function lines among them)
// and plain lines inserted, so that hunks start at many kinds of lines.
func editSample(data []byte, seed uint64) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	rng := rand.New(rand.NewPCG(seed, uint64(len(lines))))
	for range 2 + len(lines)/12 {
		i := rng.IntN(len(lines))
		switch rng.IntN(4) {
		case 0:
			lines[i] = strings.TrimSuffix(lines[i], "\n") + " changed\n"
		case 1:
			lines = slices.Delete(lines, i, i+1)
		case 2:
			lines = slices.Insert(lines, i, lines[rng.IntN(len(lines))])
		default:
			lines = slices.Insert(lines, i, fmt.Sprintf("    inserted %d\n", i))
		}
	}
	return []byte(strings.Join(lines, ""))
}

// hunkHeaders returns, per file of a unified diff, its "@@" lines.
func hunkHeaders(diff []byte) map[string][]string {
	out := map[string][]string{}
	file := ""
	for _, l := range strings.Split(string(diff), "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			file = l[strings.LastIndex(l, " b/")+3:]
			out[file] = nil
		case strings.HasPrefix(l, "@@ "):
			out[file] = append(out[file], l)
		}
	}
	return out
}

// TestHunkHeadersMatchGit compares the function context of every hunk
// header with git diff's on real files of many languages, edited at
// places three seeds pick: without .gitattributes (git's default rule),
// with a .gitattributes naming each file's built-in driver, and with
// the drivers' patterns (and two of a user's own, one extended and one
// basic) set in the repository's config as diff.<driver>.xfuncname and
// funcname, which both git and sessiond read. The config run checks the
// translation of every built-in pattern against git's own regcomp,
// whatever git's version; the built-in run checks the driver each
// attribute picks, for the drivers whose built-in pattern in the
// installed git is ours (the others are logged).
func TestHunkHeadersMatchGit(t *testing.T) {
	root, err := testrepo.ModuleRoot()
	require.NoError(t, err)
	dir := testrepo.Init(t)
	ctx := t.Context()
	var attrs strings.Builder
	var olds, news = map[string][]byte{}, map[string][]byte{}
	for _, s := range funcnameSamples {
		src := filepath.Join(root, "merge", "testdata", "funcname", s.file)
		if s.fromModule {
			src = filepath.Join(root, s.file)
		}
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		for seed := uint64(1); seed <= 3; seed++ {
			p := fmt.Sprintf("s%d/%s", seed, filepath.Base(s.file))
			olds[p], news[p] = data, editSample(data, seed)
			if s.driver != "" {
				fmt.Fprintf(&attrs, "%s diff=%s\n", p, s.driver)
			}
		}
	}
	for i := range 3 {
		p := fmt.Sprintf("custom/c%d.txt", i)
		olds[p] = []byte(strings.Repeat("BEGIN ALPHA one\nline\nline\nline\nline\nline\nBEGIN beta\nline\nline\nline\nline\nSECTION 42 x\nline\nline\nline\nline\nline\n", 2))
		news[p] = editSample(olds[p], uint64(i+1))
	}
	attrs.WriteString("custom/c0.txt diff=custom\ncustom/c1.txt diff=bre\ncustom/c2.txt diff=nosuchdriver\n")

	write := func(files map[string][]byte, extra map[string]string) {
		for p, data := range files {
			full := filepath.Join(dir, p)
			require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
			require.NoError(t, os.WriteFile(full, data, 0o644))
		}
		for p, data := range extra {
			require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644))
		}
		testrepo.Git(t, dir, "add", "-A")
		testrepo.Git(t, dir, "commit", "-q", "-m", "x")
	}
	head := func() string { return testrepo.Git(t, dir, "rev-parse", "HEAD") }
	repo, err := gitstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	ours := func(from, to string) map[string][]string {
		a, err := repo.TreeOf(ctx, gitstore.MustParseOID(from))
		require.NoError(t, err)
		b, err := repo.TreeOf(ctx, gitstore.MustParseOID(to))
		require.NoError(t, err)
		p, err := merge.Diff(ctx, repo, a, b, merge.DiffOptions{}, merge.PatchOptions{})
		require.NoError(t, err)
		return hunkHeaders(p.Unified())
	}
	theirs := func(args ...string) map[string][]string {
		return hunkHeaders(testrepo.GitRaw(t, dir, nil, append([]string{"diff"}, args...)...))
	}
	compare := func(name string, want, got map[string][]string, skip map[string]bool) {
		require.NotEmpty(t, want)
		for p, w := range want {
			if skip[p] {
				continue
			}
			assert.Equal(t, w, got[p], "%s: %s", name, p)
		}
		assert.Len(t, got, len(want), name)
	}

	// Without .gitattributes: git's default rule everywhere.
	write(olds, nil)
	a0 := head()
	write(news, nil)
	b0 := head()
	compare("default rule", theirs(a0, b0), ours(a0, b0), nil)

	// With them: the built-in drivers.
	write(olds, map[string]string{".gitattributes": attrs.String()})
	a1 := head()
	write(news, nil)
	b1 := head()
	differs := map[string]bool{}
	for _, s := range funcnameSamples {
		pat, icase, ok := merge.BuiltinFuncname(s.driver)
		if !ok || icase {
			continue
		}
		paths := []string{"--"}
		for seed := 1; seed <= 3; seed++ {
			paths = append(paths, fmt.Sprintf("s%d/%s", seed, filepath.Base(s.file)))
		}
		builtin := testrepo.GitRaw(t, dir, nil, append([]string{"diff", a1, b1}, paths...)...)
		forced := testrepo.GitRaw(t, dir, nil, append([]string{"-c", "diff." + s.driver + ".xfuncname=" + pat, "diff", a1, b1}, paths...)...)
		if !bytes.Equal(builtin, forced) {
			t.Logf("the installed git's built-in %s pattern is not ours (git's is older): compared through the config only", s.driver)
			for _, p := range paths[1:] {
				differs[p] = true
			}
		}
	}
	compare("built-in drivers", theirs(a1, b1), ours(a1, b1), differs)

	// The patterns in the config, where both read them.
	for name := range merge.BuiltinDrivers() {
		pat, icase, _ := merge.BuiltinFuncname(name)
		if !icase { // a config pattern cannot ignore case
			testrepo.Git(t, dir, "config", "diff."+name+".xfuncname", pat)
		}
	}
	testrepo.Git(t, dir, "config", "diff.custom.xfuncname", "^(BEGIN [A-Z]+).*$")
	testrepo.Git(t, dir, "config", "diff.bre.funcname", `^\(SECTION\) [0-9]*`)
	compare("config patterns", theirs(a1, b1), ours(a1, b1), nil)
}

// TestHunkHeadersGeneratedEdits is a property test: on generated Go and
// Python files and random edits of them, the hunk headers (function
// context included) are git diff's, with the golang and python drivers
// a .gitattributes names and with git's default rule.
func TestHunkHeadersGeneratedEdits(t *testing.T) {
	work := t.TempDir()
	testrepo.Git(t, work, "init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(work, ".gitattributes"), []byte("*.go diff=golang\n*.py diff=python\n"), 0o644))
	bare := testrepo.InitBare(t)
	repo, err := gitstore.Open(bare)
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	ctx := t.Context()
	rapid.Check(t, func(rt *rapid.T) {
		ext := rapid.SampledFrom([]string{"go", "py", "txt"}).Draw(rt, "ext")
		old := genSource(rt, ext)
		cur := editSource(rt, old, ext)
		oldName, newName := "old."+ext, "new."+ext
		require.NoError(rt, os.WriteFile(filepath.Join(work, oldName), old, 0o644))
		require.NoError(rt, os.WriteFile(filepath.Join(work, newName), cur, 0o644))
		cmd := exec.Command("git", "diff", "--no-index", oldName, newName)
		cmd.Dir, cmd.Env = work, testrepo.Env()
		out, err := cmd.Output()
		var exit *exec.ExitError
		if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
			require.NoError(rt, err)
		}
		want := hunkHeaders(out)["new."+ext]

		b := repo.NewBatch()
		ga := gitstore.Change{Path: ".gitattributes", Mode: gitstore.ModeFile, OID: b.AddBlob([]byte("*.go diff=golang\n*.py diff=python\n"))}
		t1, err := b.BuildTree(ctx, gitstore.ZeroOID, []gitstore.Change{ga, {Path: "f." + ext, Mode: gitstore.ModeFile, OID: b.AddBlob(old)}})
		require.NoError(rt, err)
		t2, err := b.BuildTree(ctx, gitstore.ZeroOID, []gitstore.Change{ga, {Path: "f." + ext, Mode: gitstore.ModeFile, OID: b.AddBlob(cur)}})
		require.NoError(rt, err)
		require.NoError(rt, b.Flush(ctx))
		p, err := merge.Diff(ctx, repo, t1, t2, merge.DiffOptions{}, merge.PatchOptions{})
		require.NoError(rt, err)
		got := hunkHeaders(p.Unified())["f."+ext]
		require.Equal(rt, want, got, "old:\n%s\nnew:\n%s", old, cur)
	})
}

// genSource draws a file of Go or Python lines (or, for txt, a mix that
// git's default rule sees): declarations, bodies, comments, blank lines.
func genSource(rt *rapid.T, ext string) []byte {
	var templates []string
	switch ext {
	case "go":
		templates = []string{"func F%d(x int) int {", "func (r *T) M%d() {", "type T%d struct {", "type I%d interface {",
			"\tx := %d", "\tif x > %d {", "\t}", "}", "\treturn x", "// comment %d", "", "var v%d = 1", "import (", ")",
			"\tfunc() { _ = %d }()", "func veryLongFunctionNameThatGoesOnAndOnAndOn%d(argumentOne, argumentTwo, argumentThree int) {"}
	case "py":
		templates = []string{"class C%d:", "class C%d(Base):", "    def m%d(self):", "def f%d(x):", "async def g%d():",
			"@decorator%d", "        x = %d", "    return x", "", "# comment %d", "    class Inner%d:", "\tdef tabbed%d(self):",
			"if x > %d:", "  pass"}
	default:
		templates = []string{"Section %d", "  indented %d", "", "$var %d", "_private %d", "# hash %d", "1 digit %d",
			"x\ty\t%d   ", "Word %d\r"}
	}
	n := rapid.IntRange(0, 60).Draw(rt, "lines")
	var b bytes.Buffer
	for i := range n {
		tpl := rapid.SampledFrom(templates).Draw(rt, "line")
		if strings.Contains(tpl, "%d") {
			tpl = fmt.Sprintf(tpl, i)
		}
		b.WriteString(tpl + "\n")
	}
	return b.Bytes()
}

// editSource draws edits of a generated file: lines changed, deleted,
// and inserted from the same templates.
func editSource(rt *rapid.T, old []byte, ext string) []byte {
	lines := strings.SplitAfter(string(old), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	extra := strings.SplitAfter(string(genSource(rt, ext)), "\n")
	for range rapid.IntRange(1, 6).Draw(rt, "edits") {
		i := rapid.IntRange(0, len(lines)).Draw(rt, "at")
		switch op := rapid.IntRange(0, 2).Draw(rt, "op"); {
		case op == 0 && i < len(lines):
			lines[i] = strings.TrimSuffix(lines[i], "\n") + " // edited\n"
		case op == 1 && i < len(lines):
			lines = slices.Delete(lines, i, i+1)
		default:
			if l := extra[rapid.IntRange(0, len(extra)-1).Draw(rt, "extra")]; l != "" {
				lines = slices.Insert(lines, i, l)
			}
		}
	}
	return []byte(strings.Join(lines, ""))
}
