package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestCrashDebrisKeepsFilesReadable is the reproduction: 20 files
// written in a session, the daemon stopped, a valid pack copied into
// objects/pack under 16 names with no index and temporary pack and index
// files added (what kills mid-write leave), the daemon started again:
// every file reads back.
func TestCrashDebrisKeepsFilesReadable(t *testing.T) {
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
