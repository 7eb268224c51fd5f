package overlay

import "errors"

// errConfigSyntax: the blob is not valid git config syntax.
var errConfigSyntax = errors.New("bad config syntax")

// parseConfig parses data as git's config parser does (config.c,
// git_parse_source, in git 2.39) and calls fn for every entry in order
// with its full name (section lowercased, subsection as written, key
// lowercased; "section.subsection.key") and its value, nil for a key with
// no "=". Parsing stops when fn returns false. On a syntax error it
// returns errConfigSyntax and the line it was found on; fn has then seen
// the entries before it, as git's callback has.
//
// Includes are not followed: git does not follow them in a blob either.
func parseConfig(data []byte, fn func(name string, value *string) bool) (int, error) {
	p := &configParser{data: data, line: 1}
	var name []byte
	base := 0
	comment := false
	for {
		// git skips a UTF-8 byte order mark here, but compares its bytes
		// with chars read as signed: a blob that starts with one does not
		// parse.
		c := p.next()
		switch {
		case c == '\n':
			if p.eof {
				return 0, nil
			}
			comment = false
			continue
		case comment:
			continue
		case isConfigSpace(c):
			continue
		case c == '#' || c == ';':
			comment = true
			continue
		case c == '[':
			name = name[:0]
			var ok bool
			if name, ok = p.section(name); !ok || len(name) < 1 {
				return p.line, errConfigSyntax
			}
			name = append(name, '.')
			base = len(name)
			continue
		case !isConfigAlpha(c):
			return p.line, errConfigSyntax
		}
		name = append(name[:base], toLowerASCII(byte(c)))
		var value *string
		var ok bool
		if name, value, ok = p.entry(name); !ok {
			return p.line, errConfigSyntax
		}
		if !fn(string(name), value) {
			return 0, nil
		}
	}
}

type configParser struct {
	data []byte
	pos  int
	eof  bool
	line int
}

// next is get_next_char over config_buf_fgetc: "\r\n" reads as "\n",
// and the end of the data as "\n" with eof set. git reads the blob's
// bytes as signed chars, so a 0xff byte is EOF to it: it reads as "\n"
// and sets eof too, and eof stays set (git's parser then stops at the
// next newline), while reading goes on after it.
func (p *configParser) next() int {
	if p.pos >= len(p.data) {
		p.eof = true
		return '\n'
	}
	c := p.data[p.pos]
	p.pos++
	switch c {
	case 0xff:
		p.eof = true
		return '\n'
	case '\r':
		if p.pos < len(p.data) {
			switch p.data[p.pos] {
			case '\n':
				p.pos++
				c = '\n'
			case 0xff:
				p.pos++ // read as EOF and not pushed back
			}
		}
	}
	if c == '\n' {
		p.line++
	}
	return int(c)
}

// section is get_base_var and get_extended_base_var: after "[", a
// section name (letters, digits, "-", "." lowercased) and optionally a
// quoted subsection, up to "]".
func (p *configParser) section(name []byte) ([]byte, bool) {
	for {
		c := p.next()
		switch {
		case p.eof:
			return name, false
		case c == ']':
			return name, true
		case isConfigSpace(c):
			return p.subsection(name, c)
		case !isKeyChar(c) && c != '.':
			return name, false
		}
		name = append(name, toLowerASCII(byte(c)))
	}
}

func (p *configParser) subsection(name []byte, c int) ([]byte, bool) {
	for {
		if c == '\n' {
			return name, false
		}
		if c = p.next(); !isConfigSpace(c) {
			break
		}
	}
	if c != '"' {
		return name, false
	}
	name = append(name, '.')
	for {
		c := p.next()
		if c == '\n' {
			return name, false
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			if c = p.next(); c == '\n' {
				return name, false
			}
		}
		name = append(name, byte(c))
	}
	return name, p.next() == ']'
}

// entry is get_value: the rest of the key, then nothing or "=" and a
// value.
func (p *configParser) entry(name []byte) ([]byte, *string, bool) {
	var c int
	for {
		c = p.next()
		if p.eof || !isKeyChar(c) {
			break
		}
		name = append(name, toLowerASCII(byte(c)))
	}
	for c == ' ' || c == '\t' {
		c = p.next()
	}
	if c == '\n' {
		return name, nil, true
	}
	if c != '=' {
		return name, nil, false
	}
	v, ok := p.value()
	if !ok {
		return name, nil, false
	}
	return name, &v, true
}

// value is parse_value: whitespace trimmed at both ends and folded inside
// (outside quotes), comments cut, quotes removed, the escapes \t \b \n \\
// \" and a backslash before the newline (continuation); any other escape
// is an error, and so is a quote left open at the end of the line.
func (p *configParser) value() (string, bool) {
	var out []byte
	quote, comment := false, false
	space := 0
	for {
		c := p.next()
		if c == '\n' {
			if quote {
				return "", false
			}
			return string(out), true
		}
		if comment {
			continue
		}
		if isConfigSpace(c) && !quote {
			if len(out) > 0 {
				space++
			}
			continue
		}
		if !quote && (c == ';' || c == '#') {
			comment = true
			continue
		}
		for ; space > 0; space-- {
			out = append(out, ' ')
		}
		if c == '\\' {
			switch c = p.next(); c {
			case '\n':
				continue
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return "", false
			}
			out = append(out, byte(c))
			continue
		}
		if c == '"' {
			quote = !quote
			continue
		}
		out = append(out, byte(c))
	}
}

// git's own ASCII ctype: isspace is space, \t, \n and \r only.
func isConfigSpace(c int) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isConfigAlpha(c int) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isKeyChar(c int) bool { return isConfigAlpha(c) || c >= '0' && c <= '9' || c == '-' }

func toLowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
