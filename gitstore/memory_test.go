package gitstore_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/gitstore/housekeeping"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// objectFileCount counts the repository's packs and loose objects.
func objectFileCount(t *testing.T, dir string) int {
	t.Helper()
	packs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*.pack"))
	loose, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "[0-9a-f][0-9a-f]", "*"))
	return len(packs) + len(loose)
}

// TestMemoryBoundedOverManyPacks: a Repo that writes pack after pack, as a
// daemon does over months, holds in memory at most OwnIndexSize objects of
// its own packs, and per pack only what the directory still lists; the
// objects it forgot stay readable, and writing one of them again only
// freshens the pack that holds it (found in the index file on disk).
func TestMemoryBoundedOverManyPacks(t *testing.T) {
	plainRunOnly(t, "packs written one at a time, memory counted")
	const size, rounds, perRound = 100, 12, 20
	dir := testrepo.Build(t, "small")
	r, err := gitstore.Open(dir, gitstore.Options{HousekeepInterval: -1, Housekeeping: housekeeping.HeuristicStrategy{RetireDelay: -1}, OwnIndexSize: size})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	all := map[gitstore.OID][2]string{}
	for round := range rounds {
		files := writeFiles(t, r, base, perRound, fmt.Sprintf("round%d", round))
		for tree, f := range files {
			all[tree] = f
		}
		objects, _, _, _ := gitstore.Held(r)
		assert.LessOrEqual(t, objects, size, "round %d: own index past its size", round)
		if round%3 == 2 {
			_, err := r.Housekeep(t.Context())
			require.NoError(t, err)
		}
	}
	// Every file is still readable, through go-git for the forgotten ones
	// (which makes the storages list the packs again).
	assert.Equal(t, len(all), readAll(t, r, all))
	reread := quiet(t, dir)
	assert.Equal(t, len(all), readAll(t, reread, all))

	// The first blob written is long forgotten by the own index: writing
	// it again finds it in a pack and writes nothing.
	before := objectFileCount(t, dir)
	b := r.NewBatch()
	b.AddBlob([]byte("round0 file 0\n"))
	b.AddBlob([]byte("round0 file 1\n"))
	require.NoError(t, b.Flush(t.Context()))
	assert.Equal(t, before, objectFileCount(t, dir), "objects already packed were written again")

	objects, ownPacks, located, checked := gitstore.Held(r)
	packs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*.pack"))
	assert.LessOrEqual(t, objects, size)
	assert.LessOrEqual(t, ownPacks, len(packs), "own index names packs that are gone")
	assert.LessOrEqual(t, located, len(packs), "locator knows packs that are gone")
	assert.LessOrEqual(t, checked, len(packs), "pack checks remembered for packs that are gone")
	fsck(t, dir)
}
