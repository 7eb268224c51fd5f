package secret

import (
	"bytes"
	"slices"
	"strings"
)

// Mask is what replaces a secret's value in an output.
const Mask = "***"

// Masker finds secret values in outputs. The zero Masker (or one with no
// value of MinMask bytes) masks nothing.
type Masker struct {
	// values, longest first, so the longest of overlapping values wins.
	values [][]byte
	names  []string
	maxLen int
}

// NewMasker masks the values of secrets (name → value) that are at least
// MinMask bytes long.
func NewMasker(secrets map[string]string) *Masker {
	type nv struct{ name, value string }
	var all []nv
	for n, v := range secrets {
		if len(v) >= MinMask {
			all = append(all, nv{n, v})
		}
	}
	slices.SortFunc(all, func(a, b nv) int {
		if len(a.value) != len(b.value) {
			return len(b.value) - len(a.value)
		}
		return strings.Compare(a.name, b.name)
	})
	m := &Masker{}
	for _, s := range all {
		m.values = append(m.values, []byte(s.value))
		m.names = append(m.names, s.name)
		m.maxLen = max(m.maxLen, len(s.value))
	}
	return m
}

// Empty reports whether m masks nothing.
func (m *Masker) Empty() bool { return m == nil || len(m.values) == 0 }

// Find returns the name of a secret whose value data holds, "" when none.
func (m *Masker) Find(data []byte) string {
	if m.Empty() {
		return ""
	}
	for i, v := range m.values {
		if bytes.Contains(data, v) {
			return m.names[i]
		}
	}
	return ""
}

// Bytes returns p with every secret value replaced by Mask; p itself when
// it holds none.
func (m *Masker) Bytes(p []byte) []byte {
	if m.Empty() || m.Find(p) == "" {
		return p
	}
	var out []byte
	s := m.Stream(func(b []byte) { out = append(out, b...) })
	s.Write(p)
	s.Flush()
	return out
}

// Tail is Bytes for the tail of a longer output: it also masks a value's
// end at p's start, where the cut may have left only part of a value.
func (m *Masker) Tail(p []byte) []byte {
	if m.Empty() {
		return p
	}
	cut := 0
	for _, v := range m.values {
		for k := len(v) - 1; k > cut; k-- {
			if bytes.HasPrefix(p, v[len(v)-k:]) {
				cut = k
				break
			}
		}
	}
	out := m.Bytes(p[cut:])
	if cut == 0 {
		return out
	}
	return append([]byte(Mask), out...)
}

// String is Bytes for a string.
func (m *Masker) String(s string) string {
	if m.Empty() {
		return s
	}
	return string(m.Bytes([]byte(s)))
}

// Stream masks a stream that arrives in chunks: a value split across two
// chunks is masked too. It passes on what it has masked to out, holding
// back only a tail that could still be the start of a value; Flush passes
// that on at the end.
func (m *Masker) Stream(out func([]byte)) *Stream {
	return &Stream{m: m, out: out}
}

// Stream is one masked stream (Masker.Stream). Not safe for concurrent
// use.
type Stream struct {
	m    *Masker
	out  func([]byte)
	held []byte
}

// Write masks p, with what was held back before it.
func (s *Stream) Write(p []byte) {
	if s.m.Empty() {
		if len(p) > 0 {
			s.out(p)
		}
		return
	}
	buf := p
	if len(s.held) > 0 {
		buf = append(s.held, p...)
		s.held = nil
	}
	s.mask(buf, false)
}

// mask passes on buf masked; unless final, it holds back a tail that may
// be the start of a value. Matches are leftmost, then longest; a place
// where a longer value may still begin is held rather than masked as a
// shorter one.
func (s *Stream) mask(buf []byte, final bool) {
	m := s.m
	lo := len(buf)
	if !final {
		lo = max(0, len(buf)-m.maxLen+1)
	}
	hold := m.holdFrom(buf, lo)
	// next[k] is where values[k] next occurs at or after i (-1: nowhere).
	next := make([]int, len(m.values))
	for k := range next {
		next[k] = -2
	}
	var out []byte
	i := 0
	for {
		if hold < i {
			hold = m.holdFrom(buf, max(i, lo))
		}
		p, n := -1, 0
		for k, v := range m.values {
			if next[k] == -2 || (next[k] >= 0 && next[k] < i) {
				next[k] = -1
				if at := bytes.Index(buf[i:], v); at >= 0 {
					next[k] = i + at
				}
			}
			if next[k] >= 0 && (p < 0 || next[k] < p) {
				p, n = next[k], len(v)
			}
		}
		if p < 0 || p >= hold {
			break
		}
		out = append(out, buf[i:p]...)
		out = append(out, Mask...)
		i = p + n
	}
	end := len(buf)
	if hold < end && hold >= i {
		end = hold
		s.held = slices.Clone(buf[hold:])
	}
	out = append(out, buf[i:end]...)
	if len(out) > 0 {
		s.out(out)
	}
}

// holdFrom is the first place at or after lo where what is left of buf is
// a proper prefix of a value (it may become one with what comes next);
// len(buf) when there is none.
func (m *Masker) holdFrom(buf []byte, lo int) int {
	for j := lo; j < len(buf); j++ {
		rest := buf[j:]
		for _, v := range m.values {
			if len(rest) < len(v) && bytes.HasPrefix(v, rest) {
				return j
			}
		}
	}
	return len(buf)
}

// Flush passes on what was held back: at the stream's end it is no value.
func (s *Stream) Flush() {
	if len(s.held) > 0 {
		held := s.held
		s.held = nil
		s.mask(held, true)
	}
}
