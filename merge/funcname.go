package merge

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/sessiond/sessiond/gitstore"
)

// Function context: the text git prints after a hunk's "@@ … @@", the
// nearest line above the hunk that the file's funcname rule matches
// (xdiff's XDL_EMIT_FUNCNAMES). The rule is git's default (a line that
// starts with a letter, '_' or '$') unless the file's diff attribute
// names a driver with a pattern: git's built-in ones (userdiff.c, below),
// or one the repository's config defines or overrides
// (diff.<driver>.xfuncname, an extended regular expression, or
// diff.<driver>.funcname, a basic one).
//
// git's patterns are POSIX regular expressions matched leftmost-longest;
// they are translated to RE2 (posixToRE2) and matched leftmost-longest
// too. What RE2 cannot express, back-references and GNU's \< and \>, makes
// a pattern unusable: a file whose driver's pattern does not translate
// (or that git would refuse, a last line that is negated) gets the
// default rule, where git would stop with an error. Character classes
// are ASCII, as git's in the C locale.

// funcLineMax is the most git keeps of a function line (xemit.c's
// struct func_line).
const funcLineMax = 80

// funcRule is one line of a driver's pattern: a line the pattern matches
// is a function line, unless the rule is negated, which makes it none.
type funcRule struct {
	re     *regexp.Regexp
	negate bool
}

// funcFinder finds a function line; nil is git's default rule.
type funcFinder struct {
	rules []funcRule
}

// match returns the function text of line (with its newline) and
// whether it is a function line, as xdiff's def_ff and git's ff_regexp
// decide.
func (f *funcFinder) match(line []byte) ([]byte, bool) {
	if f == nil {
		if len(line) == 0 || !(isAlpha(line[0]) || line[0] == '_' || line[0] == '$') {
			return nil, false
		}
		return trimFuncText(line[:min(len(line), funcLineMax)]), true
	}
	line = trimNewline(line)
	for _, r := range f.rules {
		m := r.re.FindSubmatchIndex(line)
		if m == nil {
			continue
		}
		if r.negate {
			return nil, false
		}
		s, e := m[0], m[1]
		if len(m) >= 4 && m[2] >= 0 {
			s, e = m[2], m[3]
		}
		return trimFuncText(line[s:min(e, s+funcLineMax)]), true
	}
	return nil, false
}

func trimNewline(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	return line
}

// trimFuncText drops trailing white space, as C's isspace sees it.
func trimFuncText(b []byte) []byte {
	for len(b) > 0 {
		switch b[len(b)-1] {
		case ' ', '\t', '\n', '\v', '\f', '\r':
			b = b[:len(b)-1]
			continue
		}
		break
	}
	return b
}

func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// funcContext gives each hunk of one file its function text (at): the
// nearest function line of the old side above the hunk's first line,
// searched no further up than the previous hunk's start; when there is
// none in that stretch, the previous hunk's text carries over, as in
// xdiff's emitter.
type funcContext struct {
	f     *funcFinder
	a     [][]byte
	limit int // the previous search's start
	text  string
}

// at returns the text of the hunk whose old side starts at line start
// (0-based, context included).
func (fc *funcContext) at(start int) string {
	for l := start - 1; l > fc.limit && l >= 0; l-- {
		if l >= len(fc.a) {
			continue
		}
		if t, ok := fc.f.match(fc.a[l]); ok {
			fc.text = string(t)
			break
		}
	}
	fc.limit = start - 1
	return fc.text
}

// builtinDriver is a built-in diff driver's funcname pattern as git's
// userdiff.c writes it (an extended regular expression, one rule a line,
// '!' negating), and whether it ignores case (userdiff.c's IPATTERN).
type builtinDriver struct {
	pattern string
	icase   bool
}

// builtinDrivers are git's built-in diff drivers with a funcname pattern
// (userdiff.c; the C# and Java rules are git's newer ones, not those of
// git 2.39). The strings are the C literals, so they read as there.
var builtinDrivers = map[string]builtinDriver{
	"ada": {icase: true, pattern: "!^(.*[ \t])?(is[ \t]+new|renames|is[ \t]+separate)([ \t].*)?$\n" +
		"!^[ \t]*with[ \t].*$\n" +
		"^[ \t]*((procedure|function)[ \t]+.*)$\n" +
		"^[ \t]*((package|protected|task)[ \t]+.*)$"},
	"bash": {pattern: "^[ \t]*" +
		"(" +
		"(" +
		"[a-zA-Z_][a-zA-Z0-9_]*[ \t]*\\([ \t]*\\))" +
		"|" +
		"(function[ \t]+[a-zA-Z_][a-zA-Z0-9_]*(([ \t]*\\([ \t]*\\))|([ \t]+))" +
		")" +
		"[ \t]*" +
		"(\\{|\\(\\(?|\\[\\[)" +
		")"},
	"bibtex": {pattern: "(@[a-zA-Z]{1,}[ \t]*\\{{0,1}[ \t]*[^ \t\"@',\\#}{~%]*).*$"},
	"cpp": {pattern: "!^[ \t]*[A-Za-z_][A-Za-z_0-9]*:[[:space:]]*($|/[/*])\n" +
		"^((::[[:space:]]*)?[A-Za-z_].*)$"},
	"csharp": {pattern: "!(^|[ \t]+)" +
		"(do|while|for|foreach|if|else|new|default|return|switch|case|throw" +
		"|catch|using|lock|fixed)" +
		"([ \t(]+|$)\n" +
		"^[ \t]*" +
		"(" +
		"(" +
		"[][[:alnum:]@_.]" +
		"(<[][[:alnum:]@_, \t<>]+>)?" +
		")+" +
		"([ \t]+" +
		"([][[:alnum:]@_.](<[][[:alnum:]@_, \t<>]+>)?)+" +
		")+" +
		"[ \t]*" +
		"\\(" +
		"[^;]*" +
		")$\n" +
		"^[ \t]*(" +
		"([][[:alnum:]@_.](<[][[:alnum:]@_, \t<>]+>)?)+" +
		"([ \t]+" +
		"([][[:alnum:]@_.](<[][[:alnum:]@_, \t<>]+>)?)+" +
		")+" +
		"[^;=:,()]*" +
		")$\n" +
		"^[ \t]*(((static|public|internal|private|protected|new|unsafe|sealed|abstract|partial)[ \t]+)*(class|enum|interface|struct|record)[ \t]+.*)$\n" +
		"^[ \t]*(namespace[ \t]+.*)$"},
	"css": {icase: true, pattern: "![:;][[:space:]]*$\n" +
		"^[:[@.#]?[_a-z0-9].*$"},
	"dts": {pattern: "!;\n" +
		"!=\n" +
		"^[ \t]*((/[ \t]*\\{|&?[a-zA-Z_]).*)"},
	"elixir": {pattern: "^[ \t]*((def(macro|module|impl|protocol|p)?|test)[ \t].*)$"},
	"fortran": {icase: true, pattern: "!^([C*]|[ \t]*!)\n" +
		"!^[ \t]*MODULE[ \t]+PROCEDURE[ \t]\n" +
		"^[ \t]*((END[ \t]+)?(PROGRAM|MODULE|BLOCK[ \t]+DATA" +
		"|([^!'\" \t]+[ \t]+)*(SUBROUTINE|FUNCTION))[ \t]+[A-Z].*)$"},
	"fountain": {icase: true, pattern: "^((\\.[^.]|(int|ext|est|int\\.?/ext|i/e)[. ]).*)$"},
	"golang": {pattern: "^[ \t]*(func[ \t]*.*(\\{[ \t]*)?)\n" +
		"^[ \t]*(type[ \t].*(struct|interface)[ \t]*(\\{[ \t]*)?)"},
	"html": {pattern: "^[ \t]*(<[Hh][1-6]([ \t].*)?>.*)$"},
	"java": {pattern: "!^[ \t]*(catch|do|for|if|instanceof|new|return|switch|throw|while)\n" +
		"^[ \t]*(([a-z-]+[ \t]+)*(class|enum|interface|record)[ \t]+.*)$\n" +
		"^[ \t]*(([A-Za-z_<>&][][?&<>.,A-Za-z_0-9]*[ \t]+)+[A-Za-z_][A-Za-z_0-9]*[ \t]*\\([^;]*)$"},
	"kotlin":   {pattern: "^[ \t]*(([a-z]+[ \t]+)*(fun|class|interface)[ \t]+.*)$"},
	"markdown": {pattern: "^ {0,3}#{1,6}[ \t].*"},
	"matlab":   {pattern: "^[[:space:]]*((classdef|function)[[:space:]].*)$|^(%%%?|##)[[:space:]].*$"},
	"objc": {pattern: "!^[ \t]*(do|for|if|else|return|switch|while)\n" +
		"^[ \t]*([-+][ \t]*\\([ \t]*[A-Za-z_][A-Za-z_0-9* \t]*\\)[ \t]*[A-Za-z_].*)$\n" +
		"^[ \t]*(([A-Za-z_][A-Za-z_0-9]*[ \t]+)+[A-Za-z_][A-Za-z_0-9]*[ \t]*\\([^;]*)$\n" +
		"^(@(implementation|interface|protocol)[ \t].*)$"},
	"pascal": {pattern: "^(((class[ \t]+)?(procedure|function)|constructor|destructor|interface" +
		"|implementation|initialization|finalization)[ \t]*.*)$\n" +
		"^(.*=[ \t]*(class|record).*)$"},
	"perl": {pattern: "^package .*\n" +
		"^sub [[:alnum:]_':]+[ \t]*" +
		"(\\([^)]*\\)[ \t]*)?" +
		"(:[^;#]*)?" +
		"(\\{[ \t]*)?" +
		"(#.*)?$\n" +
		"^(BEGIN|END|INIT|CHECK|UNITCHECK|AUTOLOAD|DESTROY)[ \t]*" +
		"(\\{[ \t]*)?" +
		"(#.*)?$\n" +
		"^=head[0-9] .*"},
	"php": {pattern: "^[\t ]*(((public|protected|private|static|abstract|final)[\t ]+)*function.*)$\n" +
		"^[\t ]*((((final|abstract)[\t ]+)?class|enum|interface|trait).*)$"},
	"python": {pattern: "^[ \t]*((class|(async[ \t]+)?def)[ \t].*)$"},
	"ruby":   {pattern: "^[ \t]*((class|module|def)[ \t].*)$"},
	"rust":   {pattern: "^[\t ]*((pub(\\([^\\)]+\\))?[\t ]+)?((async|const|unsafe|extern([\t ]+\"[^\"]+\"))[\t ]+)?(struct|enum|union|mod|trait|fn|impl|macro_rules!)[< \t]+[^;]*)$"},
	"scheme": {pattern: "^[\t ]*(\\(((define|def(struct|syntax|class|method|rules|record|proto|alias)?)[-*/ \t]|(library|module|struct|class)[*+ \t]).*)$"},
	"tex":    {pattern: "^(\\\\((sub)*section|chapter|part)\\*{0,1}\\{.*)$"},
}

// compiled finders, by pattern and flags: the built-in ones and those of
// repositories' configs, each compiled once. A nil entry is a pattern
// that does not translate (the default rule applies).
var finders = struct {
	sync.Mutex
	m map[finderKey]*funcFinder
}{m: map[finderKey]*funcFinder{}}

type finderKey struct {
	pattern         string
	extended, icase bool
}

// finderFor returns the compiled finder of a pattern, nil when it does
// not translate.
func finderFor(pattern string, extended, icase bool) *funcFinder {
	k := finderKey{pattern, extended, icase}
	finders.Lock()
	defer finders.Unlock()
	if f, ok := finders.m[k]; ok {
		return f
	}
	f, err := compileFuncname(pattern, extended, icase)
	if err != nil {
		f = nil
	}
	if len(finders.m) >= 1024 { // config patterns are few; never grow without bound
		clear(finders.m)
	}
	finders.m[k] = f
	return f
}

// compileFuncname compiles a driver's pattern: one rule a line, a
// leading '!' negating it, the last line not negated (git refuses that).
func compileFuncname(pattern string, extended, icase bool) (*funcFinder, error) {
	lines := strings.Split(pattern, "\n")
	f := &funcFinder{}
	for i, l := range lines {
		neg := strings.HasPrefix(l, "!")
		if neg {
			if i == len(lines)-1 {
				return nil, fmt.Errorf("funcname %q: the last expression is negated", pattern)
			}
			l = l[1:]
		}
		src, err := posixToRE2(l, extended)
		if err != nil {
			return nil, fmt.Errorf("funcname %q: %w", l, err)
		}
		if icase {
			src = "(?i)" + src
		}
		re, err := regexp.Compile(src)
		if err != nil {
			return nil, fmt.Errorf("funcname %q: %w", l, err)
		}
		re.Longest()
		f.rules = append(f.rules, funcRule{re: re, negate: neg})
	}
	return f, nil
}

// drivers resolves the funcname rule of each file of one patch: the diff
// attribute from the .gitattributes of one tree, the driver's pattern
// from the repository's config or git's built-in ones.
type drivers struct {
	repo  *gitstore.Repo
	attrs *gitstore.Attributes
	cfg   *gitstore.Config
	read  bool // cfg was read
}

// finder returns the rule of the file at path: nil (git's default) when
// its diff attribute names no driver with a pattern.
func (d *drivers) finder(ctx context.Context, path string) (*funcFinder, error) {
	if d == nil || d.attrs == nil || path == "" {
		return nil, nil
	}
	name, err := d.attrs.Value(ctx, path, "diff")
	if err != nil {
		return nil, err
	}
	if name.State != gitstore.AttrValue {
		return nil, nil
	}
	if !d.read {
		d.read = true
		if d.cfg, err = gitstore.ReadConfig(d.repo.GitDir()); err != nil {
			d.cfg = nil // an unreadable config defines no driver
		}
	}
	if key, v, ok := d.cfg.Last("diff", name.Value, "xfuncname", "funcname"); ok {
		return finderFor(v, key == "xfuncname", false), nil
	}
	if b, ok := builtinDrivers[name.Value]; ok {
		return finderFor(b.pattern, true, b.icase), nil
	}
	return nil, nil
}

// posixToRE2 translates a POSIX regular expression, extended (ERE) or
// basic (BRE) with GNU's extensions as git's regcomp reads it, to RE2
// syntax with the same meaning. It refuses what RE2 cannot express:
// back-references and GNU's word-start and word-end anchors \< and \>.
func posixToRE2(p string, extended bool) (string, error) {
	var b strings.Builder
	b.WriteString("(?s)") // '.' matches any character, as in POSIX
	depth := 0
	// atStart: no expression yet in this group or branch (where BRE
	// reads '*' and '^' literally).
	atStart := true
	for i := 0; i < len(p); i++ {
		c := p[i]
		start := atStart
		atStart = false
		switch c {
		case '\\':
			i++
			if i >= len(p) {
				return "", fmt.Errorf("trailing backslash")
			}
			e := p[i]
			if !extended {
				switch e {
				case '(':
					depth++
					b.WriteByte('(')
					atStart = true
					continue
				case ')':
					if depth == 0 {
						return "", fmt.Errorf("unmatched \\)")
					}
					depth--
					b.WriteByte(')')
					continue
				case '{':
					end := strings.Index(p[i:], "\\}")
					if end < 0 {
						return "", fmt.Errorf("unmatched \\{")
					}
					b.WriteString("{" + p[i+1:i+end] + "}")
					i += end + 1
					continue
				case '|':
					b.WriteByte('|')
					atStart = true
					continue
				case '+', '?':
					b.WriteByte(e)
					continue
				}
			}
			switch {
			case e >= '1' && e <= '9':
				return "", fmt.Errorf("back-reference \\%c: RE2 has none", e)
			case e == '<' || e == '>':
				return "", fmt.Errorf("\\%c: RE2 has no word-start or word-end anchor", e)
			case e == 'w' || e == 'W' || e == 's' || e == 'S' || e == 'b' || e == 'B':
				b.WriteByte('\\')
				b.WriteByte(e)
			case e == '`':
				b.WriteString(`\A`)
			case e == '\'':
				b.WriteString(`\z`)
			default:
				// Any other escaped character is itself.
				literal(&b, e)
			}
		case '[':
			n, class, err := bracket(p[i:])
			if err != nil {
				return "", err
			}
			b.WriteString(class)
			i += n - 1
		case '(', ')', '|', '+', '?', '{':
			if !extended {
				literal(&b, c)
				continue
			}
			switch c {
			case '{':
				// An interval {m}, {m,} or {m,n}; any other '{' is itself.
				if iv := interval.FindString(p[i:]); iv != "" {
					b.WriteString(iv)
					i += len(iv) - 1
				} else {
					b.WriteString(`\{`)
				}
				continue
			case '(':
				depth++
				atStart = true
			case ')':
				if depth == 0 {
					b.WriteString(`\)`) // an unmatched ')' is itself
					continue
				}
				depth--
			case '|':
				atStart = true
			}
			b.WriteByte(c)
		case '*':
			if !extended && start {
				b.WriteString(`\*`)
				continue
			}
			b.WriteByte(c)
		case '^':
			if !extended && !start {
				b.WriteString(`\^`)
				continue
			}
			b.WriteByte(c)
			atStart = start
		case '$':
			// In a BRE '$' anchors only at the end of the expression
			// or of a group or branch.
			if !extended && i+1 < len(p) && !strings.HasPrefix(p[i+1:], `\)`) && !strings.HasPrefix(p[i+1:], `\|`) {
				b.WriteString(`\$`)
				continue
			}
			b.WriteByte(c)
		case '.':
			b.WriteByte('.')
		case ']', '}':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			literal(&b, c)
		}
	}
	if depth != 0 {
		return "", fmt.Errorf("unmatched (")
	}
	return b.String(), nil
}

// interval is a POSIX interval at the start of a string.
var interval = regexp.MustCompile(`^\{[0-9]+(,[0-9]*)?\}`)

// literal writes byte c so that RE2 reads it as itself; bytes of a
// UTF-8 sequence are written as they are, to read as the character.
func literal(b *strings.Builder, c byte) {
	if c < 0x80 && strings.IndexByte(`\.+*?()|[]{}^$`, c) >= 0 {
		b.WriteByte('\\')
	}
	b.WriteByte(c)
}

// re2Classes are the POSIX class names RE2 knows, which are POSIX's.
var re2Classes = map[string]bool{"alnum": true, "alpha": true, "blank": true, "cntrl": true, "digit": true,
	"graph": true, "lower": true, "print": true, "punct": true, "space": true, "upper": true, "xdigit": true}

// bracket translates the POSIX bracket expression at the start of p
// ("[…]"): a ']' first is a member, '\' is itself, "[:name:]" a class,
// "[=c=]" and "[.c.]" the character c. It returns the bytes consumed and
// the RE2 class, every member escaped.
func bracket(p string) (int, string, error) {
	var b strings.Builder
	b.WriteByte('[')
	i := 1
	if i < len(p) && p[i] == '^' {
		b.WriteByte('^')
		i++
	}
	esc := func(c byte) {
		switch c {
		case '\\', ']', '[', '^', '-':
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	// member reads one member at p[i:]: a character, or a class (then
	// it is not a range end).
	first := true
	for {
		if i >= len(p) {
			return 0, "", fmt.Errorf("unmatched [")
		}
		c := p[i]
		if c == ']' && !first {
			b.WriteByte(']')
			return i + 1, b.String(), nil
		}
		first = false
		if c == '[' && i+1 < len(p) && (p[i+1] == ':' || p[i+1] == '=' || p[i+1] == '.') {
			kind := p[i+1]
			end := strings.Index(p[i+2:], string(kind)+"]")
			if end < 0 {
				return 0, "", fmt.Errorf("unterminated [%c", kind)
			}
			name := p[i+2 : i+2+end]
			i += 2 + end + 2
			switch kind {
			case ':':
				if !re2Classes[name] {
					return 0, "", fmt.Errorf("unknown character class [:%s:]", name)
				}
				b.WriteString("[:" + name + ":]")
				continue
			default:
				if len(name) != 1 {
					return 0, "", fmt.Errorf("collating element [%c%s%c]: RE2 has none", kind, name, kind)
				}
				c = name[0]
				i-- // c is consumed like a plain character below
			}
		}
		i++
		// A range: c-d, where '-' is not last.
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			d := p[i+1]
			i += 2
			if d == '[' && i < len(p) && (p[i] == '.' || p[i] == '=') {
				return 0, "", fmt.Errorf("collating element as a range end: not supported")
			}
			if d < c {
				return 0, "", fmt.Errorf("invalid range %c-%c", c, d)
			}
			esc(c)
			b.WriteByte('-')
			esc(d)
			continue
		}
		esc(c)
	}
}
