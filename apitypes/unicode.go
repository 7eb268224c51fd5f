package apitypes

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The one check that the strings of a JSON request are Unicode text.
//
// Go's encoding/json replaces invalid UTF-8 and escapes of lone UTF-16
// surrogates ("\ud800") with U+FFFD, silently, so a path with a byte that
// the URL route refuses as badPathChar would arrive through a JSON body as
// another, valid, path. The check runs on the raw bytes before (or while)
// they are decoded: CheckStrings on a buffer, CheckedReader on a stream.
// It finds the first string, member names included, that is not valid
// Unicode and says where it is; Classify then tells, from the Go type the
// JSON decodes into, whether that string is a repository path: a field
// tagged `sessiond:"path"` (a string, the elements of a []string, or the
// keys of a map), at any depth. The API answers a path with invalid_path
// (rule badPathChar) and any other string with bad_request; MCP tool
// inputs go through the same check.

// PathTag is the struct tag key that marks a field as repository paths.
const PathTag = "sessiond"

// BadStringError is a JSON string that is not valid Unicode: invalid
// UTF-8, or an escape of a lone surrogate.
type BadStringError struct {
	// Location is where the string is: the member names and array indexes
	// from the top, as in a JSON Pointer ("edits/0/path").
	Location []string
	// Key says the string is a member name, the last element of Location.
	Key bool
	// Value is the string with each invalid part replaced by U+FFFD, for
	// messages.
	Value string
	// Path says the string is a repository path (see Classify).
	Path bool
	// Why is what is wrong with it.
	Why string
}

func (e *BadStringError) Error() string {
	what := "string"
	if e.Key {
		what = "member name"
	}
	return fmt.Sprintf("%s %q at %s: %s", what, e.Value, e.Where(), e.Why)
}

// Where is Location as a JSON Pointer ("/" for the top level).
func (e *BadStringError) Where() string {
	return "/" + strings.Join(e.Location, "/")
}

// CheckStrings reports the first string of the JSON text data that is not
// valid Unicode, or nil. It does not check the rest of the syntax: the
// decoder does.
func CheckStrings(data []byte) *BadStringError {
	if quickValid(data) {
		return nil
	}
	var sc stringScanner
	sc.scan(data)
	return sc.bad
}

// quickValid is the common case: valid UTF-8 with no \u escape that could
// be a surrogate (\uD800 to \uDFFF).
func quickValid(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte(`\u`))
		if j < 0 {
			return true
		}
		i += j + 2
		if i+1 < len(data) && (data[i]|0x20) == 'd' && data[i+1] >= '8' {
			return false
		}
	}
}

// CheckedReader passes a JSON stream through and fails the first read
// past a string that is not valid Unicode with a *BadStringError, so the
// decoder reading from it stops with that error.
type CheckedReader struct {
	r  io.Reader
	sc stringScanner
}

// NewCheckedReader returns a CheckedReader over r.
func NewCheckedReader(r io.Reader) *CheckedReader { return &CheckedReader{r: r} }

func (c *CheckedReader) Read(p []byte) (int, error) {
	if c.sc.bad != nil {
		return 0, c.sc.bad
	}
	n, err := c.r.Read(p)
	c.sc.scan(p[:n])
	if c.sc.bad != nil {
		return 0, c.sc.bad
	}
	return n, err
}

// Classify sets e.Path when the string is a repository path of v's type
// (v is what the JSON decodes into, or its type).
func (e *BadStringError) Classify(v any) {
	t, ok := v.(reflect.Type)
	if !ok {
		t = reflect.TypeOf(v)
	}
	e.Path = isPathAt(t, e.Location, e.Key, false)
}

// isPathAt walks t along loc; tagged says a field on the way was tagged
// as paths.
func isPathAt(t reflect.Type, loc []string, key, tagged bool) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return false
	}
	if len(loc) == 0 {
		return tagged && t.Kind() == reflect.String
	}
	switch t.Kind() {
	case reflect.Struct:
		f, ok := jsonField(t, loc[0])
		if !ok {
			return false
		}
		return isPathAt(f.Type, loc[1:], key, tagged || f.Tag.Get(PathTag) == "path")
	case reflect.Slice, reflect.Array:
		if _, err := strconv.Atoi(loc[0]); err != nil {
			return false
		}
		return isPathAt(t.Elem(), loc[1:], key, tagged)
	case reflect.Map:
		if len(loc) == 1 && key {
			return tagged && t.Key().Kind() == reflect.String
		}
		return isPathAt(t.Elem(), loc[1:], key, tagged)
	}
	return false
}

// jsonField is the field of struct t that encoding/json decodes member
// name into: by its json tag or its name (case-insensitively, as the
// decoder matches), looking into embedded structs.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	var fold reflect.StructField
	found := false
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if ef, ok := jsonField(et, name); ok {
					return ef, true
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return f, true
		}
		if !found && strings.EqualFold(tag, name) {
			fold, found = f, true
		}
	}
	return fold, found
}

// stringScanner follows JSON text byte by byte, across calls to scan: the
// nesting of objects and arrays (for Location) and, inside a string, its
// escapes and UTF-8 sequences. It stops at the first bad string.
type stringScanner struct {
	bad   *BadStringError
	stack []frame

	inString bool
	isKey    bool
	buf      []byte // the string so far, invalid parts as U+FFFD (capped)
	why      string // the first problem of the string, "" while valid

	esc     int  // 0: none; 1: after '\'; 2–5: reading \u hex digits
	unit    rune // the \u code unit being read
	high    rune // a high surrogate waiting for its low half, or 0
	utfNeed int  // continuation bytes still due
	utfLo   byte // range of the next continuation byte
	utfHi   byte
	utfSeq  []byte
}

type frame struct {
	object    bool
	key       string // object: the current member's name
	index     int    // array: the current element
	expectKey bool
}

const maxKept = 4096 // bytes of a string kept for the message

func (s *stringScanner) scan(p []byte) {
	for i := 0; i < len(p); i++ {
		if s.bad != nil {
			return
		}
		b := p[i]
		if s.inString {
			if s.esc == 0 && s.utfNeed == 0 && s.high == 0 {
				// A run of plain ASCII, the bulk of most strings, in one step.
				j := i
				for j < len(p) && p[j] < 0x80 && p[j] != '"' && p[j] != '\\' {
					j++
				}
				if j > i {
					s.keep(p[i:j]...)
					i = j - 1
					continue
				}
			}
			s.stringByte(b)
			continue
		}
		switch b {
		case '"':
			s.inString, s.buf, s.why, s.high, s.esc, s.utfNeed = true, s.buf[:0], "", 0, 0, 0
			top := s.top()
			s.isKey = top != nil && top.object && top.expectKey
		case '{':
			s.stack = append(s.stack, frame{object: true, expectKey: true})
		case '[':
			s.stack = append(s.stack, frame{})
		case '}', ']':
			if len(s.stack) > 0 {
				s.stack = s.stack[:len(s.stack)-1]
			}
		case ',':
			if top := s.top(); top != nil {
				if top.object {
					top.expectKey = true
				} else {
					top.index++
				}
			}
		case ':':
			if top := s.top(); top != nil && top.object {
				top.expectKey = false
			}
		}
	}
}

func (s *stringScanner) top() *frame {
	if len(s.stack) == 0 {
		return nil
	}
	return &s.stack[len(s.stack)-1]
}

func (s *stringScanner) keep(b ...byte) {
	if room := maxKept - len(s.buf); room > 0 {
		s.buf = append(s.buf, b[:min(len(b), room)]...)
	}
}

func (s *stringScanner) keepRune(r rune) { s.keep(utf8.AppendRune(nil, r)...) }

func (s *stringScanner) fail(why string) {
	if s.why == "" {
		s.why = why
	}
	s.keepRune(utf8.RuneError)
}

// stringByte takes one byte inside a string.
func (s *stringScanner) stringByte(b byte) {
	if s.utfNeed > 0 {
		if b >= s.utfLo && b <= s.utfHi {
			s.utfSeq = append(s.utfSeq, b)
			s.utfLo, s.utfHi = 0x80, 0xBF
			if s.utfNeed--; s.utfNeed == 0 {
				s.keep(s.utfSeq...)
			}
			return
		}
		s.utfNeed = 0
		s.fail("invalid UTF-8")
		// b starts something new: fall through.
	}
	if s.esc == 1 {
		s.esc = 0
		if b == 'u' {
			s.esc, s.unit = 2, 0
			return
		}
		s.loneHigh()
		switch b {
		case 'n':
			s.keep('\n')
		case 't':
			s.keep('\t')
		case 'r':
			s.keep('\r')
		case 'b':
			s.keep('\b')
		case 'f':
			s.keep('\f')
		default:
			s.keep(b)
		}
		return
	}
	if s.esc >= 2 {
		d, ok := hexDigit(b)
		if !ok { // malformed: the decoder says so
			s.esc = 0
			return
		}
		s.unit = s.unit<<4 | d
		if s.esc++; s.esc < 6 {
			return
		}
		s.esc = 0
		s.codeUnit(s.unit)
		return
	}
	switch {
	case b == '\\':
		s.esc = 1
		return
	case b == '"':
		s.loneHigh()
		s.endString()
		return
	}
	s.loneHigh()
	switch {
	case b < 0x80:
		s.keep(b)
	case b >= 0xC2 && b <= 0xDF:
		s.utf(b, 1, 0x80, 0xBF)
	case b == 0xE0:
		s.utf(b, 2, 0xA0, 0xBF)
	case b == 0xED:
		s.utf(b, 2, 0x80, 0x9F) // not the surrogates
	case b >= 0xE1 && b <= 0xEF:
		s.utf(b, 2, 0x80, 0xBF)
	case b == 0xF0:
		s.utf(b, 3, 0x90, 0xBF)
	case b >= 0xF1 && b <= 0xF3:
		s.utf(b, 3, 0x80, 0xBF)
	case b == 0xF4:
		s.utf(b, 3, 0x80, 0x8F)
	default:
		s.fail("invalid UTF-8")
	}
}

func (s *stringScanner) utf(lead byte, need int, lo, hi byte) {
	s.utfSeq = append(s.utfSeq[:0], lead)
	s.utfNeed, s.utfLo, s.utfHi = need, lo, hi
}

// codeUnit takes one \uXXXX.
func (s *stringScanner) codeUnit(u rune) {
	switch {
	case u >= 0xD800 && u <= 0xDBFF:
		s.loneHigh()
		s.high = u
	case u >= 0xDC00 && u <= 0xDFFF:
		if s.high == 0 {
			s.fail(fmt.Sprintf(`lone surrogate \u%04x`, u))
			return
		}
		s.keepRune(0x10000 + (s.high-0xD800)<<10 + (u - 0xDC00))
		s.high = 0
	default:
		s.loneHigh()
		s.keepRune(u)
	}
}

// loneHigh fails a high surrogate that is not followed by a low one.
func (s *stringScanner) loneHigh() {
	if s.high != 0 {
		h := s.high
		s.high = 0
		s.fail(fmt.Sprintf(`lone surrogate \u%04x`, h))
	}
}

func (s *stringScanner) endString() {
	s.inString = false
	if s.utfNeed > 0 {
		s.utfNeed = 0
		s.fail("invalid UTF-8")
	}
	top := s.top()
	if s.why != "" {
		e := &BadStringError{Key: s.isKey, Value: strings.ToValidUTF8(string(s.buf), "\uFFFD"), Why: s.why}
		for i, f := range s.stack {
			switch {
			case i == len(s.stack)-1 && s.isKey:
				e.Location = append(e.Location, e.Value)
			case f.object:
				e.Location = append(e.Location, f.key)
			default:
				e.Location = append(e.Location, strconv.Itoa(f.index))
			}
		}
		s.bad = e
		return
	}
	if s.isKey && top != nil {
		top.key = string(s.buf)
	}
}

func hexDigit(b byte) (rune, bool) {
	switch {
	case b >= '0' && b <= '9':
		return rune(b - '0'), true
	case b|0x20 >= 'a' && b|0x20 <= 'f':
		return rune(b|0x20-'a') + 10, true
	}
	return 0, false
}
