package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/session"
)

// TestMetricsLabelsBounded: the request metrics are labelled by route
// pattern, method and status, never by what a client chose: requests for
// many sessions, paths and made-up methods add no series beyond those of
// the routes they hit.
func TestMetricsLabelsBounded(t *testing.T) {
	ctx := t.Context()
	ts := newTestServer(t, "")
	var ids []string
	for i := range 30 {
		s, err := ts.m.Create(ctx, session.CreateOptions{Repo: "r"})
		require.NoError(t, err)
		ids = append(ids, s.ID.String())
		ts.call("GET", "/v1/sessions/"+s.ID.String(), nil)
		ts.call("GET", fmt.Sprintf("/v1/sessions/%s/files/f%d.txt", s.ID, i), nil)
		ts.call("GET", "/v1/sessions/"+uuid.NewString(), nil)
		ts.call(fmt.Sprintf("BREW%d", i), "/v1/sessions/"+s.ID.String(), nil)
		ts.call("GET", fmt.Sprintf("/no/such/route/%d", i), nil)
	}

	body := ts.call("GET", "/metrics", nil).body
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

// TestMetricsExposeHousekeeping: /metrics carries the housekeeping runs
// and failures of the repositories the daemon opened.
func TestMetricsExposeHousekeeping(t *testing.T) {
	ts := newTestServer(t, "")
	body := string(ts.call("GET", "/metrics", nil).body)
	for _, name := range []string{"sessiond_housekeeping_runs_total", "sessiond_housekeeping_failures_total"} {
		assert.Contains(t, body, "\n"+name+" ", name)
	}
}
