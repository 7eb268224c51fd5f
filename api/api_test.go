package api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/session"
)

func TestMapError(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("context: %w", err) }
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{wrap(&overlay.PathError{Rule: overlay.RuleHasDotdot, Path: "a/../b"}), 400, apitypes.CodeInvalidPath},
		{wrap(record.ErrInvalid), 400, apitypes.CodeBadRequest},
		{wrap(record.ErrForbidden), 403, apitypes.CodeForbidden},
		{wrap(session.ErrReadOnly), 403, apitypes.CodeForbidden},
		{wrap(record.ErrNotFound), 404, apitypes.CodeNotFound},
		{wrap(gitstore.ErrNotFound), 404, apitypes.CodeNotFound},
		{wrap(&record.ConflictError{Field: "head", Current: "abc"}), 409, apitypes.CodeConflict},
		{wrap(record.ErrDuplicate), 409, apitypes.CodeConflict},
		{wrap(record.ErrSessionClosed), 409, apitypes.CodeSessionClosed},
		{wrap(&session.UnresolvedError{What: "submit"}), 409, apitypes.CodeUnresolvedConflicts},
		{wrap(&session.PreconditionError{Path: "x", Current: "abc"}), 412, apitypes.CodePreconditionFailed},
		{wrap(session.ErrTooLarge), 413, apitypes.CodeTooLarge},
		{wrap(&http.MaxBytesError{Limit: 10}), 413, apitypes.CodeTooLarge},
		{wrap(record.ErrUnavailable), 503, apitypes.CodeUnavailable},
		{wrap(&record.NoSpaceError{What: record.SpaceStore}), 507, apitypes.CodeInsufficientStorage},
		{wrap(&record.NoSpaceError{What: record.SpaceObjects, Repo: "r", Err: syscall.ENOSPC}), 507, apitypes.CodeInsufficientStorage},
		{errors.New("disk on fire"), 500, apitypes.CodeInternal},
		{wrap(&gitstore.ObjectError{ID: gitstore.HashObject(gitstore.KindBlob, nil), Err: gitstore.ErrMissingObject}), 500, apitypes.CodeInternal},
		{wrap(fmt.Errorf("lookup %q: %w", "a/b", &gitstore.ObjectError{Err: fmt.Errorf("%w: x", gitstore.ErrCorrupt)})), 500, apitypes.CodeInternal},
	}
	for _, tc := range cases {
		e := mapError(tc.err)
		assert.Equal(t, tc.status, e.Status, "%v", tc.err)
		assert.Equal(t, tc.code, e.Code, "%v", tc.err)
	}
	e := mapError(wrap(&overlay.PathError{Rule: overlay.RuleHasDotdot, Path: "a/../b"}))
	assert.Equal(t, "hasDotdot", e.Details["rule"])
	assert.Equal(t, "a/../b", e.Details["path"])
	assert.Equal(t, "abc", mapError(&record.ConflictError{Field: "head", Current: "abc"}).Details["current_head"])
	missing := gitstore.HashObject(gitstore.KindBlob, []byte("gone"))
	e = mapError(wrap(&gitstore.ObjectError{ID: missing, Err: gitstore.ErrMissingObject}))
	assert.Equal(t, missing.String(), e.Details["object"])
	assert.Equal(t, "missing", e.Details["problem"])
	assert.Equal(t, "internal error", mapError(errors.New("secret detail")).Message, "internal errors keep their text out of the answer")
	e = mapError(wrap(&record.NoSpaceError{What: record.SpaceObjects, Repo: "r", Err: fmt.Errorf("write /srv/r/objects/ab: %w", syscall.ENOSPC)}))
	assert.Equal(t, map[string]any{"filled": "objects", "repo": "r"}, e.Details)
	assert.Contains(t, e.Message, `object directory of repository "r"`)
	assert.NotContains(t, e.Message, "/srv", "what filled, not the host's paths")
}

// TestEventStream checks heartbeats and that a stream is cleaned up when
// its client goes away.
func TestEventStream(t *testing.T) {
	ctx := t.Context()
	en := newEngine(t, testrepo.Build(t, "small"))
	m := en.Sessions
	s, err := m.Create(ctx, session.CreateOptions{Repo: "r"})
	require.NoError(t, err)
	srv := httptest.NewServer(New(Config{Manager: m, Repos: en.Repos, Events: en.Events, Exec: en.Exec, Changesets: en.Changesets, Heartbeat: 20 * time.Millisecond}))
	t.Cleanup(srv.Close)

	streams := func() string {
		resp, err := http.Get(srv.URL + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "sessiond_event_streams ") {
				return strings.TrimPrefix(l, "sessiond_event_streams ")
			}
		}
		return ""
	}

	sctx, cancel := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(sctx, "GET", srv.URL+"/v1/sessions/"+s.ID.String()+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	r := bufio.NewReader(resp.Body)
	var sawEvent, sawHeartbeat bool
	for !sawEvent || !sawHeartbeat {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		sawEvent = sawEvent || strings.HasPrefix(line, "event: session.state")
		sawHeartbeat = sawHeartbeat || strings.HasPrefix(line, ": heartbeat")
	}
	assert.Equal(t, "1", streams())
	cancel()
	resp.Body.Close()
	assert.Eventually(t, func() bool { return streams() == "0" }, 5*time.Second, 20*time.Millisecond)
}

// newEngine is an engine on a SQLite store in a fresh directory, with
// repo registered as "r"; it and its store close when t ends.
func newEngine(t testing.TB, repo string) *testengine.Engine {
	t.Helper()
	dir := t.TempDir()
	st, err := db.OpenSQLiteDir(t.Context(), dir)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	en := testengine.New(st, dir, session.Config{})
	t.Cleanup(func() { en.Close() })
	_, err = en.Repos.Register(t.Context(), "r", repo)
	require.NoError(t, err)
	return en
}
