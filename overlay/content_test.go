package overlay_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/overlay"
)

// contentCases are hand-written .gitmodules and .gitattributes bodies:
// the three, each rule's edges, and the parser's corners. rule is
// what CheckContent must report ("" for none); the differential test
// also holds git fsck --strict to each of them.
var contentCases = []struct {
	name string
	file string // ".gitmodules" when empty
	body string
	rule overlay.Rule
}{
	// The three bodies of the issue.
	{"upload-pack url", "", "[submodule \"x\"]\n\tpath = x\n\turl = --upload-pack=touch$IFS/tmp/pwn\n", overlay.RuleGitmodulesURL},
	{"escaping name", "", "[submodule \"../../evil\"]\n\tpath = evil\n\turl = https://example.com/evil.git\n", overlay.RuleGitmodulesName},
	{"option path", "", "[submodule \"z\"]\n\tpath = -z\n\turl = https://example.com/z.git\n", overlay.RuleGitmodulesPath},

	{"empty", "", "", ""},
	{"good", "", "[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib.git\n\tbranch = main\n\tupdate = rebase\n", ""},
	{"good relative", "", "[submodule \"a/b\"]\n\tpath = a/b\n\turl = ../b.git\n", ""},
	{"good ssh", "", "[submodule \"s\"]\n\turl = git@example.com:s.git\n", ""},
	{"comments and blanks", "", "# top\n\n; also\n[submodule \"c\"] ; trailing\n  path = c # here\n", ""},
	{"crlf", "", "[submodule \"c\"]\r\n\tpath = c\r\n", ""},
	{"bom", "", "\xef\xbb\xbf[submodule \"c\"]\n\tpath = c\n", overlay.RuleGitmodulesParse},
	{"partial bom", "", "\xef\xbb[submodule \"c\"]\n", overlay.RuleGitmodulesParse},
	{"other sections", "", "[core]\n\tbare = true\n[remote \"..\"]\n\turl = -x\n", ""},
	{"no subsection", "", "[submodule]\n\turl = -x\n", ""},

	{"name dotdot", "", "[submodule \"..\"]\n\tpath = p\n", overlay.RuleGitmodulesName},
	{"name dotdot inner", "", "[submodule \"a/../b\"]\n\turl = ./b\n", overlay.RuleGitmodulesName},
	{"name without entries", "", "[submodule \"a/../b\"]\n", ""},
	{"name dotdot backslash", "", "[submodule \"a\\\\..\"]\n\tpath = p\n", overlay.RuleGitmodulesName},
	{"name dotdot old syntax", "", "[submodule...]\n\tpath = p\n", overlay.RuleGitmodulesName},
	{"name empty", "", "[submodule \"\"]\n\tpath = p\n", overlay.RuleGitmodulesName},
	{"name dots fine", "", "[submodule \"...\"]\n\tpath = p\n[submodule \"a..b\"]\n\tpath = q\n", ""},
	{"name checked without value", "", "[submodule \"..\"]\n\tactive\n", overlay.RuleGitmodulesName},

	{"url option", "", "[submodule \"x\"]\n\turl = -x\n", overlay.RuleGitmodulesURL},
	{"url quoted option", "", "[submodule \"x\"]\n\turl = \"-x\"\n", overlay.RuleGitmodulesURL},
	{"url case of key", "", "[Submodule \"x\"]\n\tURL = -x\n", overlay.RuleGitmodulesURL},
	{"url relative newline", "", "[submodule \"x\"]\n\turl = ./%0ahost\n", overlay.RuleGitmodulesURL},
	{"url git newline", "", "[submodule \"x\"]\n\turl = git://host/%0A\n", overlay.RuleGitmodulesURL},
	{"url escaped newline", "", "[submodule \"x\"]\n\turl = ./a\\nb\n", overlay.RuleGitmodulesURL},
	{"url dotdot colon", "", "[submodule \"x\"]\n\turl = ../:host/x\n", overlay.RuleGitmodulesURL},
	{"url dotdot slash", "", "[submodule \"x\"]\n\turl = ../../..//host/x\n", overlay.RuleGitmodulesURL},
	{"url dotdot fine", "", "[submodule \"x\"]\n\turl = ../../x\n", ""},
	{"url http no host", "", "[submodule \"x\"]\n\turl = http:///x\n", overlay.RuleGitmodulesURL},
	{"url http helper no scheme", "", "[submodule \"x\"]\n\turl = http::example.com/x\n", overlay.RuleGitmodulesURL},
	{"url https newline in path", "", "[submodule \"x\"]\n\turl = https://example.com/%0a\n", overlay.RuleGitmodulesURL},
	{"url https newline in user", "", "[submodule \"x\"]\n\turl = https://u%0a@example.com/x\n", overlay.RuleGitmodulesURL},
	{"url https newline in password", "", "[submodule \"x\"]\n\turl = https://u:p%0a@example.com/x\n", overlay.RuleGitmodulesURL},
	{"url https ok", "", "[submodule \"x\"]\n\turl = https://u:p@example.com:8443/x?y#z\n", ""},
	{"url ftp no host", "", "[submodule \"x\"]\n\turl = ftp://@/x\n", overlay.RuleGitmodulesURL},
	{"url nul hides rest", "", "[submodule \"x\"]\n\turl = ok\x00-x\n", ""},
	{"url no value", "", "[submodule \"x\"]\n\turl\n", ""},

	{"path option", "", "[submodule \"x\"]\n\tpath = --x\n", overlay.RuleGitmodulesPath},
	{"path inner dash", "", "[submodule \"x\"]\n\tpath = a-x\n", ""},

	{"update command", "", "[submodule \"x\"]\n\tupdate = !sh -c evil\n", overlay.RuleGitmodulesUpdate},
	{"update none", "", "[submodule \"x\"]\n\tupdate = none\n", ""},

	{"parse bad key", "", "[submodule \"x\"]\n\t-path = p\n", overlay.RuleGitmodulesParse},
	{"parse unclosed section", "", "[submodule \"x\"\n\tpath = p\n", overlay.RuleGitmodulesParse},
	{"parse unclosed quote", "", "[submodule \"x\"]\n\tpath = \"p\n", overlay.RuleGitmodulesParse},
	{"parse bad escape", "", "[submodule \"x\"]\n\tpath = a\\qb\n", overlay.RuleGitmodulesParse},
	{"parse no equals", "", "[submodule \"x\"]\n\tpath p\n", overlay.RuleGitmodulesParse},
	{"parse high byte", "", "\xfe\n", overlay.RuleGitmodulesParse},
	{"high bytes in values", "", "[submodule \"\xc3\xa9\"]\n\tpath = \xc3\xa9\xfe\n", ""},
	{"0xff ends the file for git", "", "[submodule \"x\"]\n\tpath = x\xff\n\turl = -x\n", overlay.RuleGitmodulesParse},
	{"0xff then an entry", "", "[submodule \"..\"] u\xffx=1\n", overlay.RuleGitmodulesName},
	{"continuation", "", "[submodule \"x\"]\n\tpath = \\\n-z\n", overlay.RuleGitmodulesPath},
	{"error before parse error", "", "[submodule \"x\"]\n\turl = -x\n!!!\n", overlay.RuleGitmodulesURL},

	{"ntfs short name", "GITMOD~1", "[submodule \"x\"]\n\turl = -x\n", overlay.RuleGitmodulesURL},
	{"upper case name", ".GitModules", "[submodule \"..\"]\n\tpath = p\n", overlay.RuleGitmodulesName},
	{"hfs ignorable", ".git\u200cmodules", "[submodule \"x\"]\n\tpath = -x\n", overlay.RuleGitmodulesPath},
	{"ntfs trailing dot", ".gitmodules.", "[submodule \"x\"]\n\tpath = -x\n", overlay.RuleGitmodulesPath},
	{"other file", "modules", "[submodule \"x\"]\n\turl = -x\n", ""},

	{"attributes ok", ".gitattributes", "*.go diff=golang\n" + strings.Repeat("x", 2047) + "\n", ""},
	{"attributes long line", ".gitattributes", "*.go text\n" + strings.Repeat("x", 2048) + "\n", overlay.RuleGitattributesLineLength},
	{"attributes long after nul", ".gitattributes", "a\x00" + strings.Repeat("x", 3000), ""},
}

func TestCheckContent(t *testing.T) {
	for _, tc := range contentCases {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.file
			if file == "" {
				file = ".gitmodules"
			}
			for _, p := range []string{file, "sub/dir/" + file} {
				err := overlay.CheckContent(p, gitstore.ModeFile, []byte(tc.body))
				if tc.rule == "" {
					assert.NoError(t, err, p)
					continue
				}
				var pe *overlay.PathError
				if assert.ErrorAs(t, err, &pe, p) {
					assert.Equal(t, tc.rule, pe.Rule, "%s: %v", p, err)
					assert.Equal(t, p, pe.Path)
					assert.ErrorIs(t, err, overlay.ErrInvalidPath)
				}
			}
		})
	}
}

// A symlink or a directory is not content: other rules refuse them.
func TestContentCheckedFiles(t *testing.T) {
	assert.True(t, overlay.ContentChecked(".gitmodules", gitstore.ModeFile))
	assert.True(t, overlay.ContentChecked("a/.gitattributes", gitstore.ModeExec))
	assert.False(t, overlay.ContentChecked(".gitmodules", gitstore.ModeSymlink))
	assert.False(t, overlay.ContentChecked(".gitignore", gitstore.ModeFile))
	assert.False(t, overlay.ContentChecked("gitmodules", gitstore.ModeFile))
}

// Every write of a .gitmodules blob passes the content rules, and a
// rejected one changes nothing; writing the base's own blob back is a
// revert and always allowed.
func TestPutChecksContent(t *testing.T) {
	ctx := context.Background()
	f := openFixture(t, "small")
	o := overlay.New(f.view, overlay.Options{})
	bad := f.blob(t, "[submodule \"x\"]\n\tpath = -x\n")
	err := o.Put(ctx, "lib/.gitmodules", bad, gitstore.ModeFile)
	var pe *overlay.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, overlay.RuleGitmodulesPath, pe.Rule)
	assert.Equal(t, 0, o.Len())

	good := f.blob(t, "[submodule \"x\"]\n\tpath = x\n")
	require.NoError(t, o.Put(ctx, "lib/.gitmodules", good, gitstore.ModeFile))
	// Blobs not in the repository yet are read through ReadBlobsWith.
	queued := []byte("[submodule \"..\"]\n\tpath = p\n")
	id := gitstore.HashObject(gitstore.KindBlob, queued)
	require.Error(t, o.Put(ctx, ".gitmodules", id, gitstore.ModeFile), "an unreadable blob is refused, not waved through")
	o.ReadBlobsWith(func(_ context.Context, got gitstore.OID) ([]byte, error) {
		if got == id {
			return queued, nil
		}
		return nil, errors.New("unexpected read")
	})
	err = o.Put(ctx, ".gitmodules", id, gitstore.ModeFile)
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, overlay.RuleGitmodulesName, pe.Rule)
	assert.Equal(t, 1, o.Len())
}

// fsckVerdict is what git fsck --strict said about one blob.
type fsckVerdict struct {
	errors map[overlay.Rule]bool // error-level messages
	parse  bool                  // the gitmodulesParse warning
}

var fsckLine = regexp.MustCompile(`(?m)^(error|warning) in blob ([0-9a-f]{40}): (\w+):`)

// fsckContents commits every body as <name> in a directory of its own in
// a fresh repository (written in-process: gitstore checks nothing of the
// content) and returns what `git fsck --strict` reports for each blob.
func fsckContents(tb testing.TB, name string, bodies [][]byte) []fsckVerdict {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	r, err := gitstore.Init(dir, true)
	require.NoError(tb, err)
	defer r.Close()
	b := r.NewBatch()
	changes := make([]gitstore.Change, len(bodies))
	for i, body := range bodies {
		changes[i] = gitstore.Change{Path: fmt.Sprintf("c%d/%s", i, name), Mode: gitstore.ModeFile, OID: b.AddBlob(body)}
	}
	tree, err := b.BuildTree(ctx, gitstore.ZeroOID, changes)
	require.NoError(tb, err)
	sig := gitstore.Signature{Name: testrepo.CommitterName, Email: testrepo.CommitterEmail, When: time.Unix(1_700_000_000, 0).UTC()}
	commit := b.AddCommit(gitstore.NewCommit{Tree: tree, Author: sig, Committer: sig, Message: "contents\n"})
	require.NoError(tb, b.Flush(ctx))
	require.NoError(tb, r.UpdateRef(ctx, "refs/heads/main", commit, gitstore.ZeroOID))
	cmd := exec.Command("git", "fsck", "--strict", "--no-dangling")
	cmd.Dir, cmd.Env = dir, testrepo.Env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		tb.Fatal(err)
	}
	byBlob := map[string]*fsckVerdict{}
	for _, m := range fsckLine.FindAllStringSubmatch(stderr.String(), -1) {
		v := byBlob[m[2]]
		if v == nil {
			v = &fsckVerdict{errors: map[overlay.Rule]bool{}}
			byBlob[m[2]] = v
		}
		switch {
		case m[1] == "error":
			v.errors[overlay.Rule(m[3])] = true
		case m[3] == string(overlay.RuleGitmodulesParse):
			v.parse = true
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if strings.HasPrefix(l, "error") && !fsckLine.MatchString(l) {
			tb.Fatalf("git fsck reports more than blob contents: %s", stderr.String())
		}
	}
	if exit != nil && len(byBlob) == 0 {
		tb.Fatalf("git fsck failed without naming a blob: %s", stderr.String())
	}
	out := make([]fsckVerdict, len(bodies))
	for i, b := range bodies {
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", len(b))
		h.Write(b)
		if v := byBlob[fmt.Sprintf("%x", h.Sum(nil))]; v != nil {
			out[i] = *v
		}
	}
	return out
}

// agree checks CheckContent against git's verdict: refused where git
// reports an error (under one of git's rules), refused as unparsable
// where git only warns it cannot parse, accepted where git is silent
// (except for a 0xff byte, refused although git reads it as the end of
// the file).
func agree(t interface {
	Helper()
	Fatalf(string, ...any)
}, name string, body []byte, v fsckVerdict) {
	t.Helper()
	err := overlay.CheckContent(name, gitstore.ModeFile, body)
	var pe *overlay.PathError
	switch {
	case len(v.errors) > 0:
		if !errors.As(err, &pe) {
			t.Fatalf("%s %q: git fsck reports %v, CheckContent accepts it", name, body, v.errors)
		}
		if !v.errors[pe.Rule] {
			t.Fatalf("%s %q: git fsck reports %v, CheckContent %s", name, body, v.errors, pe.Rule)
		}
	case v.parse:
		if !errors.As(err, &pe) || pe.Rule != overlay.RuleGitmodulesParse {
			t.Fatalf("%s %q: git cannot parse it, CheckContent says %v", name, body, err)
		}
	case errors.As(err, &pe) && pe.Rule == overlay.RuleGitmodulesParse && bytes.IndexByte(body, 0xff) >= 0:
		// Stricter on purpose: git stops reading at a 0xff byte.
	case err != nil:
		t.Fatalf("%s %q: git fsck --strict is clean, CheckContent says %v", name, body, err)
	}
}

func TestCheckContentMatchesGitFsck(t *testing.T) {
	byName := map[string][]int{}
	for i, tc := range contentCases {
		file := tc.file
		if file == "" {
			file = ".gitmodules"
		}
		byName[file] = append(byName[file], i)
	}
	for file, idx := range byName {
		bodies := make([][]byte, len(idx))
		for j, i := range idx {
			bodies[j] = []byte(contentCases[i].body)
		}
		for j, v := range fsckContents(t, file, bodies) {
			tc := contentCases[idx[j]]
			t.Run(tc.name, func(t *testing.T) {
				if !overlay.ContentChecked(file, gitstore.ModeFile) {
					assert.Empty(t, v.errors, "git checks %q", file)
					return
				}
				agree(t, file, bodies[j], v)
			})
		}
	}
}

// genGitmodules draws .gitmodules bodies from the pieces the rules and
// the parser turn on, weighted so that valid files, each rule's refusals
// and syntax errors are all common.
func genGitmodules() *rapid.Generator[[]byte] {
	rare := func(common []string, n int, unusual ...string) []string {
		var out []string
		for range n {
			out = append(out, common...)
		}
		return append(out, unusual...)
	}
	nameAtoms := rare([]string{"a", "lib", "..", ".", "/", "x.y", "-", "A"}, 4, "\\\\", " ", "\\\"", "\"", "\\", "\t", "\x00", "é", "")
	valueAtoms := rare([]string{
		"-", "--upload-pack=x", "..", "../", "./", ".\\", "..\\", ":", "/", "//", "%0a", "%0A", "%0", "%00", "%", "%2f",
		"git://", "http://", "https://", "http::", "https::", "ftp://", "ftps::", "file://", "@", "host", "u:p@", "u@", ":8080",
		"?", "!", "!cmd", "none", "checkout", "merge", "a", " ",
	}, 3, "\\n", "\\t", "\\b", "\\\\", "\\\"", "\\x", "\"", "#c", ";c", "\t", "\x00", "\xff", "\\\n", "\r")
	keys := rare([]string{"path", "url", "update", "URL", "Path"}, 6, "branch", "url2", "active", "1url", "-url", "ur l", "update ")
	seps := rare([]string{" = ", "=", "  =\t"}, 4, " ", "")
	name := rapid.Custom(func(t *rapid.T) string {
		return strings.Join(rapid.SliceOfN(rapid.SampledFrom(nameAtoms), 1, 4).Draw(t, "atoms"), "")
	})
	section := rapid.Custom(func(t *rapid.T) string {
		n := name.Draw(t, "name")
		return rapid.SampledFrom(rare([]string{`[submodule "` + n + `"]`}, 12,
			"[submodule."+n+"]", `[Submodule "`+n+`"]`, `[submodule  "`+n+`" ]`, `[ submodule "`+n+`"]`,
			"[core]", "[submodule]", "[]", `[submodule "`+n, `[remote "`+n+`"]`)).Draw(t, "form")
	})
	entry := rapid.Custom(func(t *rapid.T) string {
		v := strings.Join(rapid.SliceOfN(rapid.SampledFrom(valueAtoms), 0, 4).Draw(t, "value"), "")
		return rapid.SampledFrom([]string{"", "\t", "  "}).Draw(t, "indent") +
			rapid.SampledFrom(keys).Draw(t, "key") + rapid.SampledFrom(seps).Draw(t, "sep") + v
	})
	junk := rapid.Custom(func(t *rapid.T) string {
		return string(rapid.SliceOfN(rapid.SampledFrom([]byte("[]\"=#;\\ \t\r\nab-.\x00\xef\xbb\xbf")), 0, 8).Draw(t, "bytes"))
	})
	line := rapid.OneOf(section, section, section, entry, entry, entry, entry, entry, entry,
		rapid.SampledFrom([]string{"", "# c", "; c", "   "}), junk)
	return rapid.Custom(func(t *rapid.T) []byte {
		var b bytes.Buffer
		b.WriteString(rapid.SampledFrom(rare([]string{""}, 20, "\xef\xbb\xbf", "\xef\xbb")).Draw(t, "bom"))
		for range rapid.IntRange(0, 6).Draw(t, "lines") {
			b.WriteString(line.Draw(t, "line"))
			b.WriteString(rapid.SampledFrom(rare([]string{"\n"}, 10, "\r\n", "\r", "")).Draw(t, "eol"))
		}
		return b.Bytes()
	})
}

// Random .gitmodules files, ours against git fsck --strict: every file
// git refuses is refused, under one of git's rules, every file git
// cannot parse is refused as gitmodulesParse, and every file git is
// silent about is accepted. Each check runs one fsck over a batch.
func TestCheckContentMatchesGitFsckRandom(t *testing.T) {
	plainRunOnly(t, "random .gitmodules files against git fsck")
	gen := genGitmodules()
	rapid.Check(t, func(rt *rapid.T) {
		bodies := rapid.SliceOfN(gen, 30, 30).Draw(rt, "bodies")
		for i, v := range fsckContents(t, ".gitmodules", bodies) {
			agree(rt, ".gitmodules", bodies[i], v)
		}
	})
}

// FuzzCheckContent runs the .gitmodules parser and rules on any input:
// no panic, the same answer twice, and only content rules as answers.
func FuzzCheckContent(f *testing.F) {
	for _, tc := range contentCases {
		f.Add(tc.body)
	}
	rules := map[overlay.Rule]bool{
		overlay.RuleGitmodulesName: true, overlay.RuleGitmodulesPath: true, overlay.RuleGitmodulesURL: true,
		overlay.RuleGitmodulesUpdate: true, overlay.RuleGitmodulesParse: true, overlay.RuleGitmodulesLarge: true,
	}
	f.Fuzz(func(t *testing.T, body string) {
		err := overlay.CheckContent(".gitmodules", gitstore.ModeFile, []byte(body))
		again := overlay.CheckContent(".gitmodules", gitstore.ModeFile, []byte(body))
		if fmt.Sprint(err) != fmt.Sprint(again) {
			t.Fatalf("%q: %v, then %v", body, err, again)
		}
		if err == nil {
			return
		}
		var pe *overlay.PathError
		if !errors.As(err, &pe) || !rules[pe.Rule] || pe.Path != ".gitmodules" {
			t.Fatalf("%q: %v is not a content rule's error", body, err)
		}
	})
}
