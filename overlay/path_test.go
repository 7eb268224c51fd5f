package overlay_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/overlay"
)

// badPaths holds every class of syntactically bad path from the bad-input
// section, with the rule each must be rejected under.
var badPaths = []struct {
	name string
	path string
	rule overlay.Rule
}{
	{"empty", "", overlay.RuleFullPathname},
	{"root slash", "/", overlay.RuleFullPathname},
	{"leading slash", "/a", overlay.RuleFullPathname},
	{"trailing slash", "a/", overlay.RuleFullPathname},
	{"double slash", "a//b", overlay.RuleFullPathname},
	{"dot", ".", overlay.RuleHasDot},
	{"dot component", "a/./b", overlay.RuleHasDot},
	{"trailing dot component", "a/.", overlay.RuleHasDot},
	{"dotdot", "..", overlay.RuleHasDotdot},
	{"dotdot component", "a/../b", overlay.RuleHasDotdot},
	{"leading dotdot", "../etc/passwd", overlay.RuleHasDotdot},
	{"dotgit", ".git", overlay.RuleHasDotgit},
	{"dotgit upper", ".GIT", overlay.RuleHasDotgit},
	{"dotgit mixed case below", "sub/.GiT/config", overlay.RuleHasDotgit},
	{"dotgit hooks", ".git/hooks/pre-commit", overlay.RuleHasDotgit},
	{"ntfs short name", "git~1", overlay.RuleHasDotgit},
	{"ntfs short name upper", "a/GIT~1/config", overlay.RuleHasDotgit},
	{"ntfs trailing dot", ".git.", overlay.RuleHasDotgit},
	{"ntfs trailing dots and spaces", ".git . .", overlay.RuleHasDotgit},
	{"ntfs trailing space", ".git ", overlay.RuleHasDotgit},
	{"ntfs short name trailing dot", "git~1.", overlay.RuleHasDotgit},
	{"ntfs index allocation stream", ".git::$INDEX_ALLOCATION", overlay.RuleHasDotgit},
	{"ntfs data stream", ".git::$DATA", overlay.RuleHasDotgit},
	{"hfs zero-width non-joiner", ".g\u200cit", overlay.RuleHasDotgit},
	{"hfs zero-width joiner upper", ".G\u200dIT", overlay.RuleHasDotgit},
	{"hfs left-to-right mark", "\u200e.git", overlay.RuleHasDotgit},
	{"hfs bidi embedding", ".gi\u202at/x", overlay.RuleHasDotgit},
	{"hfs inhibit swapping", ".git\u206a", overlay.RuleHasDotgit},
	{"hfs byte order mark", "\ufeff.git", overlay.RuleHasDotgit},
	{"NUL", "a\x00b", overlay.RuleBadPathChar},
	{"control char", "a\x01b", overlay.RuleBadPathChar},
	{"newline", "a\nb", overlay.RuleBadPathChar},
	{"tab", "a\tb", overlay.RuleBadPathChar},
	{"unit separator", "a\x1f", overlay.RuleBadPathChar},
	{"DEL", "a\x7fb", overlay.RuleBadPathChar},
	{"backslash", `a\b`, overlay.RuleBadPathChar},
	{"backslash dotgit", `.git\config`, overlay.RuleBadPathChar},
	{"invalid UTF-8", "a/\xff\xfe", overlay.RuleBadPathChar},
	{"truncated UTF-8", "caf\xc3", overlay.RuleBadPathChar},
	{"UTF-8 surrogate", "\xed\xa0\x80", overlay.RuleBadPathChar},
	{"256-byte component", strings.Repeat("x", 256), overlay.RuleLargePathname},
	{"256-byte inner component", "a/" + strings.Repeat("é", 128) + "/b", overlay.RuleLargePathname},
	{"path over 4096 bytes", strings.Repeat(strings.Repeat("p", 200)+"/", 20) + strings.Repeat("f", 77), overlay.RuleLargePathname},
}

var goodPaths = []string{
	"a",
	"a/b/c.txt",
	".gitmodules",
	".gitignore",
	"sub/.gitattributes",
	".github/workflows/ci.yml",
	".gitx",
	"x.git",
	"git",
	"git~2",
	"...",
	".git-blame-ignore-revs",
	"with space.txt",
	"日本語/ファイル.md",
	"emoji-🎉.txt",
	strings.Repeat("x", 255),
	strings.Repeat(strings.Repeat("p", 200)+"/", 20) + strings.Repeat("f", 76),
}

func TestValidatePath(t *testing.T) {
	for _, tc := range badPaths {
		t.Run(tc.name, func(t *testing.T) {
			err := overlay.ValidatePath(tc.path)
			var pe *overlay.PathError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.rule, pe.Rule)
			assert.Equal(t, tc.path, pe.Path)
			assert.ErrorIs(t, err, overlay.ErrInvalidPath)
			assert.Contains(t, err.Error(), string(tc.rule))
		})
	}
	for _, p := range goodPaths {
		assert.NoError(t, overlay.ValidatePath(p), "%q", p)
	}
	assert.Len(t, goodPaths[len(goodPaths)-1], 4096)
}

// TestRejectedWrites runs every bad path and every view-dependent rule
// through Put and Delete on a real repository and checks that the rule is
// named and nothing was written.
func TestRejectedWrites(t *testing.T) {
	ctx := t.Context()
	small := openFixture(t, "small")
	gitlink := openFixture(t, "gitlink")
	unicode := openFixture(t, "unicode")
	content := small.blob(t, "content\n")

	type write struct {
		name string
		f    *fixture
		// setup prepares the overlay before the rejected operation.
		setup  func(t *testing.T, o *overlay.Overlay)
		path   string
		mode   gitstore.Mode
		delete bool
		rule   overlay.Rule
	}
	var cases []write
	for _, bp := range badPaths {
		cases = append(cases,
			write{name: "put " + bp.name, f: small, path: bp.path, mode: gitstore.ModeFile, rule: bp.rule},
			write{name: "delete " + bp.name, f: small, path: bp.path, delete: true, rule: bp.rule})
	}
	deleteReadme := func(t *testing.T, o *overlay.Overlay) { require.NoError(t, o.Delete(ctx, "README.md")) }
	putNew := func(p string) func(t *testing.T, o *overlay.Overlay) {
		return func(t *testing.T, o *overlay.Overlay) { require.NoError(t, o.Put(ctx, p, content, gitstore.ModeFile)) }
	}
	cases = append(cases, []write{
		{name: "below a base file", f: small, path: "a.txt/x", mode: gitstore.ModeFile, rule: overlay.RuleFileDirectoryCollision},
		{name: "deep below a base file", f: small, path: "a/b/c/deep.txt/y/z", mode: gitstore.ModeFile, rule: overlay.RuleFileDirectoryCollision},
		{name: "through a symlink to a file", f: small, path: "link/x", mode: gitstore.ModeFile, rule: overlay.RuleFileDirectoryCollision},
		{name: "through a symlink to a directory", f: small, path: "dirlink/x", mode: gitstore.ModeFile, rule: overlay.RuleFileDirectoryCollision},
		{name: "file over a base directory", f: small, path: "a", mode: gitstore.ModeFile, rule: overlay.RuleFileDirectoryCollision},
		{name: "symlink over a base directory", f: small, path: "a/b", mode: gitstore.ModeSymlink, rule: overlay.RuleFileDirectoryCollision},
		{name: "below an added file", f: small, setup: putNew("new.txt"), path: "new.txt/x", mode: gitstore.ModeFile, rule: overlay.RuleFileDirectoryCollision},
		{name: "file over an added directory", f: small, setup: putNew("newdir/x"), path: "newdir", mode: gitstore.ModeFile, rule: overlay.RuleFileDirectoryCollision},
		{name: "mode tree", f: small, path: "x", mode: gitstore.ModeDir, rule: overlay.RuleBadFilemode},
		{name: "mode gitlink", f: small, path: "x", mode: gitstore.ModeGitlink, rule: overlay.RuleBadFilemode},
		{name: "mode 100664", f: small, path: "x", mode: 0o100664, rule: overlay.RuleBadFilemode},
		{name: "mode zero", f: small, path: "x", mode: 0, rule: overlay.RuleBadFilemode},
		{name: "write over a gitlink", f: gitlink, path: "vendor/lib", mode: gitstore.ModeFile, rule: overlay.RuleBadFilemode},
		{name: "write below a gitlink", f: gitlink, path: "vendor/lib/x", mode: gitstore.ModeFile, rule: overlay.RuleFileDirectoryCollision},
		{name: "delete a gitlink", f: gitlink, path: "third_party/deep/tool", delete: true, rule: overlay.RuleBadFilemode},
		{name: "delete a directory holding a gitlink", f: gitlink, path: "third_party", delete: true, rule: overlay.RuleBadFilemode},
		{name: ".gitmodules symlink", f: small, path: ".gitmodules", mode: gitstore.ModeSymlink, rule: overlay.RuleGitmodulesSymlink},
		{name: ".gitattributes symlink", f: small, path: "src/.gitattributes", mode: gitstore.ModeSymlink, rule: overlay.RuleGitmodulesSymlink},
		{name: ".gitignore symlink", f: small, path: "a/.gitignore", mode: gitstore.ModeSymlink, rule: overlay.RuleGitmodulesSymlink},
		{name: ".GITMODULES symlink", f: small, path: ".GITMODULES", mode: gitstore.ModeSymlink, rule: overlay.RuleGitmodulesSymlink},
		{name: "hfs .gitmodules symlink", f: small, path: ".git\u200cmodules", mode: gitstore.ModeSymlink, rule: overlay.RuleGitmodulesSymlink},
		{name: "ntfs .gitmodules symlink", f: small, path: ".gitmodules. ", mode: gitstore.ModeSymlink, rule: overlay.RuleGitmodulesSymlink},
		{name: "ntfs short .gitmodules symlink", f: small, path: "GITMOD~1", mode: gitstore.ModeSymlink, rule: overlay.RuleGitmodulesSymlink},
		{name: "ntfs hashed .gitmodules symlink", f: small, path: "gi7eba~1", mode: gitstore.ModeSymlink, rule: overlay.RuleGitmodulesSymlink},
		{name: ".gitmodules directory", f: small, path: ".gitmodules/x", mode: gitstore.ModeFile, rule: overlay.RuleGitmodulesBlob},
		{name: "ntfs .gitmodules directory", f: small, path: "a/.GITMODULES./x/y", mode: gitstore.ModeFile, rule: overlay.RuleGitmodulesBlob},
		{name: "case of a base file", f: small, path: "readme.md", mode: gitstore.ModeFile, rule: overlay.RuleCaseCollision},
		{name: "case of a base directory", f: small, path: "A/new.txt", mode: gitstore.ModeFile, rule: overlay.RuleCaseCollision},
		{name: "case of an added file", f: small, setup: putNew("docs/Notes.md"), path: "docs/NOTES.md", mode: gitstore.ModeFile, rule: overlay.RuleCaseCollision},
		{name: "NFD of an NFC name", f: unicode, path: "nfc/cafe\u0301.txt", mode: gitstore.ModeFile, rule: overlay.RuleCaseCollision},
		{name: "NFC of an NFD name", f: unicode, path: "nfd/caf\u00e9.txt", mode: gitstore.ModeFile, rule: overlay.RuleCaseCollision},
		{name: "case and normalization", f: unicode, path: "CAFE\u0301.TXT", mode: gitstore.ModeFile, rule: overlay.RuleCaseCollision},
		{name: "full case folding", f: unicode, path: "STRASSE/x.txt", mode: gitstore.ModeFile, rule: overlay.RuleCaseCollision},
		{name: "non-ASCII case", f: unicode, path: "ΕΛΛΗΝΙΚΆ.txt", mode: gitstore.ModeFile, rule: overlay.RuleCaseCollision},
		{name: "case after delete is still checked", f: small, setup: deleteReadme, path: "a.TXT", mode: gitstore.ModeFile, rule: overlay.RuleCaseCollision},
	}...)

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := overlay.New(tc.f.view, overlay.Options{})
			if tc.setup != nil {
				tc.setup(t, o)
			}
			before := o.Entries()
			var err error
			if tc.delete {
				err = o.Delete(ctx, tc.path)
			} else {
				err = o.Put(ctx, tc.path, content, tc.mode)
				assert.Equal(t, err, o.CheckPut(ctx, tc.path, tc.mode), "CheckPut agrees with Put")
			}
			var pe *overlay.PathError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.rule, pe.Rule, "%v", err)
			assert.Equal(t, tc.path, pe.Path)
			assert.Equal(t, before, o.Entries(), "a rejected write changes nothing")
		})
	}
}

func TestCaseCollisionsCanBeAllowed(t *testing.T) {
	ctx := t.Context()
	f := openFixture(t, "small")
	o := overlay.New(f.view, overlay.Options{AllowCaseCollisions: true})
	require.NoError(t, o.Put(ctx, "readme.md", f.blob(t, "x"), gitstore.ModeFile))
	// Writing over an existing name is never a case collision.
	o = overlay.New(f.view, overlay.Options{})
	require.NoError(t, o.Put(ctx, "README.md", f.blob(t, "y"), gitstore.ModeFile))
}

func TestDeleteMissing(t *testing.T) {
	f := openFixture(t, "small")
	o := overlay.New(f.view, overlay.Options{})
	assert.ErrorIs(t, o.Delete(t.Context(), "nope"), overlay.ErrNotFound)
	assert.ErrorIs(t, o.Delete(t.Context(), "a.txt/x"), overlay.ErrNotFound)
}

func FuzzValidatePath(f *testing.F) {
	for _, bp := range badPaths {
		f.Add(bp.path)
	}
	for _, p := range goodPaths {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := overlay.ValidatePath(p)
		if err != nil {
			var pe *overlay.PathError
			if !errors.As(err, &pe) || pe.Path != p || pe.Rule == "" {
				t.Fatalf("ValidatePath(%q) = %v, want a *PathError naming a rule", p, err)
			}
			return
		}
		if !fs.ValidPath(p) || p == "." {
			t.Fatalf("accepted %q, which is not a valid fs path", p)
		}
		if !utf8.ValidString(p) || len(p) > overlay.MaxPathBytes {
			t.Fatalf("accepted %q", p)
		}
		for _, c := range strings.Split(p, "/") {
			if len(c) > overlay.MaxComponentBytes || c == "" || c == "." || c == ".." {
				t.Fatalf("accepted %q with component %q", p, c)
			}
			if strings.ContainsFunc(c, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
				t.Fatalf("accepted %q with a control character or backslash", p)
			}
			// No spelling of .git survives case folding, ignorable code
			// points, trailing dots and spaces, or a stream suffix.
			n := strings.Map(func(r rune) rune {
				if (r >= 0x200c && r <= 0x200f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x206a && r <= 0x206f) || r == 0xfeff {
					return -1
				}
				return r
			}, c)
			n, _, _ = strings.Cut(n, ":")
			n = strings.TrimRight(n, ". ")
			if strings.EqualFold(n, ".git") || strings.EqualFold(n, "git~1") {
				t.Fatalf("accepted %q with a .git component %q", p, c)
			}
		}
	})
}

// The validator is the only judge; make sure CheckPut cannot be
// reached with a path it would refuse.
func TestCheckPutValidatesFirst(t *testing.T) {
	o := overlay.New(nil, overlay.Options{})
	err := o.CheckPut(context.Background(), ".git/config", gitstore.ModeFile)
	var pe *overlay.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, overlay.RuleHasDotgit, pe.Rule)
}
