package api

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/repos"
)

// TestReadyzNamesNoRepository: with auth on, /readyz answers anyone, but
// names the repositories only to the admin token, healthy or not.
func TestReadyzNamesNoRepository(t *testing.T) {
	e := newDaemonEnv(t, Config{AdminToken: testAdminToken})
	_, err := e.en.Repos.Register(t.Context(), "secret-project", e.repo)
	require.NoError(t, err)
	ready := func(token string) (int, apitypes.Health, string) {
		t.Helper()
		status, body := e.do(req{"GET", "/readyz", nil, bearer(token)})
		var h apitypes.Health
		require.NoError(t, json.Unmarshal(body, &h), "%s", body)
		return status, h, string(body)
	}
	for _, token := range []string{"", "not-a-token", e.api.auth.sessionToken(mustUUID(t, "00000000-0000-0000-0000-000000000001")), e.api.auth.reviewerToken("rita")} {
		status, h, body := ready(token)
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, "ok", h.Status)
		assert.Equal(t, map[string]string{"store": "ok", "repos": "ok"}, h.Checks)
		assert.NotContains(t, body, "secret-project", "token %q", token)
	}
	status, h, _ := ready(testAdminToken)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "ok", h.Checks["repo:secret-project"])
	assert.Equal(t, "ok", h.Checks["repo:r"])

	// A repository gone from disk (registered, never opened since): not
	// ready, and still no names.
	gone := filepath.Join(t.TempDir(), "gone")
	require.NoError(t, os.Mkdir(gone, 0o755))
	require.NoError(t, e.st.CreateRepo(t.Context(), repos.Repo{Name: "vanished", Path: gone, CreatedAt: time.Now()}))
	require.NoError(t, os.Remove(gone))
	status, h, body := ready("")
	assert.Equal(t, http.StatusServiceUnavailable, status, "%s", body)
	assert.Equal(t, "unreachable", h.Checks["repos"])
	assert.NotContains(t, body, "secret-project")
	assert.NotContains(t, body, "vanished")
	assert.NotContains(t, body, `"repo:`)
	status, h, _ = ready(testAdminToken)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Equal(t, "unreachable", h.Checks["repo:vanished"])
	assert.Equal(t, "ok", h.Checks["repo:r"])
}

// TestReadyzWithoutAuth: with no admin token every caller is the admin,
// and sees the detail.
func TestReadyzWithoutAuth(t *testing.T) {
	e := newDaemonEnv(t, Config{})
	var h apitypes.Health
	e.must(http.StatusOK, req{"GET", "/readyz", nil, nil}, &h)
	assert.Equal(t, "ok", h.Checks["repo:r"])
}
