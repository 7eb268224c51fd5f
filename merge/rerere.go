package merge

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
)

// Rerere's key of a conflicted file, as git rerere computes it (rerere.c,
// handle_path): each conflict hunk's two sides, without labels and
// without the base's section, ordered so that ours and theirs swapped is
// the same conflict; the id is the SHA-1 of "side1\0side2\0" over the
// hunks, the preimage the file with each hunk normalized so.

// RerereKey returns git rerere's conflict id and normalized preimage of
// content, a file with conflict markers of markerSize (0: git's 7). ok is
// false when content holds no complete conflict.
func RerereKey(content []byte, markerSize int) (id string, preimage []byte, ok bool) {
	if markerSize <= 0 {
		markerSize = defaultMarkerSize
	}
	r := &rerereReader{lines: splitLines(content), size: markerSize}
	h := sha1.New()
	var out bytes.Buffer
	conflicts := false
	for r.next < len(r.lines) {
		l := r.lines[r.next]
		r.next++
		if isCmarker(l, '<', markerSize) {
			var hunk bytes.Buffer
			if r.conflict(&hunk, h) {
				conflicts = true
				out.Write(hunk.Bytes())
				continue
			}
			return "", nil, false
		}
		out.Write(l)
	}
	if !conflicts {
		return "", nil, false
	}
	return hex.EncodeToString(h.Sum(nil)), out.Bytes(), true
}

type rerereReader struct {
	lines [][]byte
	next  int
	size  int
}

type hashWriter interface{ Write([]byte) (int, error) }

// conflict reads one conflict after its "<<<<<<<" line (handle_conflict)
// and writes it normalized; h, when not nil, takes its sides.
func (r *rerereReader) conflict(out *bytes.Buffer, h hashWriter) bool {
	const side1, side2, original = 0, 1, 2
	hunk := side1
	var one, two bytes.Buffer
	for r.next < len(r.lines) {
		l := r.lines[r.next]
		r.next++
		switch {
		case isCmarker(l, '<', r.size):
			var nested bytes.Buffer
			if !r.conflict(&nested, nil) {
				return false
			}
			if hunk == side1 {
				one.Write(nested.Bytes())
			} else {
				two.Write(nested.Bytes())
			}
		case isCmarker(l, '|', r.size):
			if hunk != side1 {
				return false
			}
			hunk = original
		case isCmarker(l, '=', r.size):
			if hunk != side1 && hunk != original {
				return false
			}
			hunk = side2
		case isCmarker(l, '>', r.size):
			if hunk != side2 {
				return false
			}
			a, b := one.Bytes(), two.Bytes()
			if bytes.Compare(a, b) > 0 {
				a, b = b, a
			}
			putMarker := func(c byte) {
				out.Write(bytes.Repeat([]byte{c}, r.size))
				out.WriteByte('\n')
			}
			putMarker('<')
			out.Write(a)
			putMarker('=')
			out.Write(b)
			putMarker('>')
			if h != nil {
				h.Write(append(a[:len(a):len(a)], 0))
				h.Write(append(b[:len(b):len(b)], 0))
			}
			return true
		case hunk == side1:
			one.Write(l)
		case hunk == side2:
			two.Write(l)
		}
	}
	return false
}

// isCmarker is rerere.c's is_cmarker: size marker bytes, then a space
// (required after '<' and '>') or the line's end.
func isCmarker(l []byte, c byte, size int) bool {
	if len(l) < size {
		return false
	}
	for _, b := range l[:size] {
		if b != c {
			return false
		}
	}
	rest := l[size:]
	if len(rest) == 0 {
		return false // git reads the NUL after the line: not a space
	}
	if (c == '<' || c == '>') && rest[0] != ' ' {
		return false
	}
	switch rest[0] {
	case ' ', '\t', '\n', '\r', '\v', '\f':
		return true
	}
	return false
}

// RerereReplay applies a remembered resolution (rerere's preimage and
// postimage) to a file with the same conflict, as git rerere does: a
// three-way merge of the file's normalized form (ours) and the postimage
// (theirs) over the preimage. ok is false when it does not apply cleanly.
func RerereReplay(current, preimage, postimage []byte, markerSize int) ([]byte, bool) {
	_, this, ok := RerereKey(current, markerSize)
	if !ok {
		return nil, false
	}
	res := MergeLines(preimage, this, postimage, LineMergeOptions{})
	if !res.Clean() {
		return nil, false
	}
	return res.Content, true
}
