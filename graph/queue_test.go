package graph_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/session"
)

// A graph that is slow (here: stopped) does not hold up writes: the
// engine only queues the work. Writes made meanwhile are coalesced per
// session, and once the graph catches up its deltas and overlap reports
// are those of the final views.
func TestSlowGraphDoesNotBlockWrites(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	const p = "bufio/scan.go"
	const errFn = "func (s *Scanner) Err() error {\n"
	const scanBytes = "func ScanBytes(data []byte, atEOF bool) (advance int, token []byte, err error) {\n"
	a, b := e.create("agent-a"), e.create("agent-b")
	src := e.read(a.ID, p)

	stopped, resume := make(chan struct{}), make(chan struct{})
	first := true
	graph.SetBeforeJobForTest(e.g, func() {
		if first {
			first = false
			close(stopped)
			<-resume
		}
	})
	write := func(id session.Session, content string) {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			_, _, err := e.m.Write(ctx, id.ID, p, []byte(content), session.WriteOptions{})
			done <- err
		}()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Fatal("a write waited for the graph")
		}
	}
	write(a, strings.Replace(src, scanBytes, scanBytes+"\t// a, first\n", 1))
	<-stopped // the graph's worker is stuck on a's first write
	for i, c := range []string{"second", "third"} {
		write(a, strings.Replace(src, scanBytes, scanBytes+"\t// a, "+c+"\n", 1))
		write(b, strings.Replace(src, errFn, errFn+"\t// b "+strings.Repeat("!", i)+"\n", 1))
	}
	close(resume)
	require.NoError(t, e.g.Sync(ctx))

	d := e.delta(a.ID)
	require.Contains(t, d, p)
	assert.Equal(t, keys("func ScanBytes"), d[p].SymbolChanges.Keys())
	ab := find(e.overlaps(a.ID), b.ID)
	require.NotEmpty(t, ab)
	last := ab[len(ab)-1]
	assert.Equal(t, graph.MergeClean, last.Merge)
	assert.Equal(t, keys("method (Scanner).Err"), last.Theirs)
}
