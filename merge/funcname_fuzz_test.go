package merge

import (
	"regexp"
	"testing"
)

// FuzzFuncnamePattern: any pattern a repository's config may hold either
// translates to an RE2 expression that compiles, or is refused with an
// error (then the default rule applies); matching any line with what
// compiled never panics and returns at most funcLineMax bytes.
func FuzzFuncnamePattern(f *testing.F) {
	for _, d := range builtinDrivers {
		f.Add(d.pattern, true, "func main() {")
	}
	f.Add(`^\(SECTION\) [0-9]*`, false, "SECTION 42 x")
	f.Add(`[]a-z[:alpha:][=x=][.y.]\]`, true, "]")
	f.Add(`a{2,}b{,3}\{\}\<\1`, true, "aab")
	f.Fuzz(func(t *testing.T, pattern string, extended bool, line string) {
		for _, l := range splitRules(pattern) {
			src, err := posixToRE2(l, extended)
			if err != nil {
				continue
			}
			if _, err := regexp.Compile(src); err != nil {
				// RE2 refuses what POSIX took (a repeat over 1000): then
				// compileFuncname refuses the pattern too.
				if _, cerr := compileFuncname(pattern, extended, false); cerr == nil {
					t.Fatalf("%q compiled though its rule %q translated to %q, which RE2 refuses", pattern, l, src)
				}
			}
		}
		ff, err := compileFuncname(pattern, extended, false)
		if err != nil {
			return
		}
		if text, ok := ff.match([]byte(line + "\n")); ok && len(text) > funcLineMax {
			t.Fatalf("function text of %d bytes", len(text))
		}
	})
}

func splitRules(pattern string) []string {
	var out []string
	for _, l := range regexp.MustCompile("\n").Split(pattern, -1) {
		if len(l) > 0 && l[0] == '!' {
			l = l[1:]
		}
		out = append(out, l)
	}
	return out
}
