package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/internal/graphsession"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/session"
	"github.com/sessiond/sessiond/ui"
	"github.com/sessiond/sessiond/workdir"
)

// daemonEnv is the daemon's handler as cmd/sessiond serves it (Guard
// around the review page around the API) on a real listener, over the
// embedded store, with the session graph and view directories wired as
// serve wires them (commands without namespaces, so they run anywhere).
type daemonEnv struct {
	t    testing.TB
	st   db.Store
	m    *session.Manager
	cs   *changeset.Service
	en   *testengine.Engine
	api  *Server
	srv  *httptest.Server
	repo string
	host string // the listener's host:port
}

func newDaemonEnv(t testing.TB, cfg Config) *daemonEnv {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	st, err := db.OpenSQLiteDir(ctx, dir)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	evs := events.New(st, nil)
	g := graph.New(graph.Config{Events: evs})
	t.Cleanup(g.Close)
	var en *testengine.Engine
	wd, err := workdir.New(workdir.Config{Dir: filepath.Join(dir, "workdir"), Mode: workdir.ModeCopy, NoNamespaces: true,
		Hide: func() []string { return []string{dir} }})
	require.NoError(t, err)
	t.Cleanup(func() { wd.Close() })
	en = testengine.New(st, dir, session.Config{Events: evs, Workdirs: wd, Observers: []session.Observer{graphsession.Observer(g)}},
		session.ExecConfig{MaxTimeout: time.Minute}).WithSummaries(g)
	t.Cleanup(func() { en.Close() })
	e := &daemonEnv{t: t, st: st, m: en.Sessions, cs: en.Changesets, en: en, repo: testrepo.BuildBare(t, "small")}
	_, err = en.Repos.Register(ctx, "r", e.repo)
	require.NoError(t, err)
	cfg.Repos, cfg.Events, cfg.Exec = en.Repos, en.Events, en.Exec
	cfg.Manager, cfg.Changesets = en.Sessions, e.cs
	if cfg.AdminToken != "" && cfg.TokenSecret == nil {
		cfg.TokenSecret = []byte("token secret for tests")
	}
	e.api = New(cfg)
	e.srv = httptest.NewServer(e.api.Guard(ui.Mount(e.api)))
	t.Cleanup(e.srv.Close)
	e.host = strings.TrimPrefix(e.srv.URL, "http://")
	return e
}

// req is one request to the daemon: headers in pairs; "Host" sets the
// Host header. A body that is not []byte or string is sent as JSON with
// Content-Type: application/json unless the headers set one.
type req struct {
	method, path string
	body         any
	header       []string
}

func (e *daemonEnv) do(r req) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	ctype := ""
	switch b := r.body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(e.t, err)
		rd, ctype = bytes.NewReader(data), "application/json"
	}
	hr, err := http.NewRequestWithContext(e.t.Context(), r.method, e.srv.URL+r.path, rd)
	require.NoError(e.t, err)
	if ctype != "" {
		hr.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(r.header); i += 2 {
		if r.header[i] == "Host" {
			hr.Host = r.header[i+1]
			continue
		}
		hr.Header.Set(r.header[i], r.header[i+1])
	}
	resp, err := http.DefaultClient.Do(hr)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return resp.StatusCode, data
}

// must is do that requires status want and decodes the answer into out
// (when not nil).
func (e *daemonEnv) must(want int, r req, out any) {
	e.t.Helper()
	status, body := e.do(r)
	require.Equal(e.t, want, status, "%s %s: %s", r.method, r.path, body)
	if out != nil {
		require.NoError(e.t, json.Unmarshal(body, out), "%s", body)
	}
}

func bearer(token string) []string {
	if token == "" {
		return nil
	}
	return []string{"Authorization", "Bearer " + token}
}

// stream opens an event stream and returns its first event of type typ
// (skipping others) as raw data, within a deadline.
func (e *daemonEnv) streamUntil(path string, header []string, typ string) (int, string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), 20*time.Second)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
	require.NoError(e.t, err)
	hr.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		hr.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(hr)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, ""
	}
	var all strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		all.Write(buf[:n])
		for _, block := range strings.Split(all.String(), "\n\n") {
			if strings.Contains(block, "event: "+typ+"\n") {
				return resp.StatusCode, block
			}
		}
		if err != nil {
			e.t.Fatalf("stream %s ended before a %s event: %v; got %q", path, typ, err, all.String())
		}
	}
}

// plainRunOnly skips t in make test's race detector run (-short): what
// says what t runs, all of which the plain run covers, with no goroutines
// of the daemon's own against each other for the detector to watch.
func plainRunOnly(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what + ": the plain run covers it; nothing of the daemon's races here")
	}
}
