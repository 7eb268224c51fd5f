package session

import (
	"strings"
	"testing"

	"github.com/sessiond/sessiond/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern string
		match   []string
		miss    []string
	}{
		{"*.go", []string{"a.go", ".go"}, []string{"a/b.go", "a.gox", "a.go/b"}},
		{"src/*", []string{"src/a", "src/.hidden"}, []string{"src", "src/a/b", "srcx/a"}},
		{"src/**", []string{"src", "src/a", "src/a/b/c"}, []string{"srcx", "srcx/a", "x/src/a"}},
		{"secrets/**", []string{"secrets", "secrets/key", "secrets/a/b"}, []string{"secrets.txt", "secretsx/a", "a/secrets/key"}},
		{"**", []string{"a", "a/b", "a/b/c"}, nil},
		{"**/x.txt", []string{"x.txt", "a/x.txt", "a/b/x.txt"}, []string{"ax.txt", "a/x.txt/b"}},
		{"a/**/b", []string{"a/b", "a/x/b", "a/x/y/b"}, []string{"a/xb", "b", "a/b/c"}},
		{"a?c", []string{"abc", "a.c"}, []string{"ac", "a/c", "abbc"}},
		{"[ab]x", []string{"ax", "bx"}, []string{"cx", "abx"}},
		{"[a-c]x", []string{"bx"}, []string{"dx"}},
		{"[!a]x", []string{"bx"}, []string{"ax", "/x"}},
		{"[^a]x", []string{"bx"}, []string{"ax", "/x"}},
		{"a[!b]c", []string{"axc"}, []string{"abc", "a/c"}},
		{"{src,docs}/**", []string{"src", "src/a.go", "docs/x/y"}, []string{"test/a.go", "srcdocs"}},
		{"src/**/*.{go,md}", []string{"src/a.go", "src/x/y/README.md"}, []string{"src/a.txt", "a.go"}},
		{`a\*b`, []string{"a*b"}, []string{"axb", "ab", `a\*b`}},
		{`a\?`, []string{"a?"}, []string{"ab"}},
		{`\[x\]`, []string{"[x]"}, []string{"x"}},
		{`a\{b,c\}`, []string{"a{b,c}"}, []string{"ab", "ac"}},
		{"README.md", []string{"README.md"}, []string{"readme.md", "a/README.md", "README.mdx"}},
		{"docs/guide.md", []string{"docs/guide.md"}, []string{"docs", "docs/guide.md/x"}},
	}
	for _, tc := range cases {
		t.Run(tc.pattern, func(t *testing.T) {
			g, err := CompileGlob(tc.pattern)
			require.NoError(t, err)
			for _, p := range tc.match {
				assert.True(t, g.Match(p), "%q should match %q", tc.pattern, p)
				assert.True(t, underPrefix(p, g.Prefix()), "%q matches %q outside its prefix %q", tc.pattern, p, g.Prefix())
			}
			for _, p := range tc.miss {
				assert.False(t, g.Match(p), "%q should not match %q", tc.pattern, p)
			}
		})
	}
}

func TestGlobPrefix(t *testing.T) {
	for pattern, want := range map[string]string{
		"**":            "",
		"*.go":          "",
		"README.md":     "",
		"src/**":        "src",
		"src/a/*.go":    "src/a",
		"src/a/b.go":    "src/a",
		`a\*b/*`:        "a*b",
		"{src,docs}/**": "",
		"src/{a,b}/x":   "src",
	} {
		g, err := CompileGlob(pattern)
		require.NoError(t, err, pattern)
		assert.Equal(t, want, g.Prefix(), pattern)
	}
}

func TestGlobInvalid(t *testing.T) {
	for _, pattern := range []string{"", "[", "a[b", "{a,b", `a\`, "/abs/**", "[]", "a[/]c", "a[.-0]c"} {
		_, err := CompileGlob(pattern)
		assert.ErrorIs(t, err, record.ErrInvalid, "%q", pattern)
	}
}

func underPrefix(p, prefix string) bool {
	return prefix == "" || p == prefix || strings.HasPrefix(p, prefix+"/")
}

// FuzzGlob: a compiled glob never panics, and every path it matches lies
// under its prefix (listings look only there, so a match outside would be
// missed). A pattern without metacharacters matches exactly itself.
func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{{"src/**", "src"}, {`a\*b`, "a*b"}, {"{a,b}/*", "a/x"}, {"**/x", "x"}, {"a/[!b]/c", "a/c/c"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, p string) {
		g, err := CompileGlob(pattern)
		if err != nil {
			return
		}
		if g.Match(p) && !underPrefix(p, g.Prefix()) {
			t.Fatalf("%q matches %q outside its prefix %q", pattern, p, g.Prefix())
		}
		if !strings.ContainsAny(pattern, `*?[]{}\`) && !g.Match(pattern) {
			t.Fatalf("literal %q does not match itself", pattern)
		}
	})
}

func TestPolicy(t *testing.T) {
	type want struct{ read, write bool }
	cases := []struct {
		name   string
		policy Policy
		paths  map[string]want
	}{
		{"empty allows all", Policy{}, map[string]want{"a": {true, true}, "x/y/z": {true, true}}},
		{"deny wins", Policy{Read: []string{"**"}, Write: []string{"**"}, Deny: []string{"secrets/**"}}, map[string]want{
			"secrets": {false, false}, "secrets/key": {false, false}, "secrets/a/b": {false, false}, "secretsx": {true, true}, "src/a": {true, true},
		}},
		{"write globs are readable", Policy{Read: []string{"README.md"}, Write: []string{"src/**"}}, map[string]want{
			"README.md": {true, false}, "src/a.go": {true, true}, "docs/x": {false, false},
		}},
		{"writes need read", Policy{Read: []string{"README.md"}}, map[string]want{
			"README.md": {true, true}, "src/a.go": {false, false},
		}},
		{"escapes and braces", Policy{Write: []string{`lit\*eral`, "{a,b}/**"}}, map[string]want{
			"lit*eral": {true, true}, "litXeral": {true, false}, "a/x": {true, true}, "b": {true, true}, "c/x": {true, false},
		}},
		{"parent narrows", Policy{Write: []string{"src/**", "docs/**"}, Parent: &Policy{Read: []string{"README.md", "src/**"}, Deny: []string{"src/private/**"}}}, map[string]want{
			"src/a": {true, true}, "src/private/k": {false, false}, "docs/x": {false, false}, "README.md": {true, false}, "other": {false, false},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := compilePolicy(tc.policy)
			require.NoError(t, err)
			for path, w := range tc.paths {
				assert.Equal(t, w.read, p.canRead(path), "read %q", path)
				assert.Equal(t, w.write, p.canWrite(path), "write %q", path)
				assert.Equal(t, w.read, p.checkRead(path) == nil, "checkRead %q", path)
				if err := p.checkWrite(path); w.write {
					assert.NoError(t, err, "checkWrite %q", path)
				} else {
					assert.ErrorIs(t, err, record.ErrForbidden, "checkWrite %q", path)
				}
			}
		})
	}
	_, err := compilePolicy(Policy{Deny: []string{"["}})
	assert.ErrorIs(t, err, record.ErrInvalid)
	_, err = compilePolicy(Policy{Parent: &Policy{Read: []string{"{"}}})
	assert.ErrorIs(t, err, record.ErrInvalid)
}

// TestNarrow: whatever a fork asks for, its policy allows nothing its
// parent's does not.
func TestNarrow(t *testing.T) {
	parent := Policy{Read: []string{"README.md", "src/**"}, Deny: []string{"docs/**"}}
	paths := []string{"README.md", "src/a.go", "src/x/y", "docs/guide.md", "docs", "other.txt", "secret/k"}
	reqs := []*Policy{
		nil,
		{},
		{Deny: []string{"src/x/**"}},
		{Read: []string{"**"}, Write: []string{"**"}},
		{Write: []string{"docs/**", "other.txt"}},
		{Read: []string{"**"}, Parent: &Policy{Read: []string{"**"}}},
	}
	pp, err := compilePolicy(parent)
	require.NoError(t, err)
	for _, req := range reqs {
		got := narrow(parent, req)
		gp, err := compilePolicy(got)
		require.NoError(t, err)
		for _, p := range paths {
			if gp.canRead(p) {
				assert.True(t, pp.canRead(p), "fork with %+v reads %q, its parent cannot", req, p)
			}
			if gp.canWrite(p) {
				assert.True(t, pp.canWrite(p), "fork with %+v writes %q, its parent cannot", req, p)
			}
		}
	}
	// What a fork asks for still applies.
	gp, err := compilePolicy(narrow(parent, &Policy{Deny: []string{"src/x/**"}}))
	require.NoError(t, err)
	assert.False(t, gp.canRead("src/x/y"))
	assert.True(t, gp.canRead("src/a.go"))
	// An empty parent leaves the request as it is.
	assert.Equal(t, Policy{Write: []string{"a"}}, narrow(Policy{}, &Policy{Write: []string{"a"}}))
}
