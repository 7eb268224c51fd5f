package mcpserver

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/merge"
)

var hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@`)

// hunkCounts is the oracle for changeCounts: a hunk header says how many
// old-side (context and deleted) and new-side (context and added) lines
// follow; the context lines are the ones starting with a space.
func hunkCounts(t testing.TB, text string) (added, deleted int) {
	t.Helper()
	old, new, context := 0, 0, 0
	inHunks := false
	for line := range strings.Lines(text) {
		if m := hunkHeader.FindStringSubmatch(line); m != nil {
			inHunks = true
			for i, n := range []*int{&old, &new} {
				c := 1
				if m[i+1] != "" {
					var err error
					c, err = strconv.Atoi(m[i+1])
					require.NoError(t, err)
				}
				*n += c
			}
			continue
		}
		if inHunks && line[0] == ' ' {
			context++
		}
	}
	return new - context, old - context
}

// checkSplit asserts splitDiff's invariants on d: the files are a
// partition of d from its first "diff --git" line on, each starts with
// its header, no other of its lines is one, and each path is its
// header's b/ path.
func checkSplit(t testing.TB, d string, files []diffFile) {
	t.Helper()
	first := -1
	if strings.HasPrefix(d, "diff --git ") {
		first = 0
	} else if i := strings.Index(d, "\ndiff --git "); i >= 0 {
		first = i + 1
	}
	if first < 0 {
		assert.Empty(t, files)
		return
	}
	var joined strings.Builder
	for _, f := range files {
		joined.WriteString(f.text)
		header, _, _ := strings.Cut(f.text, "\n")
		require.True(t, strings.HasPrefix(header, "diff --git "), "a file starts at its header: %q", f.text)
		assert.Equal(t, diffPath(header+"\n"), f.path)
		assert.NotContains(t, f.text[len(header):], "\ndiff --git ", "one file per header")
	}
	assert.Equal(t, d[first:], joined.String(), "the files are the diff from its first header on, in order")
}

// FuzzDiff: the diff tool's split of any text is a partition of it into
// files, and for real diffs (two files printed as the engine prints them,
// after any junk) it finds both files with the added and deleted lines
// their hunk headers declare.
func FuzzDiff(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nB\nc\n"), "")
	f.Add([]byte("--- x\n+++ y\n"), []byte("++ z\n-- w\n"), "junk\n")
	f.Add([]byte("no final newline"), []byte("no final newline\nnow"), "diff --git a/x b/x\n")
	f.Add([]byte("\x00binary"), []byte("text\n"), "@@ -1 +1 @@\n+x\n")
	f.Fuzz(func(t *testing.T, old, new []byte, junk string) {
		ctx := context.Background()
		// Any text at all.
		files, err := splitDiff(ctx, junk)
		require.NoError(t, err)
		checkSplit(t, junk, files)

		// Real diffs after junk that ends its line.
		if junk != "" && !strings.HasSuffix(junk, "\n") {
			junk += "\n"
		}
		one := string(merge.FilePatch("one.txt", gitstore.ModeFile, old, new))
		two := string(merge.FilePatch("dir/two.txt", gitstore.ModeFile, new, append(old, "more\n"...)))
		d := junk + one + two
		files, err = splitDiff(ctx, d)
		require.NoError(t, err)
		checkSplit(t, d, files)
		if strings.Contains(junk, "diff --git ") {
			return
		}
		var want []diffFile
		if one != "" {
			want = append(want, diffFile{"one.txt", one})
		}
		if two != "" {
			want = append(want, diffFile{"dir/two.txt", two})
		}
		require.Equal(t, want, files)
		for _, f := range files {
			added, deleted, err := changeCounts(ctx, f.text)
			require.NoError(t, err)
			wa, wd := hunkCounts(t, f.text)
			assert.Equal(t, wa, added, "added lines of %s", f.path)
			assert.Equal(t, wd, deleted, "deleted lines of %s", f.path)
		}
	})
}

// The counts the diff tool reports are git's: git apply --numstat reads
// the same diff.
func TestChangeCountsMatchGit(t *testing.T) {
	dir := testrepo.Init(t)
	cases := []struct{ name, old, new string }{
		{"modified", "a\nb\nc\n", "a\nB\nc\nd\n"},
		{"lines that look like headers", "keep\n-- a comment\n", "keep\n++ added\n--- three\n"},
		{"no final newline", "x\ny", "x\nz"},
		{"added file", "", "1\n2\n3\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := string(merge.FilePatch("f.txt", gitstore.ModeFile, []byte(c.old), []byte(c.new)))
			files, err := splitDiff(t.Context(), d)
			require.NoError(t, err)
			require.Len(t, files, 1)
			added, deleted, err := changeCounts(t.Context(), files[0].text)
			require.NoError(t, err)
			numstat := strings.Fields(testrepo.GitInput(t, dir, []byte(d), "apply", "--numstat", "-"))
			require.Len(t, numstat, 3)
			assert.Equal(t, numstat[0], strconv.Itoa(added), "added")
			assert.Equal(t, numstat[1], strconv.Itoa(deleted), "deleted")
		})
	}
}

// stoppingCtx is a context whose Err turns to context.Canceled after it
// has been asked n times: it ends while the work is under way, whatever
// the machine's speed.
type stoppingCtx struct {
	context.Context
	left atomic.Int64
}

func stopAfter(n int64) *stoppingCtx {
	c := &stoppingCtx{Context: context.Background()}
	c.left.Store(n)
	return c
}

func (c *stoppingCtx) Err() error {
	if c.left.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// asked is how often Err was called.
func (c *stoppingCtx) asked(n int64) int64 { return n - c.left.Load() }

// The loops over a request's lines look at its context as they go and
// stop when it ends: a client that leaves leaves no core busy.
func TestLineWorkStopsWhenCancelled(t *testing.T) {
	const lines = 50 * checkEvery
	big := bigFile(lines)
	diff := string(merge.FilePatch("big.txt", gitstore.ModeFile, nil, []byte(big)))
	far := strings.Repeat("qqqq zzzz wwww\n", 20)

	t.Run("splitDiff", func(t *testing.T) {
		ctx := stopAfter(3)
		_, err := splitDiff(ctx, diff)
		require.ErrorIs(t, err, context.Canceled)
		assert.EqualValues(t, 4, ctx.asked(3), "stopped at the first look after the context ended")
		files, err := splitDiff(t.Context(), diff)
		require.NoError(t, err)
		assert.Len(t, files, 1, "and does the work when it does not")
	})
	t.Run("changeCounts", func(t *testing.T) {
		ctx := stopAfter(3)
		_, _, err := changeCounts(ctx, diff)
		require.ErrorIs(t, err, context.Canceled)
		assert.EqualValues(t, 4, ctx.asked(3))
	})
	t.Run("nearMatch", func(t *testing.T) {
		ctx := stopAfter(3)
		_, ok := nearMatch(ctx, big, far)
		assert.False(t, ok)
		assert.EqualValues(t, 4, ctx.asked(3), "stopped at the first look after the context ended")
	})
	t.Run("applyEdits", func(t *testing.T) {
		ctx := stopAfter(30)
		_, _, err := applyEdits(ctx, big, []EditOp{{OldText: far, NewText: "x"}})
		require.ErrorIs(t, err, context.Canceled, "a cancelled near-match search is the context's error, not a no_match")
	})
}

// bigFile is n numbered lines of text.
func bigFile(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line %d of a generated file, some words to compare\n", i)
	}
	return b.String()
}

// A near-match far down a file larger than any window the old search
// allowed is still found, in the right place, by the same score.
func TestNearMatchLargeFile(t *testing.T) {
	content := bigFile(120_000)
	lines := splitKeep(content)
	at := 100_000
	old := strings.Join(lines[at:at+5], "\n")
	old = strings.Replace(old, "some words", "sone words", 1)
	c, ok := nearMatch(t.Context(), content, old)
	require.True(t, ok)
	assert.Equal(t, at+1, c.Line)
	assert.Equal(t, at+5, c.EndLine)
	assert.Greater(t, c.Score, 0.9)

	spaced := strings.ReplaceAll(strings.Join(lines[at:at+5], "\n"), " ", "  ")
	c, ok = nearMatch(t.Context(), content, spaced)
	require.True(t, ok)
	assert.Equal(t, at+1, c.Line)
	assert.EqualValues(t, 1, c.Score, "the same lines with other whitespace")
}

// nearMatchWindows is the search the old code did: every window scored
// line by line. The new search must find a window with the same score.
func nearMatchWindows(content, old string) (int, float64) {
	lines, want := splitKeep(content), splitKeep(old)
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	best, bestAt := 0.0, -1
	for at := 0; at+len(want) <= len(lines); at++ {
		score := 0.0
		for k := range want {
			score += similarity(norm(lines[at+k]), norm(want[k]))
		}
		if score /= float64(len(want)); score > best {
			best, bestAt = score, at
		}
	}
	return bestAt, best
}

func TestNearMatchAgreesWithExhaustiveSearch(t *testing.T) {
	content := "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n\n// Sub returns a minus b.\nfunc Sub(a, b int) int {\n\treturn a - b\n}\n"
	for _, old := range []string{
		"func Ad(a, b int) int {",
		"// Sub returns a minus c.\nfunc Sub(a, b int) int {",
		"func Add(a, b int) int {\n\treturn a + b\n}",
		"// Add returns a plus b\nfunc Add(a, b int) int",
		"return a - c",
	} {
		t.Run(old, func(t *testing.T) {
			wantAt, wantScore := nearMatchWindows(content, old)
			c, ok := nearMatch(t.Context(), content, old)
			require.Equal(t, wantScore >= 0.5, ok)
			if ok {
				assert.Equal(t, wantAt+1, c.Line)
				assert.InDelta(t, wantScore, c.Score, 1e-9)
			}
		})
	}
}

// BenchmarkNearMatch: edit_file's search for the closest text when
// old_text is not in the file, on files of lines=N with an old_text of
// N/100 lines (one line of it misspelt), so that both grow together.
func BenchmarkNearMatch(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) {
			content := bigFile(n)
			lines := splitKeep(content)
			w := n / 100
			old := strings.Replace(strings.Join(lines[n/2:n/2+w], "\n"), "some words", "sone words", 1)
			for b.Loop() {
				if c, ok := nearMatch(b.Context(), content, old); !ok || c.Line != n/2+1 {
					b.Fatalf("near-match at %d (%v), want %d", c.Line, ok, n/2+1)
				}
			}
		})
	}
}
