package merge_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/merge"
)

var hunkHeader = regexp.MustCompile(`(?m)^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// gitEdits runs git diff -U0 with the given algorithm and reads the
// changed line ranges from its hunk headers.
func gitEdits(t *rapid.T, dir, algorithm string, a, b []byte) [][4]int {
	pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	require.NoError(t, os.WriteFile(pa, a, 0o644))
	require.NoError(t, os.WriteFile(pb, b, 0o644))
	cmd := exec.Command("git", "diff", "--no-index", "--no-indent-heuristic", "--diff-algorithm="+algorithm, "-U0", pa, pb)
	cmd.Env = testrepo.Env()
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		require.NoError(t, err)
	}
	var edits [][4]int
	for _, m := range hunkHeader.FindAllStringSubmatch(string(out), -1) {
		num := func(s string, def int) int {
			if s == "" {
				return def
			}
			n, err := strconv.Atoi(s)
			require.NoError(t, err)
			return n
		}
		s1, c1, s2, c2 := num(m[1], 0), num(m[2], 1), num(m[3], 0), num(m[4], 1)
		// An empty range names the line before it; a non-empty one its
		// first line, 1-based.
		if c1 > 0 {
			s1--
		}
		if c2 > 0 {
			s2--
		}
		edits = append(edits, [4]int{s1, c1, s2, c2})
	}
	return edits
}

func genText(t *rapid.T, label string, alphabet int) []byte {
	var b bytes.Buffer
	for range rapid.IntRange(0, 150).Draw(t, label+"-n") {
		fmt.Fprintf(&b, "x%d\n", rapid.IntRange(0, alphabet-1).Draw(t, label+"-line"))
	}
	return b.Bytes()
}

// TestLineDiffMatchesGit: the changed lines our diff finds are git's, with
// Myers (git diff's default, used for patches) and with histogram (used by
// git's tree merges), on random files with few distinct lines, so that
// many lines repeat, some more often than histogram will anchor on.
func TestLineDiffMatchesGit(t *testing.T) {
	dir := t.TempDir()
	rapid.Check(t, func(rt *rapid.T) {
		alphabet := rapid.SampledFrom([]int{2, 6, 40}).Draw(rt, "alphabet")
		a := genText(rt, "a", alphabet)
		var b []byte
		if rapid.Bool().Draw(rt, "related") {
			b = editLines(rt, "b", a)
			b = editLines(rt, "b2", b)
		} else {
			b = genText(rt, "b", alphabet)
		}
		for _, algo := range []string{"myers", "histogram"} {
			want := gitEdits(rt, dir, algo, a, b)
			got := merge.DiffEdits(a, b, algo == "histogram")
			require.Equal(rt, want, got, "%s diff of\n%s\nand\n%s", algo, a, b)
		}
	})
}
