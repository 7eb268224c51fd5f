package session

import (
	"fmt"
	"regexp"
	"strings"
)

// Glob is a compiled path pattern: `*` and `?` match within one path
// component, `**` matches any number of whole components (also none), and
// `[abc]`, `[a-z]`, `[!x]` are character classes. A pattern matches the
// whole path.
type Glob struct {
	pattern string
	re      *regexp.Regexp
	// literal is the longest leading run of whole components with no
	// wildcard: a listing only needs to look below it.
	literal string
}

// CompileGlob parses pattern.
func CompileGlob(pattern string) (*Glob, error) {
	if pattern == "" {
		return nil, fmt.Errorf("%w: empty glob", ErrInvalid)
	}
	var re strings.Builder
	re.WriteString("^")
	comps := strings.Split(pattern, "/")
	var lit []string
	literal := true
	for i, c := range comps {
		last := i == len(comps)-1
		if c == "**" {
			literal = false
			if last {
				re.WriteString(".*")
			} else {
				re.WriteString("(?:[^/]*/)*")
			}
			continue
		}
		if literal && !strings.ContainsAny(c, "*?[") && !last {
			lit = append(lit, c)
		} else {
			literal = false
		}
		if err := compileComponent(&re, c); err != nil {
			return nil, fmt.Errorf("%w: glob %q: %v", ErrInvalid, pattern, err)
		}
		if !last {
			re.WriteString("/")
		}
	}
	re.WriteString("$")
	rx, err := regexp.Compile(re.String())
	if err != nil {
		return nil, fmt.Errorf("%w: glob %q: %v", ErrInvalid, pattern, err)
	}
	return &Glob{pattern: pattern, re: rx, literal: strings.Join(lit, "/")}, nil
}

func compileComponent(re *strings.Builder, c string) error {
	for i := 0; i < len(c); i++ {
		switch ch := c[i]; ch {
		case '*':
			re.WriteString("[^/]*")
		case '?':
			re.WriteString("[^/]")
		case '[':
			end := strings.IndexByte(c[i+1:], ']')
			if end < 0 {
				return fmt.Errorf("unclosed '['")
			}
			class := c[i+1 : i+1+end]
			if end == 0 || class == "!" {
				return fmt.Errorf("empty character class")
			}
			re.WriteString("[")
			if class[0] == '!' || class[0] == '^' {
				re.WriteString("^/")
				class = class[1:]
			}
			for _, r := range class {
				if r == '\\' || r == ']' || r == '[' || r == '^' {
					re.WriteByte('\\')
				}
				re.WriteRune(r)
			}
			re.WriteString("]")
			i += end + 1
		default:
			re.WriteString(regexp.QuoteMeta(string(ch)))
		}
	}
	return nil
}

// Match reports whether path matches the whole pattern.
func (g *Glob) Match(path string) bool { return g.re.MatchString(path) }

// Prefix is the directory below which every match lies ("" for the root).
func (g *Glob) Prefix() string { return g.literal }

// String returns the pattern.
func (g *Glob) String() string { return g.pattern }

// policy is a compiled Policy. An empty Read list allows every read; an
// empty Write list allows every write; Deny wins over both.
type policy struct {
	read, write, deny []*Glob
}

func compilePolicy(p Policy) (*policy, error) {
	var out policy
	for _, set := range []struct {
		src []string
		dst *[]*Glob
	}{{p.Read, &out.read}, {p.Write, &out.write}, {p.Deny, &out.deny}} {
		for _, pat := range set.src {
			g, err := CompileGlob(pat)
			if err != nil {
				return nil, fmt.Errorf("policy: %w", err)
			}
			*set.dst = append(*set.dst, g)
		}
	}
	return &out, nil
}

func matchAny(gs []*Glob, p string) bool {
	for _, g := range gs {
		if g.Match(p) {
			return true
		}
	}
	return false
}

// canRead reports whether the policy lets the session read path p.
func (p *policy) canRead(path string) bool {
	if matchAny(p.deny, path) {
		return false
	}
	return len(p.read) == 0 || matchAny(p.read, path) || matchAny(p.write, path)
}

// canWrite reports whether the policy lets the session write path p.
func (p *policy) canWrite(path string) bool {
	if matchAny(p.deny, path) {
		return false
	}
	return len(p.write) == 0 || matchAny(p.write, path)
}

func (p *policy) checkRead(path string) error {
	if !p.canRead(path) {
		return fmt.Errorf("read %q: %w", path, ErrForbidden)
	}
	return nil
}

func (p *policy) checkWrite(path string) error {
	if !p.canWrite(path) {
		return fmt.Errorf("write %q: %w", path, ErrForbidden)
	}
	return nil
}
