package gitstore_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// TestPackLimitHoldsUnderManyWriters: eight writers write pack after pack
// without pause while housekeeping runs in the background, each run slowed
// down (as on a loaded machine, or a repository whose merges take long).
// After every acknowledged write the repository holds at most 50 packs
// (git's gc.autoPackLimit): writers wait for housekeeping rather than
// outrun it. Every object stays readable and git fsck finds nothing.
func TestPackLimitHoldsUnderManyWriters(t *testing.T) {
	const writers, perWriter, limit = 8, 60, 50
	dir := testrepo.Build(t, "small")
	opts := gitstore.WithRunHook(gitstore.Options{HousekeepInterval: time.Hour}, func() { time.Sleep(100 * time.Millisecond) })
	r, err := gitstore.Open(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))

	var mu sync.Mutex
	most := 0
	files := map[gitstore.OID][2]string{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				b := r.NewBatch()
				p := fmt.Sprintf("w%d/f%d.txt", w, i)
				content := fmt.Sprintf("writer %d file %d\n", w, i)
				tree, err := b.BuildTree(t.Context(), base, []gitstore.Change{{Path: p, Mode: gitstore.ModeFile, OID: b.AddBlob([]byte(content))}})
				if !assert.NoError(t, err) || !assert.NoError(t, b.Flush(t.Context())) {
					return
				}
				n := packCount(t, dir)
				mu.Lock()
				most = max(most, n)
				files[tree] = [2]string{p, content}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("most packs after a write: %d", most)
	assert.LessOrEqual(t, most, limit, "packs past git's gc.autoPackLimit")
	assert.Equal(t, len(files), readAll(t, r, files))
	// Housekeeping may still be deleting superseded packs, which a git
	// fsck that listed them would report: stop it first.
	require.NoError(t, r.Close())
	assert.Equal(t, len(files), readAll(t, quiet(t, dir), files))
	fsck(t, dir)
}

// TestOwnPacksAreReadThroughTheirIndexOnDisk: the go-git storages never
// see sessiond's own packs, whose indexes grow with every object and
// would be held decoded once per storage; the objects of a merged pack
// larger than the own index are read, found, sized and resolved by an
// abbreviated id through the index file on disk, by the process that
// wrote them and by a new one.
func TestOwnPacksAreReadThroughTheirIndexOnDisk(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r, err := gitstore.Open(dir, gitstore.Options{HousekeepInterval: -1, OwnIndexSize: 10, Housekeeping: housekeeping.HeuristicStrategy{RetireDelay: -1}})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	files := writeFiles(t, r, base, 20, "disk")
	rep, err := r.Housekeep(t.Context())
	require.NoError(t, err)
	require.NotEmpty(t, rep.NewPack, "%+v", rep)
	gitPacks := func() map[string]bool {
		out := map[string]bool{}
		names, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*.idx"))
		for _, n := range names {
			out[strings.TrimSuffix(filepath.Base(n), ".idx")] = true
		}
		return out
	}
	require.True(t, gitPacks()[rep.NewPack])

	var tree gitstore.OID
	for tr := range files {
		tree = tr
		break
	}
	fresh := quiet(t, dir)
	for name, rr := range map[string]*gitstore.Repo{"writer": r, "new process": fresh} {
		assert.Equal(t, len(files), readAll(t, rr, files), name)
		ok, err := rr.HasObject(t.Context(), tree)
		require.NoError(t, err)
		assert.True(t, ok, name)
		e, err := rr.Lookup(t.Context(), tree, files[tree][0])
		require.NoError(t, err)
		size, err := rr.BlobSize(t.Context(), e.OID)
		require.NoError(t, err)
		assert.Equal(t, int64(len(files[tree][1])), size, name)
		got, kind, err := rr.RevParse(t.Context(), tree.String()[:10])
		require.NoError(t, err, name)
		assert.Equal(t, tree, got, name)
		assert.Equal(t, gitstore.KindTree, kind, name)
	}
	// The writer knows the pack is its own: go-git does not list it. A new
	// process learns it at its first housekeeping run.
	seen, err := gitstore.GoGitPacks(r)
	require.NoError(t, err)
	assert.NotContains(t, seen, rep.NewPack)
	_, err = fresh.Housekeep(t.Context())
	require.NoError(t, err)
	seen, err = gitstore.GoGitPacks(fresh)
	require.NoError(t, err)
	assert.NotContains(t, seen, rep.NewPack)
	assert.Equal(t, len(files), readAll(t, fresh, files))
	// Git's own packs stay go-git's.
	testrepo.Git(t, dir, "repack", "-a", "-d", "-q")
	gitPack := ""
	for name := range gitPacks() {
		gitPack = name
	}
	require.NotEmpty(t, gitPack)
	_, err = fresh.Housekeep(t.Context())
	require.NoError(t, err)
	seen, err = gitstore.GoGitPacks(fresh)
	require.NoError(t, err)
	assert.Contains(t, seen, gitPack)
	assert.Equal(t, len(files), readAll(t, fresh, files))
}

// TestMergeCopiesEntriesCheckedAgainstTheirCRC: a merge copies the
// packs' entries without inflating them, as git repack reuses them, and
// checks each against the CRC-32 its index records: a pack damaged on
// disk makes the merge fail with ErrCorrupt, and nothing is deleted.
func TestMergeCopiesEntriesCheckedAgainstTheirCRC(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := quiet(t, dir)
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	writeFiles(t, r, base, 16, "crc")
	packs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*.pack"))
	slices.Sort(packs)
	victim := packs[len(packs)/2]
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	b[20] ^= 0xff // inside the first entry's compressed data; the trailer stays
	require.NoError(t, os.Chmod(victim, 0o644))
	require.NoError(t, os.WriteFile(victim, b, 0o444))
	before := packCount(t, dir)

	_, err = r.Housekeep(t.Context())
	require.ErrorIs(t, err, gitstore.ErrCorrupt)
	assert.Equal(t, before, packCount(t, dir), "a failed merge deletes nothing")
	_, err = os.Stat(victim)
	assert.NoError(t, err)
}

// TestPackIndexIsGits: the index sessiond writes for a pack, a session
// write's or a merge's, is byte for byte the one git index-pack writes
// for the same pack.
func TestPackIndexIsGits(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := quiet(t, dir)
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	writeFiles(t, r, base, 16, "idx")
	check := func(pack string) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "git.idx")
		testrepo.Git(t, dir, "index-pack", "-o", out, pack)
		want, err := os.ReadFile(out)
		require.NoError(t, err)
		got, err := os.ReadFile(strings.TrimSuffix(pack, ".pack") + ".idx")
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "index of %s differs from git index-pack's", filepath.Base(pack))
	}
	packs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*.pack"))
	require.NotEmpty(t, packs)
	check(packs[0])
	rep, err := r.Housekeep(t.Context())
	require.NoError(t, err)
	require.NotEmpty(t, rep.NewPack)
	check(filepath.Join(dir, ".git", "objects", "pack", rep.NewPack+".pack"))
}

// TestObjectsMergedByAnotherProcessStayFound: this process reads its own
// packs through their indexes (go-git does not list them); when another
// process merges them into a pack this process's storages have not
// listed and deletes them, every object is still found, its presence
// reported and its abbreviated id resolved.
func TestObjectsMergedByAnotherProcessStayFound(t *testing.T) {
	dir := testrepo.Build(t, "small")
	a, err := gitstore.Open(dir, gitstore.Options{HousekeepInterval: -1, OwnIndexSize: 1, Housekeeping: housekeeping.HeuristicStrategy{RetireDelay: -1}})
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	files := writeFiles(t, a, base, 12, "other") // under the merge trigger
	_, err = a.Housekeep(t.Context())            // learns its packs are own: hidden from its storages
	require.NoError(t, err)
	// a's storages list the packs now (looking for an object nobody has
	// makes them), before the merged pack exists.
	for range 8 {
		ok, err := a.HasObject(t.Context(), gitstore.OID{0xfe, 0xed})
		require.NoError(t, err)
		require.False(t, ok)
	}

	b, err := gitstore.Open(dir, gitstore.Options{HousekeepInterval: -1, Housekeeping: housekeeping.HeuristicStrategy{RetireDelay: -1, MergeTrigger: 2}})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	rep, err := b.Housekeep(t.Context())
	require.NoError(t, err)
	require.NotEmpty(t, rep.NewPack)
	require.Positive(t, rep.PacksDeleted, "%+v", rep)

	var trees []gitstore.OID
	for tree := range files {
		trees = append(trees, tree)
	}
	got, _, err := a.RevParse(t.Context(), trees[0].String()[:12])
	if assert.NoError(t, err) {
		assert.Equal(t, trees[0], got)
	}
	ok, err := a.HasObject(t.Context(), trees[1])
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, len(files), readAll(t, a, files))
}
