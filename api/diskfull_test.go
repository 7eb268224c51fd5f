package api

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/internal/testengine"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/internal/tmpfs"
	"github.com/sessiond/sessiond/session"
)

// TestDiskFull fills a small tmpfs under one thing the daemon writes, the
// repository's object directory or the SQLite store, and writes files
// until a write is refused: 507 insufficient_storage naming what filled,
// and /readyz not ready naming it too, while reads go on. Then space is
// freed: /readyz is ready again, writes resume, and after a restart every
// acknowledged write reads back as written, the refused ones are absent,
// and git fsck --strict passes.
func TestDiskFull(t *testing.T) {
	plainRunOnly(t, "writes one at a time into a full tmpfs")
	cases := []struct {
		name string
		// on is what goes on the tmpfs: the repository, or the data
		// directory with sessiond.db.
		on string
		// size is each write's; filled what the refusal must name ("" for
		// the objects or the refs, whichever a write reaches first).
		size   int
		filled string
	}{
		{"objects", "repository", 512 << 10, "objects"}, // each write larger than the room left
		{"repository", "repository", 16 << 10, ""},
		{"store", "store", 64, "store"}, // the rows fill the store, not the objects
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, ok := tmpfs.Mount(t, 4<<20)
			if !ok {
				return
			}
			diskFull(t, dir, tc.on, tc.size, tc.filled)
		})
	}
}

func diskFull(t *testing.T, small, on string, size int, wantFilled string) {
	ctx := t.Context()
	// The repository and the data directory, one of them on the tmpfs.
	src := testrepo.BuildBare(t, "small")
	repo, dataDir := filepath.Join(t.TempDir(), "r.git"), t.TempDir()
	if on == "repository" {
		repo = filepath.Join(small, "r.git")
	} else {
		dataDir = filepath.Join(small, "data")
		require.NoError(t, os.Mkdir(dataDir, 0o700))
	}
	testrepo.Git(t, t.TempDir(), "clone", "--quiet", "--bare", "--no-local", src, repo)

	type daemon struct {
		st  db.Store
		en  *testengine.Engine
		srv *httptest.Server
		c   *client.Client
	}
	start := func() daemon {
		st, err := db.OpenSQLiteDir(ctx, dataDir)
		require.NoError(t, err)
		en := testengine.New(st, dataDir, session.Config{})
		srv := httptest.NewServer(New(Config{Manager: en.Sessions, Repos: en.Repos, Events: en.Events, Changesets: en.Changesets, Store: st}))
		return daemon{st: st, en: en, srv: srv, c: client.New(srv.URL, "")}
	}
	stop := func(d daemon) {
		d.srv.Close()
		require.NoError(t, d.en.Close())
		require.NoError(t, d.st.Close())
	}
	d := start()
	_, err := d.c.CreateRepo(ctx, apitypes.CreateRepoRequest{Name: "r", Path: repo})
	require.NoError(t, err)
	s, err := d.c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)

	acked := map[string][]byte{}
	var refused []string
	write := func(p string, size int) error {
		data := make([]byte, size)
		_, _ = rand.Read(data) // incompressible: the object takes its size
		_, err := d.c.WriteFile(ctx, s.ID, p, data, client.WriteOptions{})
		if err == nil {
			acked[p] = data
		}
		return err
	}
	require.NoError(t, write("before.bin", 4<<10))
	status, h := readyz(t, d.srv.URL)
	require.Equal(t, 200, status, "%v", h.Checks)

	// Fill the tmpfs, then leave a little room for writes that still
	// fit: the refusal comes in the middle of writing.
	filler := filepath.Join(small, "filler")
	fill(t, filler)
	require.NoError(t, os.Truncate(filler, fileSize(t, filler)-(192<<10)))
	var full *client.Error
	for i := 0; full == nil; i++ {
		require.Less(t, i, 400, "the tmpfs never filled")
		p := fmt.Sprintf("full/f%03d.bin", i)
		err := write(p, size)
		if err == nil {
			continue
		}
		refused = append(refused, p)
		require.ErrorAs(t, err, &full, "a write on a full device")
	}
	assert.Equal(t, 507, full.Status, "%v", full)
	assert.Equal(t, apitypes.CodeInsufficientStorage, full.Code)
	filled, _ := full.Details["filled"].(string)
	check, value := "store", "full"
	switch {
	case wantFilled != "":
		assert.Equal(t, wantFilled, filled, "names what filled")
	default:
		assert.Contains(t, []string{"objects", "refs"}, filled, "names what filled")
	}
	if on == "repository" {
		assert.Equal(t, "r", full.Details["repo"])
		check, value = "repo:r", filled+" full"
	}
	status, h = readyz(t, d.srv.URL)
	assert.Equal(t, 503, status, "not ready while full")
	assert.Equal(t, value, h.Checks[check], "readyz names what is full: %v", h.Checks)
	got, _, err := d.c.ReadFile(ctx, s.ID, "before.bin")
	require.NoError(t, err, "reads go on while full")
	assert.Equal(t, acked["before.bin"], got)

	// Space returns: ready again, and writes resume.
	require.NoError(t, os.Remove(filler))
	status, h = readyz(t, d.srv.URL)
	assert.Equal(t, 200, status, "ready once space is freed: %v", h.Checks)
	assert.Equal(t, "ok", h.Status)
	require.NoError(t, write("after.bin", 16<<10), "writes resume")
	_, err = d.c.Checkpoint(ctx, s.ID, "after", "")
	require.NoError(t, err)

	// Nothing acknowledged is lost and nothing refused is there, in the
	// running daemon and after a restart.
	verify := func(when string) {
		for p, want := range acked {
			got, _, err := d.c.ReadFile(ctx, s.ID, p)
			if assert.NoError(t, err, "%s: %s was acknowledged", when, p) {
				assert.Equal(t, want, got, "%s: %s reads back as written", when, p)
			}
		}
		for _, p := range refused {
			_, _, err := d.c.ReadFile(ctx, s.ID, p)
			var ce *client.Error
			assert.True(t, errors.As(err, &ce) && ce.Status == 404, "%s: %s was refused, so it is not there: %v", when, p, err)
		}
	}
	verify("running")
	stop(d)
	d = start()
	defer stop(d)
	verify("restarted")
	testrepo.Git(t, repo, "fsck", "--strict")
	t.Logf("%d writes acknowledged, then %s full", len(acked), filled)
}

// readyz answers GET /readyz: its status and its body.
func readyz(t *testing.T, base string) (int, apitypes.Health) {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	require.NoError(t, err)
	defer resp.Body.Close()
	var h apitypes.Health
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
	return resp.StatusCode, h
}

// fill writes path until its device has no room left.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			return
		}
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size()
}
