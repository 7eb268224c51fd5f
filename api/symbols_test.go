package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/internal/graphsession"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
)

// A changeset lists the symbols it adds, modifies and removes when the
// server has the session graph.
func TestChangesetSymbols(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	st, err := db.OpenSQLiteDir(ctx, dir)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	evs := events.New(st, nil)
	g := graph.New(graph.Config{Events: evs})
	en := testengine.New(st, dir, session.Config{Events: evs, Observers: []session.Observer{graphsession.Observer(g)}}).WithSummaries(g)
	m := en.Sessions
	t.Cleanup(func() { en.Close() })
	_, err = en.Repos.Register(ctx, "r", testrepo.Build(t, "small"))
	require.NoError(t, err)
	s, err := m.Create(ctx, session.CreateOptions{Repo: "r"})
	require.NoError(t, err)
	_, _, err = m.Write(ctx, s.ID, "limits.go", []byte("package p\n\n// Limits bound a scan.\ntype Limits struct{ Max int }\n\nfunc Parse() {}\n"), session.WriteOptions{})
	require.NoError(t, err)
	srv := httptest.NewServer(New(Config{Manager: m, Repos: en.Repos, Events: en.Events, Exec: en.Exec, Changesets: en.Changesets}))
	t.Cleanup(srv.Close)

	resp, err := http.Post(srv.URL+"/v1/sessions/"+s.ID.String()+"/changesets", "application/json", bytes.NewReader([]byte(`{"intent":"limits"}`)))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	var c apitypes.Changeset
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	require.Len(t, c.Symbols, 1)
	assert.Equal(t, "limits.go", c.Symbols[0].Path)
	assert.Equal(t, "added", c.Symbols[0].Status)
	assert.Equal(t, []apitypes.SymbolKey{{Kind: string(graph.KindType), Name: "Limits"}, {Kind: string(graph.KindFunc), Name: "Parse"}}, c.Symbols[0].Added)
}
