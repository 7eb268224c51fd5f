package changeset_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/session"
)

// TestViewSymbols: a view carries its changeset's symbol summary, composed
// here once for every way it is shown (submit, get, review): the changed
// files the session graph parses, without the ones it does not.
func TestViewSymbols(t *testing.T) {
	e := newEnv(t, "small")
	ctx := t.Context()
	g := graph.New(graph.Config{Events: e.en.Events})
	t.Cleanup(g.Close)
	cs := e.en.WithSummaries(g).Changesets
	s := e.create(session.CreateOptions{})
	e.write(s.ID, "limits.go", "package p\n\n// Limits bound a scan.\ntype Limits struct{ Max int }\n\nfunc Parse() {}\n")
	e.write(s.ID, "notes.txt", "not code\n")
	want := []graph.Key{{Kind: graph.KindType, Name: "Limits"}, {Kind: graph.KindFunc, Name: "Parse"}}

	sub, err := cs.Submit(ctx, s.ID, changeset.SubmitOptions{Intent: "limits"})
	require.NoError(t, err)
	got, err := cs.View(ctx, sub.ID)
	require.NoError(t, err)
	_, rev, err := cs.Review(ctx, sub.ID, changeset.ReviewInput{Verdict: changeset.VerdictComment, Body: "ok",
		Reviewer: changeset.Reviewer{Name: "alice", Kind: changeset.ReviewerToken}})
	require.NoError(t, err)
	for name, v := range map[string]changeset.View{"submit": sub, "view": got, "review": rev} {
		require.Len(t, v.Symbols, 1, name)
		assert.Equal(t, "limits.go", v.Symbols[0].Path, name)
		assert.Equal(t, "added", v.Symbols[0].Status, name)
		assert.Equal(t, want, v.Symbols[0].Added, name)
	}

	// Without a summarizer a view has no symbols at all.
	plain, err := e.cs.View(ctx, sub.ID)
	require.NoError(t, err)
	assert.Nil(t, plain.Symbols)
	assert.Equal(t, 2, plain.Stats.Files)
}
