package gitstore_test

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/gitstore/housekeeping"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// quiet opens a Repo without background housekeeping, so a test decides
// when it runs.
func quiet(tb testing.TB, dir string) *gitstore.Repo {
	tb.Helper()
	r, err := gitstore.Open(dir, gitstore.Options{HousekeepInterval: -1, Housekeeping: housekeeping.HeuristicStrategy{RetireDelay: -1}})
	require.NoError(tb, err)
	tb.Cleanup(func() { r.Close() })
	return r
}

// writeFiles writes n files, each in its own batch (so its own pack, as a
// session's writes do), and returns tree → path → content.
func writeFiles(t *testing.T, r *gitstore.Repo, base gitstore.OID, n int, tag string) map[gitstore.OID][2]string {
	t.Helper()
	out := map[gitstore.OID][2]string{}
	for i := range n {
		b := r.NewBatch()
		p := fmt.Sprintf("%s/d%d/f%d.txt", tag, i%3, i)
		content := fmt.Sprintf("%s file %d\n", tag, i)
		tree, err := b.BuildTree(t.Context(), base, []gitstore.Change{{Path: p, Mode: gitstore.ModeFile, OID: b.AddBlob([]byte(content))}})
		require.NoError(t, err)
		require.NoError(t, b.Flush(t.Context()))
		out[tree] = [2]string{p, content}
	}
	return out
}

func readAll(t *testing.T, r *gitstore.Repo, files map[gitstore.OID][2]string) int {
	t.Helper()
	ok := 0
	for tree, f := range files {
		e, err := r.Lookup(t.Context(), tree, f[0])
		if !assert.NoError(t, err, f[0]) {
			continue
		}
		data, err := r.ReadBlob(t.Context(), e.OID)
		if assert.NoError(t, err, f[0]) && assert.Equal(t, f[1], string(data)) {
			ok++
		}
	}
	return ok
}

// TestCrashDebrisHidesNothing is the reproduction: 20 files
// written, then 16 copies of a pack under other names without an index,
// temporary files, a truncated pack and a truncated index (each holding
// objects that exist elsewhere), a half-written loose object and a loose
// object whose file does not inflate. Every object stays readable, by a
// fresh Repo (a restart) and by one whose storages listed the packs before.
func TestCrashDebrisHidesNothing(t *testing.T) {
	dir := testrepo.Build(t, "small")
	ctx := t.Context()
	r := quiet(t, dir)
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	files := writeFiles(t, r, base, 20, "acked")
	warm := quiet(t, dir)
	require.Equal(t, 20, readAll(t, warm, files))

	packDir := filepath.Join(dir, ".git", "objects", "pack")
	packs, _ := filepath.Glob(filepath.Join(packDir, "pack-*.pack"))
	require.NotEmpty(t, packs)
	some, err := os.ReadFile(packs[0])
	require.NoError(t, err)
	for _, c := range "0123456789abcdef" {
		name := "pack-" + strings.Repeat(string(c), 40) + ".pack"
		require.NoError(t, os.WriteFile(filepath.Join(packDir, name), some, 0o444))
	}
	require.NoError(t, os.WriteFile(filepath.Join(packDir, "tmp_pack_1"), some[:len(some)/2], 0o444))
	require.NoError(t, os.WriteFile(filepath.Join(packDir, "tmp_idx_2"), []byte("\377tOc"), 0o444))

	// A truncated pack and a truncated index, both of objects that also
	// live in the fixture's packs or loose files.
	objs := testrepo.Git(t, dir, "rev-list", "--objects", "main")
	var list bytes.Buffer
	for _, line := range strings.Split(strings.TrimSpace(objs), "\n") {
		id, _, _ := strings.Cut(line, " ")
		fmt.Fprintln(&list, id)
	}
	for _, cut := range []string{"pack", "idx"} {
		sum := strings.TrimSpace(testrepo.GitInput(t, dir, list.Bytes(), "pack-objects", "-q", filepath.Join(packDir, "cut")))
		victim := filepath.Join(packDir, "cut-"+sum+"."+cut)
		fi, err := os.Stat(victim)
		require.NoError(t, err)
		require.NoError(t, os.Chmod(victim, 0o644))
		require.NoError(t, os.Truncate(victim, fi.Size()-30))
		for _, ext := range []string{".pack", ".idx"} {
			require.NoError(t, os.Rename(filepath.Join(packDir, "cut-"+sum+ext), filepath.Join(packDir, "pack-"+sum+ext)))
		}
	}

	// A loose object that does not inflate, of an object that is packed,
	// and a half-written loose object's temporary file.
	var packedBlob gitstore.OID
	for tree, f := range files {
		e, err := r.Lookup(ctx, tree, f[0])
		require.NoError(t, err)
		packedBlob = e.OID
		break
	}
	loose := filepath.Join(dir, ".git", "objects", packedBlob.String()[:2], packedBlob.String()[2:])
	require.NoError(t, os.MkdirAll(filepath.Dir(loose), 0o755))
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte("blob 1000\x00only part"))
	zw.Close()
	require.NoError(t, os.WriteFile(loose, z.Bytes()[:z.Len()-6], 0o444))
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(loose), "tmp_obj_abc"), z.Bytes()[:5], 0o444))

	fresh := quiet(t, dir)
	assert.Equal(t, 20, readAll(t, fresh, files), "a restart reads every file")
	assert.Equal(t, 20, readAll(t, warm, files), "a running reader reads every file")
	readme := testrepo.GitRaw(t, dir, nil, "cat-file", "blob", "main:README.md")
	for _, rr := range []*gitstore.Repo{fresh, warm} {
		e, err := rr.Lookup(ctx, base, "README.md")
		require.NoError(t, err)
		data, err := rr.ReadBlob(ctx, e.OID)
		require.NoError(t, err)
		assert.Equal(t, readme, data)
	}

	// Writing the object again replaces the broken loose file.
	_, err = fresh.WriteBlob(ctx, []byte("unrelated\n"))
	require.NoError(t, err)
}

// TestMissingObjectIsDamageNotAbsence: a tree that names a blob or a
// subtree the repository lacks. Reading the blob, or looking up a path
// through the subtree, is an *ObjectError naming the object, and never
// ErrNotFound, which would make the path look absent.
func TestMissingObjectIsDamageNotAbsence(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := quiet(t, dir)
	ctx := t.Context()
	ghostBlob := gitstore.HashObject(gitstore.KindBlob, []byte("never written\n"))
	ghostTree := gitstore.HashObject(gitstore.KindTree, []byte("never written either"))
	tree := oid(t, testrepo.GitInput(t, dir, fmt.Appendf(nil, "100644 blob %s\tgone.txt\n040000 tree %s\tgonedir\n", ghostBlob, ghostTree), "mktree", "--missing"))

	e, err := r.Lookup(ctx, tree, "gone.txt")
	require.NoError(t, err, "the entry exists; only its object is missing")
	_, err = r.ReadBlob(ctx, e.OID)
	var oe *gitstore.ObjectError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, ghostBlob, oe.ID)
	assert.ErrorIs(t, err, gitstore.ErrMissingObject)
	assert.NotErrorIs(t, err, gitstore.ErrNotFound)

	_, err = r.Lookup(ctx, tree, "gonedir/x.txt")
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, ghostTree, oe.ID)
	assert.NotErrorIs(t, err, gitstore.ErrNotFound, "a missing subtree must not report the path as absent")
	err = r.List(ctx, tree, "", true, func(gitstore.Entry) error { return nil })
	assert.ErrorIs(t, err, gitstore.ErrMissingObject)

	// Naming an id that does not exist is still "not found".
	_, err = r.ResolveRevision(ctx, ghostBlob.String())
	assert.ErrorIs(t, err, gitstore.ErrNotFound)
	// A truly absent path is still "not found".
	_, err = r.Lookup(ctx, tree, "nothing-here")
	assert.ErrorIs(t, err, gitstore.ErrNotFound)
}

// TestPackSeenBeforeItsIndexIsReadLater: a reader that lists the packs
// between a writer's renaming a pack into place and renaming its index
// (another process's write or consolidation) skips that pack then, and
// must find it once the index is there, though the pack's name, size and
// mtime are unchanged.
func TestPackSeenBeforeItsIndexIsReadLater(t *testing.T) {
	dir := testrepo.Build(t, "small")
	w, r := quiet(t, dir), quiet(t, dir)
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	packDir := filepath.Join(dir, ".git", "objects", "pack")
	before, _ := filepath.Glob(filepath.Join(packDir, "pack-*.idx"))
	files := writeFiles(t, w, base, 1, "window")
	after, _ := filepath.Glob(filepath.Join(packDir, "pack-*.idx"))
	require.Len(t, after, len(before)+1)
	var idx string
	for _, p := range after {
		if !slices.Contains(before, p) {
			idx = p
		}
	}
	// Mid-write: the pack is in place, its index not yet.
	aside := filepath.Join(packDir, "tmp_idx_window")
	require.NoError(t, os.Rename(idx, aside))
	var tree gitstore.OID
	for tr := range files {
		tree = tr
	}
	_, err := r.Lookup(t.Context(), tree, files[tree][0])
	require.ErrorIs(t, err, gitstore.ErrMissingObject, "no index yet: the pack is skipped")
	require.NoError(t, os.Rename(aside, idx))
	assert.Equal(t, 1, readAll(t, r, files), "the index is in place: the pack is read")
}
