package gitstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// AttrState is the state of one attribute for a path, as git check-attr
// tells it: unspecified, set ("name"), unset ("-name") or set to a value
// ("name=value").
type AttrState uint8

const (
	AttrUnspecified AttrState = iota
	AttrSet
	AttrUnset
	AttrValue
)

// Attr is an attribute's state for a path; Value is its value when State
// is AttrValue.
type Attr struct {
	State AttrState
	Value string
}

// Attributes answers which attributes paths of one tree have, as git
// check-attr does with that tree's .gitattributes files (a bare
// repository's git reads them from the tree given with --source): the
// file of each directory from the path's own up to the root, deeper files
// first, and the repository's info/attributes above them all; in a file
// the last matching line wins. Patterns are git's (wildmatch; a pattern
// without a slash matches the name at any depth, one with a slash the path
// below the file's directory; a pattern ending in '/' matches
// directories only, so never a file); macros ([attr]name …) come from the
// root file and info/attributes, plus git's built-in "binary" (-diff
// -merge -text). Lines git ignores are ignored: negative patterns,
// invalid attribute names, lines of 2048 bytes or more, macros in a
// subdirectory's file, and a .gitattributes that is a symlink or over
// 100 MB. The system and global attribute files (core.attributesFile)
// are not read: they belong to a user, not the repository.
//
// An Attributes reads each directory's file once; it is not safe for
// concurrent use.
type Attributes struct {
	r     *Repo
	tree  OID
	info  *attrFile
	files map[string]*attrFile // by directory ("" for the root); nil: none
	trees map[string]OID       // directories' trees, as dirTree finds them
	// macros are the definitions in force, the one of highest
	// precedence per name (info/attributes, then the root file, then
	// git's built-in ones).
	macros map[string][]attrAssign
}

// attrFile is a parsed attributes file of one directory.
type attrFile struct {
	dir   string
	rules []attrRule
}

// attrRule is one line: a pattern (or a macro name) and what it assigns,
// in the order written.
type attrRule struct {
	macro     string // a macro definition ([attr]name); pattern unused
	pattern   string // without its leading '/' and trailing '/'
	nodir     bool   // no slash: matches the name at any depth below dir
	mustBeDir bool
	assigns   []attrAssign
}

type attrAssign struct {
	name string
	attr Attr
}

// The limits past which git ignores an attributes line or file (attr.h).
const (
	attrMaxLine = 2048
	attrMaxFile = 100 << 20
)

// NewAttributes returns the attributes of the paths of tree (a tree or
// commit id; zero: no .gitattributes at all, only info/attributes) in r.
func NewAttributes(ctx context.Context, r *Repo, tree OID) (*Attributes, error) {
	tree, err := r.TreeOf(ctx, tree)
	if err != nil {
		return nil, err
	}
	a := &Attributes{r: r, tree: tree, files: map[string]*attrFile{}, trees: map[string]OID{}, macros: map[string][]attrAssign{}}
	if data, err := os.ReadFile(filepath.Join(r.gitDir, "info", "attributes")); err == nil && len(data) <= attrMaxFile {
		a.info = parseAttrFile("", data, true)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	root, err := a.file(ctx, "")
	if err != nil {
		return nil, err
	}
	// Highest precedence first: a name defined already keeps its
	// definition; within a file the last definition wins.
	for _, f := range []*attrFile{a.info, root, builtinAttrs} {
		if f == nil {
			continue
		}
		for i := len(f.rules) - 1; i >= 0; i-- {
			if m := f.rules[i].macro; m != "" {
				if _, ok := a.macros[m]; !ok {
					a.macros[m] = f.rules[i].assigns
				}
			}
		}
	}
	return a, nil
}

// builtinAttrs holds git's built-in macro.
var builtinAttrs = parseAttrFile("", []byte("[attr]binary -diff -merge -text\n"), true)

// file returns the parsed .gitattributes of directory dir, or nil.
func (a *Attributes) file(ctx context.Context, dir string) (*attrFile, error) {
	if f, ok := a.files[dir]; ok {
		return f, nil
	}
	var f *attrFile
	tree, err := a.dirTree(ctx, dir)
	if err != nil {
		return nil, err
	}
	if !tree.IsZero() {
		t, err := a.r.Tree(ctx, tree)
		if err != nil {
			return nil, err
		}
		// A symlink or a directory by that name is not read, as git.
		if e, ok := t.Find(".gitattributes"); ok && (e.Mode == ModeFile || e.Mode == ModeExec) {
			size, err := a.r.BlobSize(ctx, e.OID)
			if err != nil {
				return nil, err
			}
			if size <= attrMaxFile {
				data, err := a.r.ReadBlob(ctx, e.OID)
				if err != nil {
					return nil, err
				}
				f = parseAttrFile(dir, data, dir == "")
			}
		}
	}
	a.files[dir] = f
	return f, nil
}

// dirTree is the tree of directory dir ("" the root), found from its
// parent's, so each directory costs one lookup; zero when there is none.
func (a *Attributes) dirTree(ctx context.Context, dir string) (OID, error) {
	if dir == "" {
		return a.tree, nil
	}
	if id, ok := a.trees[dir]; ok {
		return id, nil
	}
	parent, name := "", dir
	if i := strings.LastIndexByte(dir, '/'); i >= 0 {
		parent, name = dir[:i], dir[i+1:]
	}
	pt, err := a.dirTree(ctx, parent)
	if err != nil || pt.IsZero() {
		return OID{}, err
	}
	t, err := a.r.Tree(ctx, pt)
	if err != nil {
		return OID{}, err
	}
	var id OID
	if e, ok := t.Find(name); ok && e.Mode.IsDir() {
		id = e.OID
	}
	a.trees[dir] = id
	return id, nil
}

// Get returns the states of the attributes names for path (a file's
// repository-relative path); a name no line mentions is unspecified.
func (a *Attributes) Get(ctx context.Context, path string, names ...string) (map[string]Attr, error) {
	vals := make([]Attr, len(names))
	if err := a.lookup(ctx, path, names, vals); err != nil {
		return nil, err
	}
	out := make(map[string]Attr, len(names))
	for i, n := range names {
		out[n] = vals[i]
	}
	return out, nil
}

// Value returns the state of one attribute for path.
func (a *Attributes) Value(ctx context.Context, path, name string) (Attr, error) {
	var v [1]Attr
	err := a.lookup(ctx, path, []string{name}, v[:])
	return v[0], err
}

// lookup sets vals[i] to the state of names[i] for path: the files that
// apply, most specific first, each from its last line up; the first
// line that assigns a name decides it, and a macro set there assigns
// its own attributes, as git's fill and macroexpand do.
func (a *Attributes) lookup(ctx context.Context, path string, names []string, vals []Attr) error {
	base := path[strings.LastIndexByte(path, '/')+1:]
	var done []string // every name assigned so far, wanted or not
	remaining := len(names)
	var fill func(assigns []attrAssign)
	fill = func(assigns []attrAssign) {
		for i := len(assigns) - 1; i >= 0 && remaining > 0; i-- {
			as := assigns[i]
			if slices.Contains(done, as.name) {
				continue
			}
			done = append(done, as.name)
			if k := slices.Index(names, as.name); k >= 0 {
				vals[k] = as.attr
				remaining--
			}
			if m, ok := a.macros[as.name]; ok && as.attr.State == AttrSet {
				fill(m)
			}
		}
	}
	apply := func(f *attrFile) {
		if f == nil {
			return
		}
		for i := len(f.rules) - 1; i >= 0 && remaining > 0; i-- {
			if ru := &f.rules[i]; ru.macro == "" && ru.matches(f.dir, path, base) {
				fill(ru.assigns)
			}
		}
	}
	apply(a.info)
	// The directories of path, deepest first, down to the root.
	for end := len(path); remaining > 0; {
		end = strings.LastIndexByte(path[:end], '/')
		dir := ""
		if end > 0 {
			dir = path[:end]
		}
		f, err := a.file(ctx, dir)
		if err != nil {
			return err
		}
		apply(f)
		if end <= 0 {
			break
		}
	}
	return nil
}

// matches reports whether the rule of the file in dir matches the file
// at path (whose name is base), as git's path_matches does for a file.
func (ru *attrRule) matches(dir, path, base string) bool {
	if ru.mustBeDir {
		return false
	}
	if ru.nodir {
		return wildmatch(ru.pattern, base, false)
	}
	name := path
	if dir != "" {
		if len(path) <= len(dir) || path[len(dir)] != '/' || path[:len(dir)] != dir {
			return false
		}
		name = path[len(dir)+1:]
	}
	return wildmatch(ru.pattern, name, true)
}

const attrBlank = " \t\r\n"

// parseAttrFile parses an attributes file of directory dir; macros says
// whether it may define macros (the root file and info/attributes).
func parseAttrFile(dir string, data []byte, macros bool) *attrFile {
	f := &attrFile{dir: dir}
	for _, raw := range bytes.Split(data, []byte("\n")) {
		if ru, ok := parseAttrLine(string(raw), macros); ok {
			f.rules = append(f.rules, ru)
		}
	}
	return f
}

// parseAttrLine parses one line as git's parse_attr_line does; ok is
// false for a blank line, a comment, or a line git ignores.
func parseAttrLine(line string, macros bool) (attrRule, bool) {
	if len(line) >= attrMaxLine {
		return attrRule{}, false
	}
	cp := strings.TrimLeft(line, attrBlank)
	if cp == "" || cp[0] == '#' {
		return attrRule{}, false
	}
	var name, states string
	quoted := false
	if cp[0] == '"' {
		name, states, quoted = unquoteC(cp)
	}
	if !quoted {
		end := strings.IndexAny(cp, attrBlank)
		if end < 0 {
			end = len(cp)
		}
		name, states = cp[:end], cp[end:]
	}
	var ru attrRule
	if m, ok := strings.CutPrefix(name, "[attr]"); ok && m != "" {
		if !macros {
			return attrRule{}, false
		}
		// git takes the macro's name after any blanks, up to the next.
		m = strings.TrimLeft(m, attrBlank)
		if end := strings.IndexAny(m, attrBlank); end >= 0 {
			m = m[:end]
		}
		if !validAttrName(m) {
			return attrRule{}, false
		}
		ru.macro = m
	} else {
		p := name
		if strings.HasPrefix(p, "!") {
			return attrRule{}, false // negative patterns are ignored
		}
		if strings.HasSuffix(p, "/") {
			p, ru.mustBeDir = p[:len(p)-1], true
		}
		ru.nodir = !strings.Contains(p, "/")
		ru.pattern = strings.TrimPrefix(p, "/")
	}
	for rest := strings.TrimLeft(states, attrBlank); rest != ""; {
		end := strings.IndexAny(rest, attrBlank)
		if end < 0 {
			end = len(rest)
		}
		tok := rest[:end]
		rest = strings.TrimLeft(rest[end:], attrBlank)
		var as attrAssign
		switch {
		case tok[0] == '-':
			as = attrAssign{name: tok[1:], attr: Attr{State: AttrUnset}}
		case tok[0] == '!':
			as = attrAssign{name: tok[1:], attr: Attr{State: AttrUnspecified}}
		default:
			if n, v, ok := strings.Cut(tok, "="); ok {
				as = attrAssign{name: n, attr: Attr{State: AttrValue, Value: v}}
			} else {
				as = attrAssign{name: tok, attr: Attr{State: AttrSet}}
			}
		}
		if tok[0] == '-' || tok[0] == '!' {
			// git measures the name up to an '=' here too.
			as.name, _, _ = strings.Cut(as.name, "=")
		}
		if !validAttrName(as.name) || strings.HasPrefix(as.name, "builtin_") {
			return attrRule{}, false
		}
		ru.assigns = append(ru.assigns, as)
	}
	return ru, true
}

// validAttrName is git's attr_name_valid: letters, digits, '-', '.' and
// '_', not starting with '-'.
func validAttrName(n string) bool {
	if n == "" || n[0] == '-' {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c == '-' || c == '.' || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			return false
		}
	}
	return true
}

// unquoteC undoes git's C-style quoting of s, which starts with '"': the
// text up to the closing quote and what follows it; ok is false when s
// is not a well-formed quoted string.
func unquoteC(s string) (text, rest string, ok bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return b.String(), s[i+1:], true
		case '\\':
			i++
			if i >= len(s) {
				return "", "", false
			}
			switch e := s[i]; e {
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte('\v')
			case '\\', '"':
				b.WriteByte(e)
			default:
				if e < '0' || e > '3' || i+2 >= len(s) {
					return "", "", false
				}
				v := int(e - '0')
				for k := 1; k <= 2; k++ {
					d := s[i+k]
					if d < '0' || d > '7' {
						return "", "", false
					}
					v = v*8 + int(d-'0')
				}
				b.WriteByte(byte(v))
				i += 2
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false
}
