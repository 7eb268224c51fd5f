package merge_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/merge"
)

func numbered(n int, edit map[int]string) []byte {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := edit[i]; ok {
			if s != "" {
				b.WriteString(s + "\n")
			}
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return []byte(b.String())
}

// selectPatch: a text file with three hunks (the last changes the end of
// the file's newline), an added file and a binary file.
func selectPatch() *merge.Patch {
	changed := strings.TrimSuffix(string(numbered(40, map[int]string{2: "two", 3: "", 20: "twenty\nmore", 40: "forty"})), "\n")
	return merge.TextPatch(map[string][2][]byte{
		"doc.txt": {numbered(40, nil), []byte(changed)},
		"new.txt": {nil, []byte("new\n")},
		"bin.dat": {[]byte("a\x00b"), []byte("a\x00c")},
	})
}

// checkSelected: what Select takes and leaves out partition the patch, and
// a file taken in part is its old content with exactly those hunks.
func checkSelected(t *testing.T, p *merge.Patch, s *merge.Selected) {
	t.Helper()
	for i := range p.Files {
		f := &p.Files[i]
		path := f.Path()
		whole, left := slices.Contains(s.Taken.Files, path), slices.Contains(s.LeftOut.Files, path)
		taken, rest := s.Taken.Hunks[path], s.LeftOut.Hunks[path]
		switch {
		case whole:
			assert.False(t, left || taken != nil || rest != nil, "%s taken whole and more", path)
		case left:
			assert.False(t, taken != nil || rest != nil, "%s left out and more", path)
		default:
			require.True(t, taken != nil && rest != nil, "%s neither taken nor left out", path)
			all := append(slices.Clone(taken), rest...)
			slices.Sort(all)
			want := make([]int, len(f.Hunks))
			for h := range want {
				want[h] = h
			}
			assert.Equal(t, want, all, "%s: the hunks taken and left out are all of them, once", path)
			got, ok := merge.ApplySelected(s, path)
			require.True(t, ok)
			assert.Equal(t, string(merge.ApplyHunks(f, taken)), string(got))
		}
	}
}

func TestSelect(t *testing.T) {
	p := selectPatch()
	require.Len(t, p.Files[1].Hunks, 3, "doc.txt")
	s, err := merge.Select(p, merge.Selection{Hunks: map[string][]int{"doc.txt": {2, 0}}, Files: []string{"new.txt"}})
	require.NoError(t, err)
	checkSelected(t, p, s)
	assert.Equal(t, merge.Selection{Files: []string{"bin.dat"}, Hunks: map[string][]int{"doc.txt": {1}}}, s.LeftOut)
	got, _ := merge.ApplySelected(s, "doc.txt")
	want := strings.TrimSuffix(string(numbered(40, map[int]string{2: "two", 3: "", 40: "forty"})), "\n")
	assert.Equal(t, want, string(got), "hunks 1 and 3, the last one without a final newline")
	f := p.Files[1]
	assert.Equal(t, f.Hunks, merge.TextPatch(map[string][2][]byte{"doc.txt": {merge.ApplyHunks(&f, nil), merge.ApplyHunks(&f, []int{0, 1, 2})}}).Files[0].Hunks,
		"no hunks is the old file, all of them the new one")

	s, err = merge.Select(p, merge.Selection{Hunks: map[string][]int{"doc.txt": {0, 1, 2}}, Files: []string{"new.txt", "bin.dat"}})
	require.NoError(t, err)
	assert.True(t, s.All, "every hunk of every file is the whole patch")

	for _, bad := range []merge.Selection{
		{Hunks: map[string][]int{"doc.txt": {3}}},
		{Hunks: map[string][]int{"doc.txt": {-1}}},
		{Hunks: map[string][]int{"new.txt": {0, 1}}},
		{Hunks: map[string][]int{"nope": {0}}},
		{Files: []string{"nope"}},
		{Files: []string{"doc.txt"}, Hunks: map[string][]int{"doc.txt": {0}}},
		{},
		{Hunks: map[string][]int{"doc.txt": {}}},
	} {
		_, err := merge.Select(p, bad)
		var se *merge.SelectionError
		assert.True(t, errors.As(err, &se), "%+v: %v", bad, err)
		assert.ErrorIs(t, err, merge.ErrBadSelection)
	}
}

// FuzzSelect: any selection either is refused with a *SelectionError or
// partitions the patch (checkSelected); nothing panics.
func FuzzSelect(f *testing.F) {
	for _, seed := range []string{
		`{"files":["new.txt"],"hunks":{"doc.txt":[0,2]}}`,
		`{"hunks":{"doc.txt":[1,1,1]}}`,
		`{"hunks":{"doc.txt":[0,1,2]},"files":["bin.dat"]}`,
		`{"hunks":{"bin.dat":[0]}}`,
		`{"files":["doc.txt","doc.txt"]}`,
	} {
		f.Add([]byte(seed))
	}
	p := selectPatch()
	f.Fuzz(func(t *testing.T, data []byte) {
		var sel merge.Selection
		if json.Unmarshal(data, &sel) != nil {
			return
		}
		s, err := merge.Select(p, sel)
		if err != nil {
			var se *merge.SelectionError
			require.True(t, errors.As(err, &se), "%v", err)
			return
		}
		checkSelected(t, p, s)
	})
}
