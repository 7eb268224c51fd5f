package session_test

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
)

// newSyntheticEnv is an engine over an embedded store and a writable clone
// of the synthetic repository of files files (built once, cached).
func newSyntheticEnv(t *testing.T, files int) *env {
	t.Helper()
	e := &env{t: t, dataDir: t.TempDir(), repoDir: testrepo.CloneLocal(t, testrepo.CachedSynthetic(t, files))}
	st, err := db.OpenSQLite(t.Context(), filepath.Join(e.dataDir, "sessiond.db"))
	require.NoError(t, err)
	e.store = st
	e.start(session.Config{})
	t.Cleanup(func() { e.en.Close(); st.Close() })
	_, err = e.en.Repos.Register(t.Context(), "r", e.repoDir)
	require.NoError(t, err)
	return e
}

// A grep over 100,000 files runs on a snapshot: while it is stopped
// halfway (a hook, not a timer), 100 writes to the same session complete,
// and the grep then finishes with the view it started from.
func TestGrepDoesNotBlockWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100,000-file repository")
	}
	e := newSyntheticEnv(t, 100_000)
	s := e.create(session.CreateOptions{})
	const marker = "snapshotmarker"

	var files atomic.Int64
	halfway, writesDone := make(chan struct{}), make(chan struct{})
	var grepFinished atomic.Bool
	session.SetSearchFileHookForTest(t, func(string) {
		if files.Add(1) == 50_000 {
			close(halfway)
			<-writesDone
		}
	})
	type result struct {
		res session.SearchResult
		err error
	}
	grep := make(chan result, 1)
	go func() {
		res, err := e.m.Search(t.Context(), s.ID, session.SearchOptions{Pattern: marker, MaxResults: 10_000})
		grepFinished.Store(true)
		grep <- result{res, err}
	}()

	<-halfway
	// The failure this test looks for is a write waiting behind the grep;
	// the bound only turns that hang into a clear error.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for i := range 100 {
		_, _, err := e.m.Write(ctx, s.ID, fmt.Sprintf("added/f%03d.txt", i), []byte(marker+"\n"), session.WriteOptions{})
		require.NoError(t, err, "write %d while the grep is in progress", i)
	}
	assert.False(t, grepFinished.Load(), "all 100 writes completed before the grep finished")
	close(writesDone)

	got := <-grep
	require.NoError(t, got.err)
	assert.Empty(t, got.res.Matches, "the grep sees the view it started from")
	assert.Greater(t, files.Load(), int64(90_000), "the grep read (nearly) every file: symlinks are skipped")

	after, err := e.m.Search(t.Context(), s.ID, session.SearchOptions{Pattern: marker, MaxResults: 10_000})
	require.NoError(t, err)
	assert.Len(t, after.Matches, 100, "a grep after the writes sees them all")
}

// snapOp is one write of the model: content at path, or a delete.
type snapOp struct {
	path    string
	content string
	del     bool
}

// Reads racing writes on one session each see one snapshot: the view
// after some prefix of the writes (never a mix of two), and one reader's
// successive reads never go back to an earlier prefix. Run with -race.
func TestConcurrentReadsSeePrefixSnapshots(t *testing.T) {
	e := newEnv(t, "small")
	paths := []string{"snap/a.txt", "snap/b.txt", "snap/d/c.txt", "snap/d/e.txt"}
	rapid.Check(t, func(rt *rapid.T) {
		// The model: states[i] is the view of snap/ after the first i
		// writes.
		states := []map[string]string{{}}
		var ops []snapOp
		for i := range rapid.IntRange(1, 12).Draw(rt, "writes") {
			cur := maps.Clone(states[len(states)-1])
			p := rapid.SampledFrom(paths).Draw(rt, "path")
			op := snapOp{path: p, content: fmt.Sprintf("w%d %s\n", i, rapid.StringMatching(`[a-z]{0,8}`).Draw(rt, "text"))}
			if _, ok := cur[p]; ok && rapid.Bool().Draw(rt, "delete") {
				op = snapOp{path: p, del: true}
				delete(cur, p)
			} else {
				cur[p] = op.content
			}
			ops = append(ops, op)
			states = append(states, cur)
		}
		readers := rapid.IntRange(1, 3).Draw(rt, "readers")

		s := e.create(session.CreateOptions{})
		ctx := e.t.Context()
		var wg sync.WaitGroup
		var writing atomic.Bool
		writing.Store(true)
		wg.Go(func() {
			defer writing.Store(false)
			for _, op := range ops {
				var err error
				if op.del {
					_, err = e.m.Delete(ctx, s.ID, op.path, false, "")
				} else {
					_, _, err = e.m.Write(ctx, s.ID, op.path, []byte(op.content), session.WriteOptions{})
				}
				if err != nil {
					rt.Errorf("%+v: %v", op, err)
					return
				}
			}
		})
		seen := make([][]int, readers) // per reader: the prefixes it saw
		for r := range readers {
			wg.Go(func() {
				at := 0
				for more := true; more; {
					more = writing.Load() // one more read after the writer is done
					view, err := snapView(ctx, e.m, s.ID)
					if err != nil {
						rt.Errorf("reader %d: %v", r, err)
						return
					}
					i := slices.IndexFunc(states[at:], func(st map[string]string) bool { return maps.Equal(st, view) })
					if i < 0 {
						rt.Errorf("reader %d: view %v is no state from prefix %d on of %v", r, view, at, states)
						return
					}
					at += i
					seen[r] = append(seen[r], at)
					// A listing, too, is one of the states from there on.
					infos, err := e.m.ListFiles(ctx, s.ID, session.ListOptions{Glob: "snap/**"})
					if err != nil {
						rt.Errorf("reader %d: %v", r, err)
						return
					}
					var names []string
					for _, fi := range infos {
						if fi.Type != "dir" {
							names = append(names, fi.Path)
						}
					}
					j := slices.IndexFunc(states[at:], func(st map[string]string) bool {
						return slices.Equal(slices.Sorted(maps.Keys(st)), slices.Sorted(slices.Values(names)))
					})
					if j < 0 {
						rt.Errorf("reader %d: listing %v is no state from prefix %d on of %v", r, names, at, states)
						return
					}
					at += j
				}
			})
		}
		wg.Wait()
		// The last read came after every write: it saw the final view
		// (as the earliest prefix with that view: a delete can bring an
		// earlier state back).
		for r := range readers {
			if n := len(seen[r]); n == 0 || !maps.Equal(states[seen[r][n-1]], states[len(ops)]) {
				rt.Errorf("reader %d: last read saw prefix %v, want the view after all %d writes", r, seen[r], len(ops))
			}
		}
	})
}

// snapView is snap/ of the session's view as one search sees it: each
// file's one line.
func snapView(ctx context.Context, m *session.Manager, id uuid.UUID) (map[string]string, error) {
	res, err := m.Search(ctx, id, session.SearchOptions{Pattern: "^", Glob: "snap/**", MaxResults: 100})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, mt := range res.Matches {
		if strings.HasPrefix(mt.Path, "snap/") {
			out[mt.Path] = mt.Text + "\n"
		}
	}
	return out, nil
}
