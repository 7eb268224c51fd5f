package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/graph"
)

// TestEventsNameNoOtherSession makes session a receive an event of every
// type the engines append, with session b overlapping it, and reads a's
// events with a's token (the stored list and the stream): no event names
// b's id, while the overlap still says what overlaps. The admin's view of
// the same events keeps b's id.
func TestEventsNameNoOtherSession(t *testing.T) {
	e := newDaemonEnv(t, Config{AdminToken: testAdminToken})
	admin := bearer(testAdminToken)
	var a, b apitypes.Session
	e.must(http.StatusCreated, req{"POST", "/v1/sessions", map[string]any{"repo": "r", "base": "main", "agent_id": "agent-a"}, admin}, &a)
	e.must(http.StatusCreated, req{"POST", "/v1/sessions", map[string]any{"repo": "r", "base": "main", "agent_id": "agent-b"}, admin}, &b)
	at, bt := bearer(a.Token), bearer(b.Token)
	sa, sb := "/v1/sessions/"+a.ID, "/v1/sessions/"+b.ID

	// Both change README.md: the graph reports the overlap to each.
	e.must(http.StatusOK, req{"PUT", sa + "/files/README.md", "a's readme\n", at}, nil)
	e.must(http.StatusOK, req{"PUT", sb + "/files/README.md", "b's readme\n", bt}, nil)
	list := func(path string, token []string) []apitypes.Event {
		t.Helper()
		var evs apitypes.Events
		e.must(http.StatusOK, req{"GET", path + "/events", nil, append([]string{"Accept", "application/json"}, token...)}, &evs)
		return evs.Events
	}
	has := func(evs []apitypes.Event, typ string) bool {
		return slices.ContainsFunc(evs, func(ev apitypes.Event) bool { return ev.Type == typ })
	}
	require.Eventually(t, func() bool {
		return has(list(sa, admin), graph.EventOverlapDetected) && has(list(sb, admin), graph.EventOverlapDetected)
	}, 20*time.Second, 20*time.Millisecond)

	// Every other type, on a.
	e.must(http.StatusCreated, req{"PUT", sa + "/files/gone.txt", "x\n", at}, nil)
	e.must(http.StatusOK, req{"DELETE", sa + "/files/gone.txt", nil, at}, nil)
	e.must(http.StatusCreated, req{"POST", sa + "/checkpoints", map[string]any{"label": "one"}, at}, nil)
	e.must(http.StatusOK, req{"POST", sa + "/exec", map[string]any{"command": "echo ran > ran.txt"}, at}, nil)
	var cs apitypes.Changeset
	e.must(http.StatusCreated, req{"POST", sa + "/changesets", nil, at}, &cs)
	e.must(http.StatusCreated, req{"PUT", sa + "/files/later.txt", "later\n", at}, nil)
	e.must(http.StatusCreated, req{"POST", sa + "/changesets", nil, at}, &cs)
	e.must(http.StatusCreated, req{"POST", "/v1/changesets/" + cs.ID + "/reviews", map[string]any{"verdict": "comment", "body": "seen"}, admin}, nil)
	e.must(http.StatusOK, req{"POST", "/v1/changesets/" + cs.ID + "/accept", nil, admin}, nil)
	e.must(http.StatusOK, req{"POST", "/v1/changesets/" + cs.ID + "/undo", nil, admin}, nil)

	for _, c := range []struct {
		name       string
		path       string
		token      []string
		self, peer apitypes.Session
	}{{"a", sa, at, a, b}, {"b", sb, bt, b, a}} {
		t.Run(c.name, func(t *testing.T) {
			evs := list(c.path, c.token)
			var types []string
			for _, ev := range evs {
				raw, err := json.Marshal(ev)
				require.NoError(t, err)
				assert.NotContains(t, string(raw), c.peer.ID, "a %s event names the other session", ev.Type)
				if !slices.Contains(types, ev.Type) {
					types = append(types, ev.Type)
				}
				if ev.Type == graph.EventOverlapDetected {
					p := ev.Payload.(map[string]any)
					assert.Equal(t, "README.md", p["path"], "what overlaps is still said")
					assert.Equal(t, c.peer.AgentID, p["other_agent"])
					assert.Equal(t, c.self.ID, p["session"])
					assert.NotContains(t, p, "other")
				}
			}
			if c.name == "a" {
				slices.Sort(types)
				want := slices.Clone(eventTypes)
				slices.Sort(want)
				assert.Equal(t, want, types, "a received every event type; a new type needs a row here")
			}
			// The stream is narrowed the same way.
			status, block := e.streamUntil(c.path+"/events", c.token, graph.EventOverlapDetected)
			require.Equal(t, http.StatusOK, status)
			assert.NotContains(t, block, c.peer.ID)
			assert.Contains(t, block, "README.md")

			// The admin sees who.
			var other []string
			for _, ev := range list(c.path, admin) {
				if ev.Type == graph.EventOverlapDetected {
					other = append(other, ev.Payload.(map[string]any)["other"].(string))
				}
			}
			assert.Contains(t, other, c.peer.ID)
			status, block = e.streamUntil(c.path+"/events", admin, graph.EventOverlapDetected)
			require.Equal(t, http.StatusOK, status)
			assert.True(t, strings.Contains(block, c.peer.ID))
		})
	}
}
