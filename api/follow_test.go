package api

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
)

// TestFollowExec: GET /v1/sessions/{id}/exec, opened before a command
// runs, streams that command's start (argv), its output on both streams
// and its end with the exit code, then the next command's; an unknown
// session is 404.
func TestFollowExec(t *testing.T) {
	e := newDaemonEnv(t, Config{})
	ts := &testServer{t: t, URL: e.srv.URL, m: e.m, repo: e.repo}
	sid := ts.newSession()

	req, err := http.NewRequestWithContext(t.Context(), "GET", e.srv.URL+"/v1/sessions/"+sid+"/exec", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	// The headers arrived: the follower is registered.
	lines := bufio.NewScanner(resp.Body)
	next := func() apitypes.ExecFollowEvent {
		t.Helper()
		for lines.Scan() {
			if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				var ev apitypes.ExecFollowEvent
				require.NoError(t, json.Unmarshal([]byte(data), &ev))
				return ev
			}
		}
		require.NoError(t, lines.Err())
		t.Fatal("the stream ended")
		return apitypes.ExecFollowEvent{}
	}
	run := func(argv []string) {
		body, _ := json.Marshal(map[string]any{"argv": argv})
		r := ts.call("POST", "/v1/sessions/"+sid+"/exec", body)
		assert.Equal(t, 200, r.StatusCode, "%s", r.body)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		run([]string{"sh", "-c", "echo one; echo two >&2; exit 4"})
	}()
	ev := next()
	assert.Equal(t, "start", ev.Type)
	assert.Equal(t, []string{"sh", "-c", "echo one; echo two >&2; exit 4"}, ev.Argv)
	require.NotNil(t, ev.At)
	out := map[string]string{}
	for ev = next(); ev.Type == "output"; ev = next() {
		out[ev.Stream] += ev.Data
	}
	assert.Equal(t, map[string]string{"stdout": "one\n", "stderr": "two\n"}, out)
	assert.Equal(t, "end", ev.Type)
	require.NotNil(t, ev.ExitCode)
	assert.Equal(t, 4, *ev.ExitCode)
	<-done

	// The same stream follows the next command.
	done = make(chan struct{})
	go func() {
		defer close(done)
		run([]string{"true"})
	}()
	ev = next()
	assert.Equal(t, "start", ev.Type)
	assert.Equal(t, []string{"true"}, ev.Argv)
	ev = next()
	assert.Equal(t, "end", ev.Type)
	assert.Equal(t, 0, *ev.ExitCode)
	<-done

	r := ts.call("GET", "/v1/sessions/00000000-0000-0000-0000-000000000000/exec", nil)
	assert.Equal(t, 404, r.StatusCode, "%s", r.body)
}
