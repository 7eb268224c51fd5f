package api

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
)

// TestMetricsLabelsBounded: the request metrics are labelled by route
// pattern, method and status, never by what a client chose: requests for
// many sessions, paths and made-up methods add no series beyond those of
// the routes they hit.
func TestMetricsLabelsBounded(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	st, err := db.OpenSQLiteDir(ctx, dir)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	m := session.NewManager(session.Config{Store: st, DataDir: dir})
	t.Cleanup(func() { m.Close() })
	_, err = m.RegisterRepo(ctx, "r", testrepo.Build(t, "small"))
	require.NoError(t, err)
	srv := httptest.NewServer(New(Config{Manager: m, Changesets: changeset.New(changeset.Config{Store: st.Changesets(), Sessions: m})}))
	t.Cleanup(srv.Close)

	do := func(method, path string) {
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	var ids []string
	for i := range 30 {
		s, err := m.Create(ctx, session.CreateOptions{Repo: "r"})
		require.NoError(t, err)
		ids = append(ids, s.ID.String())
		do("GET", "/v1/sessions/"+s.ID.String())
		do("GET", fmt.Sprintf("/v1/sessions/%s/files/f%d.txt", s.ID, i))
		do("GET", "/v1/sessions/"+uuid.NewString())
		do(fmt.Sprintf("BREW%d", i), "/v1/sessions/"+s.ID.String())
		do("GET", fmt.Sprintf("/no/such/route/%d", i))
	}

	resp, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	series := 0
	for _, l := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(l, "sessiond_http_requests_total{") {
			continue
		}
		series++
		for _, id := range ids {
			assert.NotContains(t, l, id, "a session id in a label")
		}
		assert.NotContains(t, l, "BREW", "a client's method in a label")
		assert.NotContains(t, l, "/no/such", "a client's path in a label")
	}
	// get session (200 and 404), read file (404), the made-up methods
	// (405), the unmatched paths (404).
	assert.LessOrEqual(t, series, 5, "series of sessiond_http_requests_total:\n%s", body)
	assert.Positive(t, series)
}
