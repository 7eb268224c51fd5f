package graph_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/session"
)

// find returns the overlaps with other on path.
func find(os []graph.Overlap, other uuid.UUID) []graph.Overlap {
	var out []graph.Overlap
	for _, o := range os {
		if o.Other == other {
			out = append(out, o)
		}
	}
	return out
}

// Sessions on one base: a and b edit different functions of one file, c
// edits a's function, d works elsewhere.
func TestOverlapDetection(t *testing.T) {
	e := newEnv(t)
	const p = "bufio/scan.go"
	a, b, c, d := e.create("agent-a"), e.create("agent-b"), e.create("agent-c"), e.create("agent-d")
	const scanBytes = "func ScanBytes(data []byte, atEOF bool) (advance int, token []byte, err error) {\n"
	const errFn = "func (s *Scanner) Err() error {\n"

	e.edit(a.ID, p, scanBytes, scanBytes+"\t// a was here\n")
	e.edit(d.ID, "strings/reader.go", "func (r *Reader) Len() int {\n", "func (r *Reader) Len() int {\n\t// d\n")
	assert.Empty(t, e.overlaps(a.ID), "nobody else changed the file yet")

	// Different functions of one file: reported to both, merge clean.
	e.edit(b.ID, p, errFn, errFn+"\t// b was here\n")
	ab := find(e.overlaps(a.ID), b.ID)
	require.Len(t, ab, 1)
	assert.Equal(t, graph.Overlap{Session: a.ID, Other: b.ID, OtherAgent: "agent-b", Path: p,
		Symbols: keys(), Ours: keys("func ScanBytes"), Theirs: keys("method (Scanner).Err"),
		Merge: graph.MergeClean, By: b.ID, Seq: 1}, ab[0])
	ba := find(e.overlaps(b.ID), a.ID)
	require.Len(t, ba, 1)
	assert.Equal(t, graph.MergeClean, ba[0].Merge)
	assert.Equal(t, "agent-a", ba[0].OtherAgent)
	assert.Equal(t, keys("method (Scanner).Err"), ba[0].Ours)

	// The same function: reported with the symbol, merge conflicts.
	e.edit(c.ID, p, scanBytes, scanBytes+"\t// c disagrees\n")
	ac := find(e.overlaps(a.ID), c.ID)
	require.Len(t, ac, 1)
	assert.Equal(t, keys("func ScanBytes"), ac[0].Symbols)
	assert.Equal(t, graph.MergeConflict, ac[0].Merge)
	ca := find(e.overlaps(c.ID), a.ID)
	require.Len(t, ca, 1)
	assert.Equal(t, graph.MergeConflict, ca[0].Merge)
	assert.Equal(t, keys("func ScanBytes"), ca[0].Symbols)
	// c and b: same file, different functions.
	cb := find(e.overlaps(c.ID), b.ID)
	require.Len(t, cb, 1)
	assert.Equal(t, graph.MergeClean, cb[0].Merge)
	assert.Empty(t, cb[0].Symbols)

	// Elsewhere: nothing.
	assert.Empty(t, e.overlaps(d.ID))

	// Writing again without changing the finding reports nothing new.
	before := len(e.overlaps(a.ID))
	e.edit(a.ID, p, "\t// a was here\n", "\t// a was here again\n")
	assert.Len(t, e.overlaps(a.ID), before)

	// A closed session overlaps no more: b now edits c's... function
	// after c is gone and hears nothing of it.
	_, err := e.m.Abandon(t.Context(), c.ID)
	require.NoError(t, err)
	nb := len(e.overlaps(b.ID))
	e.edit(b.ID, p, errFn, errFn+"\t// more\n")
	for _, o := range e.overlaps(b.ID)[nb:] {
		assert.NotEqual(t, c.ID, o.Other)
	}

	// Events reach subscribers of the session's stream.
	ctx := t.Context()
	evs, err := e.en.Events.List(ctx, events.Filter{Session: d.ID})
	require.NoError(t, err)
	for _, ev := range evs {
		assert.NotEqual(t, graph.EventOverlapDetected, ev.Type)
	}
}

// A forked session is met with its whole delta the first time it writes;
// what it inherited unchanged is no overlap, what it changes again is.
func TestOverlapAfterFork(t *testing.T) {
	e := newEnv(t)
	const p = "sort/sort.go"
	a := e.create("a")
	e.edit(a.ID, p, "func Sort(data Interface) {\n", "func Sort(data Interface) {\n\t// a\n")
	f, err := e.m.Fork(t.Context(), a.ID, session.ForkOptions{AgentID: "f"})
	require.NoError(t, err)
	e.write(f.ID, "README", "fork\n")
	assert.Equal(t, keys("func Sort"), e.delta(f.ID)[p].Modified)
	assert.Empty(t, e.overlaps(f.ID), "identical versions put nobody at risk")

	e.edit(f.ID, p, "\t// a\n", "\t// a\n\t// and f\n")
	fa := find(e.overlaps(f.ID), a.ID)
	require.Len(t, fa, 1)
	// Both inserted at one place, a line each side does not share: git's
	// merge conflicts there too.
	assert.Equal(t, graph.MergeConflict, fa[0].Merge)
	assert.Equal(t, keys("func Sort"), fa[0].Symbols)
	require.Len(t, find(e.overlaps(a.ID), f.ID), 1)
}
