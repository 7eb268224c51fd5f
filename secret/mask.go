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
// be the start of a value.
func (s *Stream) mask(buf []byte, final bool) {
	var out []byte
	start := 0 // buf[start:i] is plain, not yet copied to out
	i := 0
scan:
	for i < len(buf) {
		for _, v := range s.m.values {
			if buf[i] != v[0] {
				continue
			}
			rest := buf[i:]
			switch {
			case bytes.HasPrefix(rest, v):
				out = append(out, buf[start:i]...)
				out = append(out, Mask...)
				i += len(v)
				start = i
				continue scan
			case !final && len(rest) < len(v) && bytes.HasPrefix(v, rest):
				// Maybe a value, cut by the chunk's end: hold it.
				s.held = slices.Clone(rest)
				break scan
			}
		}
		i++
	}
	out = append(out, buf[start:i]...)
	if len(out) > 0 {
		s.out(out)
	}
}

// Flush passes on what was held back: at the stream's end it is no value.
func (s *Stream) Flush() {
	if len(s.held) > 0 {
		held := s.held
		s.held = nil
		s.mask(held, true)
	}
}
