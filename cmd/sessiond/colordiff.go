package main

import (
	"bytes"
	"strconv"
	"strings"
)

// colorDiff colours a unified diff as git does: headers bold, hunk
// headers cyan (their function context plain), removals red, additions
// green. It reads the diff's
// structure rather than each line's first characters: a hunk header says
// how many old and new lines follow, so a removed line "-- x" or an added
// line "++ y" inside a hunk is a removal or an addition, never a header.
func colorDiff(text []byte) []byte {
	const (
		bold  = "\x1b[1m"
		cyan  = "\x1b[36m"
		red   = "\x1b[31m"
		green = "\x1b[32m"
		reset = "\x1b[m"
	)
	var out bytes.Buffer
	oldLeft, newLeft := 0, 0 // lines of the current hunk still to come
	paint := func(color string, body, nl []byte) {
		out.WriteString(color)
		out.Write(body)
		out.WriteString(reset)
		out.Write(nl)
	}
	for _, line := range bytes.SplitAfter(text, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		body := bytes.TrimSuffix(line, []byte("\n"))
		nl := line[len(body):]
		inHunk := oldLeft > 0 || newLeft > 0
		switch {
		case len(body) > 0 && body[0] == '\\': // "\ No newline at end of file"
			out.Write(line)
		case inHunk && len(body) > 0 && body[0] == '-':
			oldLeft--
			paint(red, body, nl)
		case inHunk && len(body) > 0 && body[0] == '+':
			newLeft--
			paint(green, body, nl)
		case inHunk && (len(body) == 0 || body[0] == ' '):
			oldLeft--
			newLeft--
			out.Write(line)
		case bytes.HasPrefix(body, []byte("@@ ")):
			oldLeft, newLeft = hunkCounts(string(body))
			// The function context after "@@ … @@" is plain, as git
			// paints it.
			if end := bytes.Index(body[3:], []byte(" @@ ")); end >= 0 {
				frag, fn := body[:3+end+3], body[3+end+4:]
				out.WriteString(cyan)
				out.Write(frag)
				out.WriteString(reset + " " + reset)
				out.Write(fn)
				out.WriteString(reset)
				out.Write(nl)
				break
			}
			paint(cyan, body, nl)
		default: // a file's header: diff --git, index, mode lines, ---, +++, Binary files …
			oldLeft, newLeft = 0, 0
			paint(bold, body, nl)
		}
	}
	return out.Bytes()
}

// hunkCounts reads the old and new line counts of a hunk header
// "@@ -a[,b] +c[,d] @@"; a missing count is 1. A header it cannot read
// counts as an empty hunk.
func hunkCounts(h string) (oldN, newN int) {
	fields := strings.Fields(h)
	if len(fields) < 3 {
		return 0, 0
	}
	count := func(f, sign string) int {
		r, ok := strings.CutPrefix(f, sign)
		if !ok {
			return 0
		}
		_, n, found := strings.Cut(r, ",")
		if !found {
			return 1
		}
		v, err := strconv.Atoi(n)
		if err != nil || v < 0 {
			return 0
		}
		return v
	}
	return count(fields[1], "-"), count(fields[2], "+")
}
