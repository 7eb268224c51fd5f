package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEventStreamAfterNow: ?after=now starts a stream after the newest
// event instead of replaying the log, naming that id first, so a client
// that resumes from it misses nothing; a JSON listing refuses it.
func TestEventStreamAfterNow(t *testing.T) {
	e := newDaemonEnv(t, Config{})
	ts := &testServer{t: t, URL: e.srv.URL, m: e.m, repo: e.repo}
	sid := ts.newSession()
	for i := range 3 {
		r := ts.call("PUT", "/v1/sessions/"+sid+"/files/old"+strconv.Itoa(i)+".txt", []byte("x\n"))
		require.Equal(t, 201, r.StatusCode, "%s", r.body)
	}
	newest, err := e.en.Events.Latest(t.Context())
	require.NoError(t, err)
	require.Positive(t, newest)

	for _, path := range []string{"/v1/repos/r/events?after=now", "/v1/sessions/" + sid + "/events?after=now"} {
		t.Run(path, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
			require.NoError(t, err)
			req.Header.Set("Accept", "text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, 200, resp.StatusCode)
			rd := bufio.NewReader(resp.Body)
			block := func() []string {
				t.Helper()
				var lines []string
				for {
					l, err := rd.ReadString('\n')
					require.NoError(t, err)
					l = strings.TrimSuffix(l, "\n")
					if l == "" {
						if len(lines) > 0 && !strings.HasPrefix(lines[0], ":") {
							return lines
						}
						lines = nil
						continue
					}
					lines = append(lines, l)
				}
			}
			first := block()
			assert.Equal(t, []string{"retry: 2000", "id: " + strconv.FormatInt(newest, 10)}, first, "the newest id, no replay")
			r := ts.call("PUT", "/v1/sessions/"+sid+"/files/new.txt", []byte(path+"\n"))
			require.Contains(t, []int{200, 201}, r.StatusCode, "%s", r.body)
			next := block()
			var data string
			for _, l := range next {
				if v, ok := strings.CutPrefix(l, "data: "); ok {
					data = v
				}
			}
			var ev struct {
				ID      int64           `json:"id"`
				Type    string          `json:"type"`
				Payload json.RawMessage `json:"payload"`
			}
			require.NoError(t, json.Unmarshal([]byte(data), &ev), "%q", next)
			assert.Greater(t, ev.ID, newest)
			assert.Equal(t, "file.written", ev.Type)
			newest = ev.ID
		})
	}
	r := ts.call("GET", "/v1/sessions/"+sid+"/events?after=now", nil, "Accept", "application/json")
	assert.Equal(t, 400, r.StatusCode, "a listing has no now: %s", r.body)
}
