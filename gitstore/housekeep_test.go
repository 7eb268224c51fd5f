package gitstore_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/gitstore/housekeeping"
	"github.com/sessiond/sessiond/internal/testrepo"
)

func gitMayFail(t *testing.T, dir string, args ...string) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = testrepo.Env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("git %v: %v: %s", args, err, out)
	}
}

func packCount(t *testing.T, dir string) int {
	t.Helper()
	idx, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*.idx"))
	return len(idx)
}

// TestHousekeepMergesEveryWritersPacks: two Repos on one repository (two
// processes) each write packs; housekeeping in one merges them all, and
// the other, whose own index names the deleted packs, still reads
// everything. git fsck agrees.

func TestHousekeepMergesEveryWritersPacks(t *testing.T) {
	dir := testrepo.Build(t, "small")
	a, b := quiet(t, dir), quiet(t, dir)
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	before := packCount(t, dir)
	fa := writeFiles(t, a, base, 12, "a")
	fb := writeFiles(t, b, base, 12, "b")
	require.Equal(t, before+24, packCount(t, dir))

	rep, err := a.Housekeep(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 24, rep.PacksMerged, "%+v", rep)
	assert.Equal(t, before+1, packCount(t, dir))
	for _, r := range []*gitstore.Repo{a, b, quiet(t, dir)} {
		assert.Equal(t, 12, readAll(t, r, fa))
		assert.Equal(t, 12, readAll(t, r, fb))
	}
	// The trees are unreferenced; pin them for fsck's connectivity walk.
	for tree := range fa {
		testrepo.Git(t, dir, "update-ref", "refs/keep/"+tree.String(), testrepo.GitInput(t, dir, []byte("k\n"), "commit-tree", tree.String()))
	}
	fsck(t, dir)
	rep, err = a.Housekeep(t.Context())
	require.NoError(t, err)
	assert.Zero(t, rep.PacksMerged, "one pack is not merged again")
}

// TestHousekeepPacksLooseObjects: single-object writes are loose; once
// enough exist they are packed and their files removed.
func TestHousekeepPacksLooseObjects(t *testing.T) {
	plainRunOnly(t, "loose objects written one at a time, then packed")
	dir := testrepo.Build(t, "small")
	r := quiet(t, dir)
	var ids []gitstore.OID
	for i := range 300 {
		id, err := r.WriteBlob(t.Context(), fmt.Appendf(nil, "loose %d\n", i))
		require.NoError(t, err)
		ids = append(ids, id)
	}
	rep, err := r.Housekeep(t.Context())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, rep.LoosePacked, 300)
	assert.Contains(t, testrepo.Git(t, dir, "count-objects", "-v"), "count: 0\n")
	for _, rr := range []*gitstore.Repo{r, quiet(t, dir)} {
		for i, id := range ids {
			data, err := rr.ReadBlob(t.Context(), id)
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprintf("loose %d\n", i), string(data))
		}
	}
	testrepo.Git(t, dir, "fsck", "--strict")
}

// TestHousekeepRemovesOldDebrisOnly: temporary files and orphan packs or
// indexes older than the grace period go; younger ones may be another
// writer's work in progress and stay.
func TestHousekeepRemovesOldDebrisOnly(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := quiet(t, dir)
	objDir := filepath.Join(dir, ".git", "objects")
	require.NoError(t, os.MkdirAll(filepath.Join(objDir, "ab"), 0o755))
	old := time.Now().Add(-2 * time.Hour)
	debris := func(tag string) []string {
		return []string{"pack/tmp_pack_" + tag, "pack/tmp_idx_" + tag, "ab/tmp_obj_" + tag, "tmp_obj_" + tag, "ab/.tmp-" + tag,
			"pack/pack-" + strings.Repeat(tag, 40) + ".pack", "pack/pack-" + strings.Repeat(tag, 20) + strings.Repeat("0", 20) + ".idx"}
	}
	for _, d := range debris("1") {
		p := filepath.Join(objDir, d)
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o444))
		require.NoError(t, os.Chtimes(p, old, old))
	}
	for _, d := range debris("2") {
		require.NoError(t, os.WriteFile(filepath.Join(objDir, d), []byte("x"), 0o444))
	}
	rep, err := r.Housekeep(t.Context())
	require.NoError(t, err)
	assert.Equal(t, len(debris("1")), rep.DebrisRemoved)
	for _, d := range debris("1") {
		assert.NoFileExists(t, filepath.Join(objDir, d))
	}
	for _, d := range debris("2") {
		assert.FileExists(t, filepath.Join(objDir, d), "young debris may be a writer's work in progress")
	}
	fsck(t, dir)
}

// TestReadersNeverFailDuringHousekeeping: readers that listed the packs
// before a consolidation removed them keep finding every object, while
// another Repo writes and consolidates over and over.
func TestReadersNeverFailDuringHousekeeping(t *testing.T) {
	dir := testrepo.Build(t, "small")
	w := quiet(t, dir)
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	files := writeFiles(t, w, base, 20, "first")
	readers := []*gitstore.Repo{quiet(t, dir), quiet(t, dir)}
	for _, r := range readers {
		require.Equal(t, 20, readAll(t, r, files)) // the storages index the packs
	}
	readWhile(t, readers, files, func() {
		for round := range 5 {
			writeFiles(t, w, base, 17, fmt.Sprint("round", round))
			_, err := w.Housekeep(t.Context())
			require.NoError(t, err)
		}
	})
	assert.LessOrEqual(t, packCount(t, dir), 10)
}

// TestHousekeepBesideGitGC: git gc and sessiond's housekeeping on one
// repository at once lose no referenced object.
func TestHousekeepBesideGitGC(t *testing.T) {
	plainRunOnly(t, "housekeeping beside git gc, another process")
	dir := testrepo.Build(t, "small")
	r := quiet(t, dir)
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	parent := testrepo.Git(t, dir, "rev-parse", "main")
	var all []map[gitstore.OID][2]string
	for round := range 4 {
		files := writeFiles(t, r, base, 20, fmt.Sprint("gc", round))
		all = append(all, files)
		for tree := range files {
			c := testrepo.GitInput(t, dir, []byte("k\n"), "commit-tree", tree.String(), "-p", strings.TrimSpace(parent))
			testrepo.Git(t, dir, "update-ref", "refs/keep/"+tree.String(), strings.TrimSpace(c))
		}
		// A git gc that meets a pack deleted under it stops with an
		// error, as beside any other repack; it loses nothing.
		var wg sync.WaitGroup
		wg.Go(func() { gitMayFail(t, dir, "gc", "--quiet") })
		_, err := r.Housekeep(t.Context())
		require.NoError(t, err)
		wg.Wait()
	}
	testrepo.Git(t, dir, "gc", "--quiet")
	fresh := quiet(t, dir)
	for _, files := range all {
		assert.Equal(t, 20, readAll(t, r, files))
		assert.Equal(t, 20, readAll(t, fresh, files))
	}
	fsck(t, dir)
}

// TestMergedPacksRetireBeforeDeletion: merged packs stay beside the new
// one for RetireDelay, so a git command that listed them just before
// (git fsck, say) still finds them; Close deletes them.
func TestMergedPacksRetireBeforeDeletion(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r, err := gitstore.Open(dir, gitstore.Options{HousekeepInterval: -1, Housekeeping: housekeeping.HeuristicStrategy{RetireDelay: time.Hour, PackLimit: 100}})
	require.NoError(t, err)
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	before := packCount(t, dir)
	files := writeFiles(t, r, base, 16, "retire")
	rep, err := r.Housekeep(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 16, rep.PacksMerged)
	assert.Zero(t, rep.PacksDeleted)
	assert.Equal(t, before+17, packCount(t, dir), "the merged packs wait beside the new one")
	rep, err = r.Housekeep(t.Context())
	require.NoError(t, err)
	assert.Zero(t, rep.PacksMerged, "retired packs are not merged again")
	assert.Equal(t, 16, readAll(t, r, files))
	require.NoError(t, r.Close())
	assert.Equal(t, before+1, packCount(t, dir), "Close deletes them")
	assert.Equal(t, 16, readAll(t, quiet(t, dir), files))
}

// TestSupersededPacksAreDecidedFromTheDirectory: a process that merged
// packs dies before their delay ends (no Close). The next process finds
// them superseded from the directory alone: it does not merge them again,
// leaves them while the delay runs, and deletes them once it has passed.
func TestSupersededPacksAreDecidedFromTheDirectory(t *testing.T) {
	dir := testrepo.Build(t, "small")
	killed, err := gitstore.Open(dir, gitstore.Options{HousekeepInterval: -1, Housekeeping: housekeeping.HeuristicStrategy{RetireDelay: time.Hour, PackLimit: 100}})
	require.NoError(t, err)
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	before := packCount(t, dir)
	files := writeFiles(t, killed, base, 16, "dead")
	rep, err := killed.Housekeep(t.Context())
	require.NoError(t, err)
	require.Equal(t, 16, rep.PacksMerged)
	// killed is never closed, as after SIGKILL.

	next, err := gitstore.Open(dir, gitstore.Options{HousekeepInterval: -1, Housekeeping: housekeeping.HeuristicStrategy{RetireDelay: time.Hour, PackLimit: 100}})
	require.NoError(t, err)
	defer next.Close()
	rep, err = next.Housekeep(t.Context())
	require.NoError(t, err)
	assert.Zero(t, rep.PacksMerged, "merged by the dead process already: %+v", rep)
	assert.Zero(t, rep.PacksDeleted, "the delay runs: %+v", rep)
	assert.Equal(t, before+17, packCount(t, dir))

	late, err := gitstore.Open(dir, gitstore.Options{HousekeepInterval: -1, Housekeeping: housekeeping.HeuristicStrategy{RetireDelay: time.Nanosecond, PackLimit: 100}})
	require.NoError(t, err)
	defer late.Close()
	rep, err = late.Housekeep(t.Context())
	require.NoError(t, err)
	assert.Zero(t, rep.PacksMerged, "%+v", rep)
	assert.Equal(t, 16, rep.PacksDeleted, "the delay has passed: %+v", rep)
	assert.Equal(t, before+1, packCount(t, dir))
	for _, rr := range []*gitstore.Repo{killed, next, late, quiet(t, dir)} {
		assert.Equal(t, 16, readAll(t, rr, files))
	}
	for tree := range files {
		testrepo.Git(t, dir, "update-ref", "refs/keep/"+tree.String(), testrepo.GitInput(t, dir, []byte("k\n"), "commit-tree", tree.String()))
	}
	fsck(t, dir)
}

// TestReadersOfTheDeletingProcessNeverFail: readers of the Repo whose
// housekeeping deletes packs, reading objects another process wrote
// (through go-git until the Repo learns the packs are own, then through
// their indexes on disk), never fail half way through the deletions.
func TestReadersOfTheDeletingProcessNeverFail(t *testing.T) {
	dir := testrepo.Build(t, "small")
	other := quiet(t, dir)
	// Caches of one entry, so the reads go to the packs.
	w, err := gitstore.Open(dir, gitstore.Options{HousekeepInterval: -1, TreeCacheSize: 1, BlobCacheSize: 1, Housekeeping: housekeeping.HeuristicStrategy{RetireDelay: -1}})
	require.NoError(t, err)
	defer w.Close()
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	files := writeFiles(t, other, base, 24, "other")
	require.Equal(t, 24, readAll(t, w, files))
	readWhile(t, []*gitstore.Repo{w, w, w, w}, files, func() {
		for round := range 3 {
			writeFiles(t, other, base, 20, fmt.Sprint("more", round))
			_, err := w.Housekeep(t.Context())
			require.NoError(t, err)
		}
	})
}

// readWhile reads every file through each of readers, over and over, one
// goroutine each, while work runs; every read must succeed.
func readWhile(t *testing.T, readers []*gitstore.Repo, files map[gitstore.OID][2]string, work func()) {
	t.Helper()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, r := range readers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if readAll(t, r, files) != len(files) {
					return
				}
			}
		})
	}
	work()
	close(stop)
	wg.Wait()
}
