package api

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPolicyNetworkAllowlist: PUT /v1/repos/{repo}/policy takes network
// as false, true or {"allow": [...]}, answers it in the same shape, and
// refuses with 400 naming the entry an allowlist entry that is not a
// host name, wildcard, IP address or CIDR, or a network of another
// shape, leaving the policy as it was.
func TestPolicyNetworkAllowlist(t *testing.T) {
	e := newDaemonEnv(t, Config{})
	put := func(body string) (int, map[string]any) {
		t.Helper()
		status, data := e.do(req{method: "PUT", path: "/v1/repos/r/policy", body: body, header: []string{"Content-Type", "application/json"}})
		var out map[string]any
		require.NoError(t, json.Unmarshal(data, &out), "%s", data)
		return status, out
	}
	status, out := put(`{"exec":{"network":{"allow":["proxy.golang.org","*.npmjs.org","10.0.0.0/8","2001:db8::1"]}}}`)
	require.Equal(t, http.StatusOK, status, out)
	want := map[string]any{"allow": []any{"proxy.golang.org", "*.npmjs.org", "10.0.0.0/8", "2001:db8::1"}}
	assert.Equal(t, want, out["exec"].(map[string]any)["network"])
	var got map[string]any
	e.must(http.StatusOK, req{method: "GET", path: "/v1/repos/r/policy"}, &got)
	assert.Equal(t, want, got["exec"].(map[string]any)["network"])

	for _, tc := range []struct{ body, msg string }{
		{`{"exec":{"network":{"allow":["ok.example","https://registry.npmjs.org"]}}}`, `exec.network.allow[1] \"https://registry.npmjs.org\"`},
		{`{"exec":{"network":{"allow":["10.0.0.0/99"]}}}`, `allow[0] \"10.0.0.0/99\": not a CIDR`},
		{`{"exec":{"network":{"allow":["*"]}}}`, `allow[0] \"*\"`},
		{`{"exec":{"network":{"allow":["a b"]}}}`, `allow[0] \"a b\": not a host name`},
		{`{"exec":{"network":{"allow":["x.org"],"deny":["y.org"]}}}`, `unknown field \"deny\"`},
		{`{"exec":{"network":{}}}`, "needs its allow list"},
		{`{"exec":{"network":"proxy.golang.org"}}`, `want false, true or {\"allow\"`},
	} {
		status, data := e.do(req{method: "PUT", path: "/v1/repos/r/policy", body: tc.body, header: []string{"Content-Type", "application/json"}})
		assert.Equal(t, http.StatusBadRequest, status, "%s: %s", tc.body, data)
		assert.Contains(t, string(data), tc.msg, tc.body)
		e.must(http.StatusOK, req{method: "GET", path: "/v1/repos/r/policy"}, &got)
		assert.Equal(t, want, got["exec"].(map[string]any)["network"], "nothing changed")
	}

	status, out = put(`{"exec":{"network":true}}`)
	require.Equal(t, http.StatusOK, status, out)
	assert.Equal(t, true, out["exec"].(map[string]any)["network"])
	status, out = put(`{}`)
	require.Equal(t, http.StatusOK, status, out)
	assert.Equal(t, false, out["exec"].(map[string]any)["network"])
}
