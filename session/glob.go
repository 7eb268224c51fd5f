package session

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
)

// Glob is a compiled path pattern, matched by doublestar against a whole
// repository-relative path:
//
//   - `*` matches any run of characters within one path component, `?`
//     one character;
//   - `**` as a whole component matches any number of components, none
//     included, so `dir/**` matches `dir` itself and everything below it,
//     and `**/x` matches `x` at any depth; a `**` that is not a whole
//     component acts as `*`;
//   - `[abc]`, `[a-z]`, `[!x]` and `[^x]` are character classes;
//   - `{a,b}` matches either alternative (`src/**/*.{go,md}`);
//   - `\` escapes the next character (`a\*b` matches the name `a*b` only).
//
// It is the one matcher of the engine: session policies, the glob filters
// of listings, search and replace, and so every client, use it.
type Glob struct {
	pattern string
	// match is pattern as doublestar runs it: negated classes exclude
	// '/', which doublestar's would match.
	match string
	// prefix is the directory below which every match lies: the leading
	// components before the first one with a wildcard, unescaped. A
	// listing only needs to look there.
	prefix string
}

// CompileGlob parses pattern.
func CompileGlob(pattern string) (*Glob, error) {
	switch {
	case pattern == "":
		return nil, fmt.Errorf("%w: empty glob", record.ErrInvalid)
	case strings.HasPrefix(pattern, "/"):
		return nil, fmt.Errorf("%w: glob %q: patterns are relative to the repository root, without a leading /", record.ErrInvalid, pattern)
	case !doublestar.ValidatePattern(pattern):
		return nil, fmt.Errorf("%w: glob %q: unclosed '[' or '{', an empty class, or a trailing '\\'", record.ErrInvalid, pattern)
	}
	match, err := classesWithinComponent(pattern)
	if err != nil {
		return nil, fmt.Errorf("%w: glob %q: %v", record.ErrInvalid, pattern, err)
	}
	base, _ := doublestar.SplitPattern(pattern)
	if base == "." {
		base = ""
	}
	return &Glob{pattern: pattern, match: match, prefix: base}, nil
}

// classesWithinComponent keeps character classes inside one component:
// a negated class gets '/' added to what it excludes, and a class that
// names '/' (alone or in a range) is refused.
func classesWithinComponent(pattern string) (string, error) {
	var out strings.Builder
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch c {
		case '\\':
			out.WriteByte(c)
			if i+1 < len(pattern) {
				i++
				out.WriteByte(pattern[i])
			}
			continue
		case '[':
		default:
			out.WriteByte(c)
			continue
		}
		j := i + 1
		neg := j < len(pattern) && (pattern[j] == '!' || pattern[j] == '^')
		if neg {
			j++
		}
		start := j
		for j < len(pattern) && pattern[j] != ']' {
			if pattern[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(pattern) {
			return "", fmt.Errorf("unclosed '['")
		}
		class := pattern[start:j]
		if !neg && classHasSlash(class) {
			return "", fmt.Errorf("a character class cannot match '/'")
		}
		out.WriteByte('[')
		if neg {
			out.WriteString("!/")
		}
		out.WriteString(class)
		out.WriteByte(']')
		i = j
	}
	return out.String(), nil
}

// classHasSlash reports whether a class body names '/', alone or in a
// range such as ".-0".
func classHasSlash(class string) bool {
	var prev byte
	for i := 0; i < len(class); i++ {
		c := class[i]
		if c == '\\' && i+1 < len(class) {
			i++
			c = class[i]
		} else if c == '-' && i > 0 && i+1 < len(class) {
			hi := class[i+1]
			if hi == '\\' && i+2 < len(class) {
				hi = class[i+2]
			}
			if prev <= '/' && '/' <= hi {
				return true
			}
		}
		if c == '/' {
			return true
		}
		prev = c
	}
	return false
}

// Match reports whether path matches the whole pattern.
func (g *Glob) Match(path string) bool { return doublestar.MatchUnvalidated(g.match, path) }

// Prefix is the directory below which every match lies ("" for the root).
func (g *Glob) Prefix() string { return g.prefix }

// String returns the pattern.
func (g *Glob) String() string { return g.pattern }

// policy is a compiled Policy, the one place that decides whether a
// session may read or write a path. Deny wins over everything; an empty
// Read list allows every read, and the Write globs are readable too; a
// path is writable when it is readable and the Write list is empty or
// matches it. With a parent (a fork's inherited policy) a path must pass
// both.
type policy struct {
	read, write, deny []*Glob
	parent            *policy
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
	if p.Parent != nil {
		parent, err := compilePolicy(*p.Parent)
		if err != nil {
			return nil, err
		}
		out.parent = parent
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
	if len(p.read) > 0 && !matchAny(p.read, path) && !matchAny(p.write, path) {
		return false
	}
	return p.parent == nil || p.parent.canRead(path)
}

// canWrite reports whether the policy lets the session write path p.
func (p *policy) canWrite(path string) bool {
	if matchAny(p.deny, path) {
		return false
	}
	if len(p.read) > 0 && !matchAny(p.read, path) && !matchAny(p.write, path) {
		return false
	}
	if len(p.write) > 0 && !matchAny(p.write, path) {
		return false
	}
	return p.parent == nil || p.parent.canWrite(path)
}

// visible is m as the session may see it: the paths it may not read (a
// rebase brings upstream's changes to them too) left out of Paths, Old
// and New alike. The log keeps them all; the engine needs them to bring
// view directories up to date.
func (p *policy) visible(m MutationRecord) MutationRecord {
	var paths []string
	var old, new []gitstore.OID
	for i, path := range m.Paths {
		if !p.canRead(path) {
			continue
		}
		paths = append(paths, path)
		if i < len(m.Old) {
			old = append(old, m.Old[i])
		}
		if i < len(m.New) {
			new = append(new, m.New[i])
		}
	}
	if len(paths) == len(m.Paths) {
		return m
	}
	m.Paths, m.Old, m.New = paths, old, new
	if m.Paths == nil {
		m.Paths = []string{}
	}
	return m
}

func (p *policy) checkRead(path string) error {
	if !p.canRead(path) {
		return fmt.Errorf("read %q: %w", path, record.ErrForbidden)
	}
	return nil
}

func (p *policy) checkWrite(path string) error {
	if !p.canWrite(path) {
		return fmt.Errorf("write %q: %w", path, record.ErrForbidden)
	}
	return nil
}

// checkTreeWrites applies the write policy to every file that differs
// between trees from and to: what an operation that turns one into the
// other (merge, rebase, rollback, accept) writes. keep, when set, limits
// the check to the paths it reports true for.
func (p *policy) checkTreeWrites(ctx context.Context, r *gitstore.Repo, from, to gitstore.OID, keep func(string) bool) error {
	if from == to {
		return nil
	}
	return merge.WalkChanges(ctx, r, from, to, func(c merge.FileChange) error {
		if keep != nil && !keep(c.Path()) {
			return nil
		}
		return p.checkWrite(c.Path())
	})
}

// narrow is the policy of a fork of a session with policy parent that
// asks for req: never wider than parent. Deny lists simply add up; read
// and write lists cannot be intersected as globs, so a fork that names
// its own keeps its parent's policy as Parent, and a path must pass both.
func narrow(parent Policy, req *Policy) Policy {
	if req == nil || req.empty() {
		return parent
	}
	if parent.empty() {
		return *req
	}
	if len(req.Read) == 0 && len(req.Write) == 0 && req.Parent == nil {
		out := parent
		out.Deny = append(append([]string(nil), parent.Deny...), req.Deny...)
		return out
	}
	out := *req
	p := parent
	if out.Parent != nil {
		// The request's own parent chain is narrowed by ours as well.
		nested := narrow(parent, out.Parent)
		p = nested
	}
	out.Parent = &p
	return out
}

// limitsReads reports whether the policy keeps the session from reading
// some paths (a read list other than "**", or any deny): a command's view
// directory then leaves those paths out.
func (p *policy) limitsReads() bool {
	for q := p; q != nil; q = q.parent {
		if len(q.deny) > 0 || (len(q.read) > 0 && !slices.ContainsFunc(q.read, func(g *Glob) bool { return g.pattern == "**" })) {
			return true
		}
	}
	return false
}
