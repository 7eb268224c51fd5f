package api

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
)

// A write that cannot take its session's lock fails when the write
// timeout passes, with a 503 naming it, and changes nothing; the same
// write goes through once the lock is free.
func TestWriteWaitingForALockTimesOut(t *testing.T) {
	const timeout = 300 * time.Millisecond
	e := newDaemonEnv(t, Config{WriteTimeout: timeout})
	var s struct {
		ID string `json:"id"`
	}
	e.must(http.StatusCreated, req{"POST", "/v1/sessions", map[string]any{"repo": "r", "base": "main"}, nil}, &s)
	id := mustUUID(t, s.ID)

	h, err := e.m.Hold(t.Context(), id) // as an accept holds it
	require.NoError(t, err)
	start := time.Now()
	status, body := e.do(req{"PUT", "/v1/sessions/" + s.ID + "/files/blocked.txt", "x\n", nil})
	elapsed := time.Since(start)
	h.Release()

	require.Equal(t, http.StatusServiceUnavailable, status, "%s", body)
	var got struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Timeout string `json:"timeout"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &got), "%s", body)
	assert.Equal(t, apitypes.CodeUnavailable, got.Error.Code)
	assert.Contains(t, got.Error.Message, "write timeout of 300ms")
	assert.Contains(t, got.Error.Message, "waiting for its lock")
	assert.Equal(t, "300ms", got.Error.Timeout)
	assert.GreaterOrEqual(t, elapsed, timeout, "it waited for the lock until the deadline")

	status, _ = e.do(req{"GET", "/v1/sessions/" + s.ID + "/files/blocked.txt", nil, nil})
	assert.Equal(t, http.StatusNotFound, status, "the timed-out write changed nothing")
	e.must(http.StatusCreated, req{"PUT", "/v1/sessions/" + s.ID + "/files/blocked.txt", "x\n", nil}, nil)
}

// Only requests that change state run under the write timeout.
func TestWhichRoutesWrite(t *testing.T) {
	writes := map[string]bool{}
	for _, rt := range Routes() {
		writes[rt.Method+" "+rt.Pattern] = rt.writes()
	}
	for route, want := range map[string]bool{
		"PUT " + filesPattern:             true,
		"DELETE " + filesPattern:          true,
		"POST /v1/sessions":               true,
		"POST /v1/sessions/{id}/edits":    true,
		"POST /v1/changesets/{id}/accept": true,
		"GET " + filesPattern:             false,
		"POST /v1/sessions/{id}/search":   false,
		"POST /v1/sessions/{id}/exec":     false,
		"POST /mcp":                       false,
		"GET /v1/sessions/{id}/events":    false,
	} {
		got, ok := writes[route]
		require.True(t, ok, "no route %s", route)
		assert.Equal(t, want, got, route)
	}
}
