package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestRepoPolicyCLI: `sessiond repo policy show|set` reads and changes
// what GET and PUT /v1/repos/{repo}/policy do, in words for a person and
// as the API's JSON with --json; set changes only what its flags and JSON
// name, and bad input changes nothing.
func TestRepoPolicyCLI(t *testing.T) {
	plainRunOnly(t, "the CLI's policies against the daemon's binary")
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	d := newDaemon(t, stores[0], "--repo", "r="+repo, "--admin-token", "admin-secret")
	clientEnv(t, d, "")
	api := func() apitypes.RepoPolicy {
		t.Helper()
		p, err := d.C.RepoPolicy(ctx, "r")
		require.NoError(t, err)
		return p
	}

	r := runCLI(t, "", "repo", "policy", "show", "r")
	require.Equal(t, exitOK, r.code, r.stderr)
	for _, want := range []string{"policy of r", "required approvals  none: an open changeset may be accepted",
		"checked-out branch  allowed: the work tree moves with the branch when it is clean", "stale reads         reported",
		"exec network        own loopback only", "exec memory         the daemon's",
		"service idle stop   after 30m0s with no request through a port and no command (the default)"} {
		assert.Contains(t, r.stdout, want)
	}
	r = runCLI(t, "", "repo", "policy", "show", "r", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var shown apitypes.RepoPolicy
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown))
	assert.Equal(t, api(), shown, "--json is the API's answer")
	require.NotNil(t, shown.AllowCheckedOut)
	assert.True(t, *shown.AllowCheckedOut, "the default")

	r = runCLI(t, "", "repo", "policy", "set", "r", "--required-approvals", "2", "--allow-checked-out=false",
		"--exec-network", "--exec-memory", "512MiB", "--exec-cpu-weight", "50", "--exec-service-idle-seconds", "600")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "service idle stop   after 10m0s with no request")
	assert.Contains(t, r.stdout, "required approvals  2 approvals")
	assert.Contains(t, r.stdout, "checked-out branch  refused")
	assert.Contains(t, r.stdout, "exec memory         512 MiB")
	p := api()
	assert.Equal(t, 2, p.RequiredApprovals)
	assert.False(t, *p.AllowCheckedOut)
	assert.Equal(t, apitypes.ExecPolicy{Network: true, MemoryBytes: 512 << 20, CPUWeight: 50, ServiceIdleSeconds: 600}, *p.Exec)

	// JSON names some fields, an object's field by field; flags after it.
	r = runCLI(t, "", "repo", "policy", "set", "r", `{"exec":{"pids":64},"refuse_stale_reads":true}`, "--required-approvals", "1", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var set apitypes.RepoPolicy
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &set))
	assert.Equal(t, api(), set)
	assert.Equal(t, 1, set.RequiredApprovals)
	assert.True(t, set.RefuseStaleReads)

	// Required checks, by JSON; the other fields stay.
	r = runCLI(t, "", "repo", "policy", "set", "r", `{"required_checks":[["go","test","./..."],["make","lint"]]}`)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "required checks     go test ./...; make lint")
	assert.Equal(t, [][]string{{"go", "test", "./..."}, {"make", "lint"}}, api().RequiredChecks)
	assert.Equal(t, 1, api().RequiredApprovals)
	r = runCLI(t, "", "repo", "policy", "set", "r", `{"required_checks":[[]]}`)
	assert.NotEqual(t, exitOK, r.code)
	assert.Contains(t, r.stderr, "required_checks[0]")
	assert.Len(t, api().RequiredChecks, 2, "a bad policy changes nothing")
	r = runCLI(t, "", "repo", "policy", "set", "r", `{"required_checks":[]}`)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "required checks     none")
	assert.False(t, *set.AllowCheckedOut, "not named: kept")
	assert.Equal(t, apitypes.ExecPolicy{Network: true, MemoryBytes: 512 << 20, CPUWeight: 50, Pids: 64, ServiceIdleSeconds: 600}, *set.Exec)
	r = runCLI(t, `{"allow_checked_out": true}`, "repo", "policy", "set", "r", "-")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.True(t, *api().AllowCheckedOut, "JSON from standard input")

	// Bad input: a clear error, and the policy as it was.
	before := api()
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		error string
	}{
		{"nothing to set", []string{"repo", "policy", "set", "r"}, exitUsage, "nothing to change"},
		{"a field the API has not", []string{"repo", "policy", "set", "r", `{"approvals":3}`}, exitUsage, `unknown field "approvals"`},
		{"a value of the wrong type", []string{"repo", "policy", "set", "r", `{"required_approvals":"two"}`}, exitUsage, "required_approvals"},
		{"not JSON", []string{"repo", "policy", "set", "r", "false"}, exitUsage, "JSON"},
		{"a size that does not parse", []string{"repo", "policy", "set", "r", "--exec-memory", "10 parsecs"}, exitUsage, "--exec-memory"},
		{"a number the API refuses", []string{"repo", "policy", "set", "r", "--required-approvals=-1"}, exitError, "required approvals -1"},
		{"a limit the API refuses", []string{"repo", "policy", "set", "r", "--exec-cpu-weight", "20000"}, exitError, "cpu_weight"},
		{"no such repository", []string{"repo", "policy", "show", "nosuch"}, exitError, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, "", tc.args...)
			assert.Equal(t, tc.code, r.code, r.stdout+r.stderr)
			assert.Contains(t, r.stderr, tc.error)
			assert.Equal(t, before, api(), "nothing changed")
		})
	}
}
