package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestCLIAcceptSelect: changeset accept --select takes whole files and
// hunks numbered from 1; --dry-run shows the commit's diff and writes
// nothing; a hunk that does not exist is the API's 400 (exit 1) and
// writes nothing.
func TestCLIAcceptSelect(t *testing.T) {
	plainRunOnly(t, "partial accepts through the CLI against the daemon's binary")
	repo := testrepo.BuildBare(t, "small")
	d := newDaemon(t, stores[0], "--repo", "r="+repo)
	ctx := t.Context()
	text := func(edit map[int]string) []byte {
		var b strings.Builder
		for i := 1; i <= 30; i++ {
			if s, ok := edit[i]; ok {
				b.WriteString(s + "\n")
			} else {
				fmt.Fprintf(&b, "line %d\n", i)
			}
		}
		return []byte(b.String())
	}
	s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	_, err = d.C.WriteFile(ctx, s.ID, "doc.txt", text(nil), client.WriteOptions{})
	require.NoError(t, err)
	cs, err := d.C.Submit(ctx, s.ID, apitypes.SubmitRequest{})
	require.NoError(t, err)
	_, err = d.C.Accept(ctx, cs.ID, apitypes.AcceptRequest{})
	require.NoError(t, err)

	s, err = d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	_, err = d.C.WriteFile(ctx, s.ID, "doc.txt", text(map[int]string{1: "one", 15: "fifteen", 30: "thirty"}), client.WriteOptions{})
	require.NoError(t, err)
	_, err = d.C.WriteFile(ctx, s.ID, "new.txt", []byte("new\n"), client.WriteOptions{})
	require.NoError(t, err)
	cs, err = d.C.Submit(ctx, s.ID, apitypes.SubmitRequest{})
	require.NoError(t, err)
	head := testrepo.Git(t, repo, "rev-parse", "main")

	cli := func(args ...string) cliResult {
		t.Helper()
		return runCLI(t, "", append(args, "--server", d.URL)...)
	}
	r := cli("changeset", "accept", cs.ID, "--select", "doc.txt:4")
	assert.Equal(t, exitError, r.code, r.stderr)
	assert.Contains(t, r.stderr, "no hunk 3")
	assert.Equal(t, head, testrepo.Git(t, repo, "rev-parse", "main"))

	r = cli("changeset", "accept", cs.ID, "--select", "doc.txt:1,3", "--select", "new.txt", "--dry-run")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "dry run")
	assert.Contains(t, r.stdout, "+thirty")
	assert.NotContains(t, r.stdout, "+fifteen")
	assert.Contains(t, r.stdout, "new.txt")
	assert.Equal(t, head, testrepo.Git(t, repo, "rev-parse", "main"), "a dry run writes nothing")

	r = cli("changeset", "accept", cs.ID, "--select", "doc.txt:1,3", "--revision", "2")
	assert.Equal(t, exitConflict, r.code, "another revision: %s", r.stderr)

	r = cli("changeset", "accept", cs.ID, "--select", "doc.txt:1,3", "--select", "new.txt", "--revision", "1", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var res apitypes.AcceptResult
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	assert.Equal(t, res.Commit, testrepo.Git(t, repo, "rev-parse", "main"))
	assert.Equal(t, string(text(map[int]string{1: "one", 30: "thirty"})), testrepo.Git(t, repo, "show", "main:doc.txt")+"\n")
	assert.Equal(t, "new", testrepo.Git(t, repo, "show", "main:new.txt"))
	require.NotNil(t, res.Selection)
	assert.Equal(t, []int{1}, res.Selection.LeftOut.Hunks["doc.txt"])
	assert.True(t, res.SessionRebased)
}
