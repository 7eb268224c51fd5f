package session_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/session"
)

// renderGrep prints a search's matches of one file as grep -n -C prints
// them: "n:text" for a match, "n-text" for context, "--" between groups
// that do not touch.
func renderGrep(ms []session.Match) string {
	var b strings.Builder
	last := 0
	for _, m := range ms {
		first := m.Line - len(m.Before)
		if last > 0 && first > last+1 {
			b.WriteString("--\n")
		}
		for i, l := range m.Before {
			fmt.Fprintf(&b, "%d-%s\n", first+i, l)
		}
		fmt.Fprintf(&b, "%d:%s\n", m.Line, m.Text)
		for i, l := range m.After {
			fmt.Fprintf(&b, "%d-%s\n", m.Line+1+i, l)
		}
		last = m.Line + len(m.After)
	}
	return b.String()
}

// TestSearchContextMatchesGrep checks a search's context lines against
// GNU grep -n -C on the same file: matches next to each other, contexts
// that overlap, matches at the first and last line, no final newline.
func TestSearchContextMatchesGrep(t *testing.T) {
	if _, err := exec.LookPath("grep"); err != nil {
		t.Skip("no grep")
	}
	e := newEnv(t, "small")
	ctx := t.Context()
	s := e.create(session.CreateOptions{})
	var lines []string
	for i := 1; i <= 60; i++ {
		l := fmt.Sprintf("line %d", i)
		if i == 1 || i == 5 || i == 6 || i == 9 || i == 20 || i == 24 || i == 40 || i == 60 {
			l += " HIT"
		}
		lines = append(lines, l)
	}
	files := map[string]string{
		"c/final.txt":  strings.Join(lines, "\n") + "\n",
		"c/noeol.txt":  strings.Join(lines, "\n"),
		"c/single.txt": "HIT",
	}
	dir := t.TempDir()
	for p, content := range files {
		e.write(s.ID, p, content)
	}
	for p, content := range files {
		local := filepath.Join(dir, filepath.Base(p))
		require.NoError(t, os.WriteFile(local, []byte(content), 0o644))
		for _, n := range []int{1, 2, 3, 4, 7} {
			t.Run(fmt.Sprintf("%s/C%d", p, n), func(t *testing.T) {
				want, err := exec.Command("grep", "-n", "-C", fmt.Sprint(n), "-e", "HIT", local).Output()
				require.NoError(t, err)
				res, err := e.m.Search(ctx, s.ID, session.SearchOptions{Pattern: "HIT", Prefix: "c", Glob: p, Context: n})
				require.NoError(t, err)
				assert.Equal(t, string(want), renderGrep(res.Matches))
			})
		}
	}
	// Without context a match carries none.
	res, err := e.m.Search(ctx, s.ID, session.SearchOptions{Pattern: "HIT", Glob: "c/final.txt"})
	require.NoError(t, err)
	require.Len(t, res.Matches, 8)
	for _, m := range res.Matches {
		assert.Nil(t, m.Before)
		assert.Nil(t, m.After)
	}
	// Cut at MaxResults: the last match shown keeps its context.
	res, err = e.m.Search(ctx, s.ID, session.SearchOptions{Pattern: "HIT", Glob: "c/final.txt", Context: 2, MaxResults: 4})
	require.NoError(t, err)
	assert.True(t, res.Truncated)
	require.Len(t, res.Matches, 4)
	assert.Equal(t, []string{"line 10", "line 11"}, res.Matches[3].After)
	for _, bad := range []int{-1, session.MaxSearchContext + 1} {
		_, err = e.m.Search(ctx, s.ID, session.SearchOptions{Pattern: "HIT", Context: bad})
		assert.ErrorIs(t, err, record.ErrInvalid, "context %d", bad)
	}
}
