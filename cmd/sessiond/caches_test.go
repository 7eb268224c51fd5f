package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestToolCachesOverHTTP: sessions of a repository share its tool caches
// through the API; caches private on POST /v1/sessions or on one exec
// opts out; a value other than shared or private is 400 and makes
// nothing.
func TestToolCachesOverHTTP(t *testing.T) {
	plainRunOnly(t, "commands in namespaces in the daemon's binary")
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	d := newDaemon(t, stores[0], "--repo", "r="+repo, "--cache-bytes", "1GiB")
	a, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	assert.Equal(t, "shared", a.Caches)
	res, err := d.C.Exec(ctx, a.ID, apitypes.ExecRequest{Command: `echo shared > "$GOCACHE/marker"`}, nil)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Stderr)

	b, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	res, err = d.C.Exec(ctx, b.ID, apitypes.ExecRequest{Command: `cat "$GOCACHE/marker"`}, nil)
	require.NoError(t, err)
	assert.Equal(t, "shared\n", res.Stdout)
	res, err = d.C.Exec(ctx, b.ID, apitypes.ExecRequest{Command: `cat "$GOCACHE/marker"`, Caches: "private"}, nil)
	require.NoError(t, err)
	assert.NotEqual(t, 0, res.ExitCode, "caches private on the request still saw the shared cache")

	// The same through the command line.
	clientEnv(t, d, b.ID)
	r := runCLI(t, "", "exec", "--", "sh", "-c", `cat "$GOCACHE/marker"`)
	assert.Equal(t, "shared\n", r.stdout, r.stderr)
	r = runCLI(t, "", "exec", "--caches", "private", "--", "sh", "-c", `cat "$GOCACHE/marker"`)
	assert.NotEqual(t, exitOK, r.code, "sessiond exec --caches private still saw the shared cache")
	r = runCLI(t, "", "exec", "--caches", "public", "--", "true")
	assert.Equal(t, exitUsage, r.code, r.stderr)

	p, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", Caches: "private"})
	require.NoError(t, err)
	got, err := d.C.GetSession(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, "private", got.Caches)
	res, err = d.C.Exec(ctx, p.ID, apitypes.ExecRequest{Command: `cat "$GOCACHE/marker"`}, nil)
	require.NoError(t, err)
	assert.NotEqual(t, 0, res.ExitCode, "a private session saw the shared cache")

	before, err := d.C.ListSessions(ctx, client.SessionFilter{})
	require.NoError(t, err)
	_, err = d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", Caches: "public"})
	require.Error(t, err)
	assert.Equal(t, "bad_request", apiCode(err), "%v", err)
	after, err := d.C.ListSessions(ctx, client.SessionFilter{})
	require.NoError(t, err)
	assert.Len(t, after, len(before), "a refused session was made")
	_, err = d.C.Exec(ctx, b.ID, apitypes.ExecRequest{Command: "true", Caches: "public"}, nil)
	require.Error(t, err)
	assert.Equal(t, "bad_request", apiCode(err), "%v", err)
}
