package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestCrashDebrisKeepsFilesReadable is the reproduction: 20 files
// written in a session, the daemon stopped, a valid pack copied into
// objects/pack under 16 names with no index and temporary pack and index
// files added (what kills mid-write leave), the daemon started again:
// every file reads back.
func TestCrashDebrisKeepsFilesReadable(t *testing.T) {
	plainRunOnly(t, "the daemon's binary on crash debris")
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			repo := testrepo.Build(t, "small")
			d := newDaemon(t, st, "--repo", "r="+repo)
			s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
			require.NoError(t, err)
			for i := range 20 {
				_, err := d.C.WriteFile(ctx, s.ID, fmt.Sprintf("acked/f%02d.txt", i), fmt.Appendf(nil, "file %d\n", i), client.WriteOptions{})
				require.NoError(t, err)
			}
			d.Stop()

			packDir := filepath.Join(repo, ".git", "objects", "pack")
			packs, _ := filepath.Glob(filepath.Join(packDir, "pack-*.pack"))
			require.NotEmpty(t, packs)
			some, err := os.ReadFile(packs[len(packs)-1])
			require.NoError(t, err)
			for _, c := range "0123456789abcdef" {
				require.NoError(t, os.WriteFile(filepath.Join(packDir, "pack-"+strings.Repeat(string(c), 40)+".pack"), some, 0o444))
			}
			require.NoError(t, os.WriteFile(filepath.Join(packDir, "tmp_pack_1"), some[:len(some)/2], 0o444))
			require.NoError(t, os.WriteFile(filepath.Join(packDir, "tmp_idx_2"), []byte("\377tOc\x00"), 0o444))

			d.Start()
			readable := 0
			for i := range 20 {
				data, _, err := d.C.ReadFile(ctx, s.ID, fmt.Sprintf("acked/f%02d.txt", i))
				if assert.NoError(t, err, "file %d", i) && assert.Equal(t, fmt.Sprintf("file %d\n", i), string(data)) {
					readable++
				}
			}
			assert.Equal(t, 20, readable, "acknowledged files readable after the restart")
		})
	}
}

// TestMissingBlobIsInternalError: a branch whose tree names a blob the
// repository lacks. Reading that file is a 500 naming the object, never a
// 404 (which would say the file does not exist); its neighbours read fine.
func TestMissingBlobIsInternalError(t *testing.T) {
	plainRunOnly(t, "the daemon's binary missing a blob")
	ctx := t.Context()
	repo := testrepo.Build(t, "small")
	ghost := strings.Repeat("ab", 20)
	entries := git(t, repo, "ls-tree", "main")
	tree := strings.TrimSpace(testrepo.GitInput(t, repo, []byte(entries+"\n100644 blob "+ghost+"\tghost.txt\n"), "mktree", "--missing"))
	commit := strings.TrimSpace(testrepo.GitInput(t, repo, []byte("broken\n"), "commit-tree", tree, "-p", "main"))
	git(t, repo, "update-ref", "refs/heads/broken", commit)

	d := newDaemon(t, stores[0], "--repo", "r="+repo)
	s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "broken"})
	require.NoError(t, err)
	_, _, err = d.C.ReadFile(ctx, s.ID, "ghost.txt")
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 500, ce.Status, "%v", err)
	assert.Equal(t, apitypes.CodeInternal, ce.Code)
	assert.Contains(t, ce.Message, ghost)
	_, _, err = d.C.ReadFile(ctx, s.ID, "README.md")
	assert.NoError(t, err)
	_, _, err = d.C.ReadFile(ctx, s.ID, "no-such-file.txt")
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 404, ce.Status, "an absent path is still 404")
}

// TestStartSettlesInterruptedAccepts: what a kill -9 in the middle of two
// accepts leaves, made by hand while the daemon is stopped: one accept in
// flight whose commit is on the branch (killed after the ref moved), one
// whose commit is not (killed before). Started again, the daemon records
// the first as accepted with that commit, its layer and its session
// accepted, and forgets the second, which is open as before and accepts.
func TestStartSettlesInterruptedAccepts(t *testing.T) {
	plainRunOnly(t, "the daemon's binary settling interrupted accepts")
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			bare := testrepo.BuildBare(t, "small")
			d := newDaemon(t, st, "--repo", "bare="+bare)
			submit := func(path string) (apitypes.Session, apitypes.Changeset) {
				s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "bare", Base: "main"})
				require.NoError(t, err)
				_, err = d.C.WriteFile(ctx, s.ID, path, []byte(path+"\n"), client.WriteOptions{})
				require.NoError(t, err)
				c, err := d.C.Submit(ctx, s.ID, apitypes.SubmitRequest{})
				require.NoError(t, err)
				return s, c
			}
			landedSession, landed := submit("landed.txt")
			_, dropped := submit("dropped.txt")
			d.Stop()

			base := git(t, bare, "rev-parse", "main")
			commitOf := func(c apitypes.Changeset) string {
				tree := git(t, bare, "rev-parse", c.HeadCommit+"^{tree}")
				return git(t, bare, "commit-tree", tree, "-p", base, "-m", "accept\n\nSessiond-Changeset: "+c.ID+"\nSessiond-Revision: 1")
			}
			onBranch, offBranch := commitOf(landed), commitOf(dropped)
			git(t, bare, "update-ref", "refs/heads/main", onBranch, base)
			s, err := db.Open(ctx, d.DBURL, d.DataDir)
			require.NoError(t, err)
			for id, commit := range map[string]string{landed.ID: onBranch, dropped.ID: offBranch} {
				require.NoError(t, s.Changesets().BeginAccept(ctx, uuid.MustParse(id),
					changeset.Accepting{Commit: gitstore.MustParseOID(commit), Revision: 1}))
			}
			require.NoError(t, s.Close())

			d.Start()
			got, err := d.C.GetChangeset(ctx, landed.ID)
			require.NoError(t, err)
			assert.Equal(t, "accepted", got.Status)
			assert.Equal(t, onBranch, got.AcceptedCommit)
			sess, err := d.C.GetSession(ctx, landedSession.ID)
			require.NoError(t, err)
			assert.Equal(t, "accepted", sess.State)
			layers, err := d.C.Layers(ctx, "bare", "main")
			require.NoError(t, err)
			require.Len(t, layers, 1)
			assert.Equal(t, landed.ID, layers[0].Changeset)
			assert.Equal(t, onBranch, layers[0].Commit)
			assert.Contains(t, d.Logs.String(), "recorded an interrupted accept")

			got, err = d.C.GetChangeset(ctx, dropped.ID)
			require.NoError(t, err)
			assert.Equal(t, "open", got.Status, "as before the accept")
			res, err := d.C.Accept(ctx, dropped.ID, apitypes.AcceptRequest{})
			require.NoError(t, err)
			assert.False(t, res.Recovered)
			assert.Equal(t, onBranch, git(t, bare, "rev-parse", "main^"))
			assert.Equal(t, res.Commit, git(t, bare, "rev-parse", "main"))
		})
	}
}
