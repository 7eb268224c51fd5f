package mcpserver

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// edit_file's matching against a model: a list of ops either applies as
// strings.Replace would, op by op, when each old_text occurs exactly once
// (or at least once with replace_all), or fails naming the first op that
// does not, with the number of matches it found.
func TestApplyEditsModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		words := []string{"a", "b", "ab", "\n", "x\n", "func", " ", "a b"}
		gen := func(label string, n int) string {
			var b strings.Builder
			for range rapid.IntRange(0, n).Draw(rt, label+"-len") {
				b.WriteString(rapid.SampledFrom(words).Draw(rt, label))
			}
			return b.String()
		}
		content := gen("content", 12)
		var ops []EditOp
		for range rapid.IntRange(1, 3).Draw(rt, "ops") {
			ops = append(ops, EditOp{OldText: gen("old", 3), NewText: gen("new", 3), ReplaceAll: rapid.Bool().Draw(rt, "all")})
		}
		got, counts, err := applyEdits(t.Context(), content, ops)

		want := content
		var wantCounts []int
		for i, op := range ops {
			n := strings.Count(want, op.OldText)
			switch {
			case op.OldText == "" && want == "" && len(ops) == 1:
				want = op.NewText
				wantCounts = append(wantCounts, 1)
				continue
			case op.OldText == "":
				require.Error(rt, err)
				return
			case n == 0:
				var e *Error
				require.True(rt, errors.As(err, &e), "op %d: %v", i, err)
				if e.Code == CodeBadRequest { // old == new reported first
					return
				}
				assert.Equal(rt, CodeNoMatch, e.Code)
				assert.Equal(rt, i+1, e.Details["edit"])
				return
			case op.OldText == op.NewText:
				require.Error(rt, err)
				return
			case n > 1 && !op.ReplaceAll:
				var e *Error
				require.True(rt, errors.As(err, &e))
				assert.Equal(rt, CodeAmbiguousMatch, e.Code)
				assert.Equal(rt, n, e.Details["matches"])
				assert.Len(rt, e.Details["candidates"], min(n, maxCandidates))
				return
			}
			if op.ReplaceAll {
				want = strings.ReplaceAll(want, op.OldText, op.NewText)
			} else {
				want = strings.Replace(want, op.OldText, op.NewText, 1)
			}
			wantCounts = append(wantCounts, n)
		}
		require.NoError(rt, err)
		assert.Equal(rt, want, got)
		assert.Equal(rt, wantCounts, counts)
	})
}

func TestApplyEditsCRLF(t *testing.T) {
	got, _, err := applyEdits(t.Context(), "a\r\nb\r\nc", []EditOp{{OldText: "a\nb", NewText: "a\nB\nb"}})
	require.NoError(t, err)
	assert.Equal(t, "a\r\nB\r\nb\r\nc", got, "LF texts on a CRLF file keep CRLF; no final newline stays none")
	got, _, err = applyEdits(t.Context(), "a\r\nb\r\n", []EditOp{{OldText: "a\r\n", NewText: "z\r\n"}})
	require.NoError(t, err)
	assert.Equal(t, "z\r\nb\r\n", got)
	// A one-line old_text whose new_text adds lines: the new lines get
	// the file's CRLF too.
	got, _, err = applyEdits(t.Context(), "one\r\ntwo\r\n", []EditOp{{OldText: "two", NewText: "two\nmore"}})
	require.NoError(t, err)
	assert.Equal(t, "one\r\ntwo\r\nmore\r\n", got)
	got, _, err = applyEdits(t.Context(), "one\r\ntwo\r\n", []EditOp{{OldText: "one", NewText: "zero\r\none"}, {OldText: "two", NewText: "2\n3", ReplaceAll: true}})
	require.NoError(t, err)
	assert.Equal(t, "zero\r\none\r\n2\r\n3\r\n", got)
	// A file that mixes line endings is edited as given.
	got, _, err = applyEdits(t.Context(), "a\r\nb\nc\r\n", []EditOp{{OldText: "b", NewText: "b\nx"}})
	require.NoError(t, err)
	assert.Equal(t, "a\r\nb\nx\nc\r\n", got)
}

// FuzzApplyEdits: any content and edit either fails with a tool error or
// gives the content with exactly that replacement; candidates and
// near-matches never panic on odd input.
func FuzzApplyEdits(f *testing.F) {
	f.Add("func Add(a, b int) int {\n\treturn a - b\n}\n", "return a - b", "return a + b", false)
	f.Add("x\r\ny\r\n", "x\ny", "z", false)
	f.Add("aaa", "a", "b", true)
	f.Add("x\r\ny\r\n", "y", "y\nz", false)
	f.Add("", "", "new", false)
	f.Fuzz(func(t *testing.T, content, old, new string, all bool) {
		got, counts, err := applyEdits(t.Context(), content, []EditOp{{OldText: old, NewText: new, ReplaceAll: all}})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" || e.Message == "" {
				t.Fatalf("not a tool error: %v", err)
			}
			return
		}
		if len(counts) != 1 || counts[0] < 1 {
			t.Fatalf("counts %v", counts)
		}
		if isCRLF(content) {
			new = toCRLF(new)
		}
		if old != "" && !all && strings.Count(content, old) == 1 && got != strings.Replace(content, old, new, 1) {
			t.Fatalf("got %q", got)
		}
	})
}

func TestNearMatch(t *testing.T) {
	content := "one\n    two three\nfour\n"
	c, ok := nearMatch(t.Context(), content, "two  three")
	require.True(t, ok)
	assert.Equal(t, 2, c.Line)
	assert.Contains(t, c.Reason, "whitespace")
	c, ok = nearMatch(t.Context(), content, "two threx")
	require.True(t, ok)
	assert.Equal(t, 2, c.Line)
	assert.Contains(t, c.Context, ">     2\t    two three")
	_, ok = nearMatch(t.Context(), content, "zzzzzz")
	assert.False(t, ok)
}
