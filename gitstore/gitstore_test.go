package gitstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
)

func open(tb testing.TB, dir string) *gitstore.Repo {
	tb.Helper()
	r, err := gitstore.Open(dir)
	require.NoError(tb, err)
	tb.Cleanup(func() { r.Close() })
	return r
}

func oid(tb testing.TB, s string) gitstore.OID {
	tb.Helper()
	id, err := gitstore.ParseOID(strings.TrimSpace(s))
	require.NoError(tb, err)
	return id
}

// plainRunOnly skips t in make test's race detector run (-short): what
// says what t runs, all of which the plain run covers, with no goroutines
// of the daemon's own against each other for the detector to watch.
func plainRunOnly(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what + ": the plain run covers it; nothing of the daemon's races here")
	}
}

func fsck(tb testing.TB, dir string) {
	tb.Helper()
	testrepo.Git(tb, dir, "fsck", "--strict", "--no-dangling")
}

func TestOpenBareAndNonBare(t *testing.T) {
	for _, bare := range []bool{false, true} {
		t.Run(fmt.Sprint("bare=", bare), func(t *testing.T) {
			var dir string
			if bare {
				dir = testrepo.BuildBare(t, "small")
			} else {
				dir = testrepo.Build(t, "small")
			}
			r := open(t, dir)
			assert.Equal(t, bare, r.Bare())
			head, err := r.ResolveRevision(t.Context(), "main")
			require.NoError(t, err)
			assert.Equal(t, oid(t, testrepo.Git(t, dir, "rev-parse", "main")), head)
		})
	}
	_, err := gitstore.Open(t.TempDir())
	assert.ErrorIs(t, err, gitstore.ErrNotRepository)
}

func TestResolveRevision(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := open(t, dir)
	ctx := t.Context()
	full := testrepo.Git(t, dir, "rev-parse", "main")
	for _, rev := range []string{"main", "feature", "refs/heads/main", "HEAD", "v1", "v0", "tags/v1", full, full[:7], strings.ToUpper(full[:9]), full[:5]} {
		t.Run(rev, func(t *testing.T) {
			want := testrepo.Git(t, dir, "rev-parse", "--verify", rev+"^{commit}")
			got, err := r.ResolveRevision(ctx, rev)
			require.NoError(t, err)
			assert.Equal(t, want, got.String())
		})
	}
	for _, rev := range []string{"nope", "", "zzzz", "deadbeefdeadbeef"} {
		_, err := r.ResolveRevision(ctx, rev)
		assert.ErrorIs(t, err, gitstore.ErrNotFound, rev)
	}
	// A tree id is not a commit.
	tree := testrepo.Git(t, dir, "rev-parse", "main^{tree}")
	_, err := r.ResolveRevision(ctx, tree)
	assert.ErrorIs(t, err, gitstore.ErrWrongKind)
}

func TestLookupAndReadMatchGit(t *testing.T) {
	for _, fixture := range testrepo.Fixtures(t) {
		t.Run(fixture, func(t *testing.T) {
			dir := testrepo.Build(t, fixture)
			r := open(t, dir)
			ctx := t.Context()
			commit, err := r.Commit(ctx, oid(t, testrepo.Git(t, dir, "rev-parse", "main")))
			require.NoError(t, err)
			assert.Equal(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"), commit.Tree.String())

			// Every entry git lists, in git's order, with trees included.
			lines := strings.Split(testrepo.Git(t, dir, "ls-tree", "-r", "-t", "-z", "main"), "\x00")
			var want, got []string
			for _, l := range lines {
				if l == "" {
					continue
				}
				meta, path, _ := strings.Cut(l, "\t")
				f := strings.Fields(meta)
				want = append(want, f[0]+" "+f[2]+" "+path)

				e, err := r.Lookup(ctx, commit.Tree, path)
				require.NoError(t, err, path)
				assert.Equal(t, f[2], e.OID.String(), path)
				assert.Equal(t, f[0], e.Mode.String(), path)
				if f[1] == "blob" {
					data, err := r.ReadBlob(ctx, e.OID)
					require.NoError(t, err)
					assert.Equal(t, testrepo.GitRaw(t, dir, nil, "cat-file", "blob", f[2]), data, path)
					part, err := r.ReadBlobRange(ctx, e.OID, 1, 3)
					require.NoError(t, err)
					if len(data) > 1 {
						assert.Equal(t, data[1:min(4, len(data))], part)
					} else {
						assert.Empty(t, part)
					}
				}
			}
			require.NoError(t, r.List(ctx, commit.Tree, "", true, func(e gitstore.Entry) error {
				got = append(got, e.Mode.String()+" "+e.OID.String()+" "+e.Path)
				return nil
			}))
			assert.Equal(t, want, got)

			_, err = r.Lookup(ctx, commit.Tree, "does/not/exist")
			assert.ErrorIs(t, err, gitstore.ErrNotFound)
		})
	}
}

func TestTreeOf(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := open(t, dir)
	ctx := t.Context()
	tree := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	for _, rev := range []string{"main", "main^{tree}"} {
		// Twice: the second time the tree is cached.
		for range 2 {
			got, err := r.TreeOf(ctx, oid(t, testrepo.Git(t, dir, "rev-parse", rev)))
			require.NoError(t, err, rev)
			assert.Equal(t, tree, got, rev)
		}
	}
	got, err := r.TreeOf(ctx, gitstore.ZeroOID)
	require.NoError(t, err)
	assert.Equal(t, gitstore.ZeroOID, got)
	_, err = r.TreeOf(ctx, oid(t, testrepo.Git(t, dir, "rev-parse", "main:README.md")))
	assert.ErrorIs(t, err, gitstore.ErrWrongKind)
	_, err = r.TreeOf(ctx, gitstore.HashObject(gitstore.KindBlob, []byte("nowhere\n")))
	assert.ErrorIs(t, err, gitstore.ErrMissingObject)
	assert.NotErrorIs(t, err, gitstore.ErrNotFound, "an object the repository lacks is damage, not an absent path")
}

func TestListPrefixNonRecursive(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := open(t, dir)
	ctx := t.Context()
	root := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	for _, prefix := range []string{"", "a", "a/b"} {
		var got []string
		require.NoError(t, r.List(ctx, root, prefix, false, func(e gitstore.Entry) error {
			got = append(got, e.Path)
			return nil
		}))
		args := []string{"ls-tree", "--name-only", "main"}
		if prefix != "" {
			args = append(args, prefix+"/")
		}
		assert.Equal(t, strings.Split(testrepo.Git(t, dir, args...), "\n"), got, prefix)
	}
	err := r.List(ctx, root, "README.md", false, func(gitstore.Entry) error { return nil })
	assert.ErrorIs(t, err, gitstore.ErrNotFound)
}

func TestWritesAreReadableDurableAndValid(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := open(t, dir)
	ctx := t.Context()

	// One object goes loose; git reads it.
	blob, err := r.WriteBlob(ctx, []byte("hello\n"))
	require.NoError(t, err)
	assert.Equal(t, testrepo.GitInput(t, dir, []byte("hello\n"), "hash-object", "--stdin"), blob.String())
	assert.Equal(t, "hello", testrepo.Git(t, dir, "cat-file", "blob", blob.String()))

	// Many objects go into one pack that git can read and verify.
	b := r.NewBatch()
	var changes []gitstore.Change
	for i := range 50 {
		data := fmt.Appendf(nil, "file %d\n", i)
		changes = append(changes, gitstore.Change{Path: fmt.Sprintf("new/d%d/f%d.txt", i%5, i), Mode: gitstore.ModeFile, OID: b.AddBlob(data)})
	}
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	tree, err := b.BuildTree(ctx, base, changes)
	require.NoError(t, err)
	parent := oid(t, testrepo.Git(t, dir, "rev-parse", "main"))
	when := time.Unix(1700000000, 0).UTC()
	commit := b.AddCommit(gitstore.NewCommit{
		Tree: tree, Parents: []gitstore.OID{parent},
		Author:    gitstore.Signature{Name: testrepo.AuthorName, Email: testrepo.AuthorEmail, When: when},
		Committer: gitstore.Signature{Name: testrepo.CommitterName, Email: testrepo.CommitterEmail, When: when},
		Message:   "fifty files",
	})
	require.NoError(t, b.Flush(ctx))
	packs, _ := filepath.Glob(filepath.Join(dir, ".git/objects/pack/pack-*.idx"))
	assert.GreaterOrEqual(t, len(packs), 1)

	// Same commit as git commit-tree makes from the same tree and parent.
	want := testrepo.GitInput(t, dir, []byte("fifty files\n"), "commit-tree", tree.String(), "-p", parent.String())
	assert.Equal(t, want, commit.String())
	got, err := r.Commit(ctx, commit)
	require.NoError(t, err)
	assert.Equal(t, tree, got.Tree)
	assert.Equal(t, "fifty files\n", got.Message)
	assert.True(t, got.Author.When.Equal(when))

	require.NoError(t, r.UpdateRef(ctx, "refs/heads/main", commit, parent))
	assert.Equal(t, commit.String(), testrepo.Git(t, dir, "rev-parse", "main"))
	fsck(t, dir)
	testrepo.Git(t, dir, "verify-pack", packs[len(packs)-1])

	// A fresh Repo (a restart) reads everything back.
	r2 := open(t, dir)
	e, err := r2.Lookup(ctx, tree, "new/d3/f8.txt")
	require.NoError(t, err)
	data, err := r2.ReadBlob(ctx, e.OID)
	require.NoError(t, err)
	assert.Equal(t, "file 8\n", string(data))
}

func TestWriteExistingObjectFreshens(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := open(t, dir)
	ctx := t.Context()
	id, err := r.WriteBlob(ctx, []byte("fresh\n"))
	require.NoError(t, err)
	path := filepath.Join(dir, ".git", "objects", id.String()[:2], id.String()[2:])
	old := time.Now().Add(-30 * 24 * time.Hour)
	require.NoError(t, os.Chtimes(path, old, old))
	again, err := r.WriteBlob(ctx, []byte("fresh\n"))
	require.NoError(t, err)
	assert.Equal(t, id, again)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), fi.ModTime(), time.Hour)

	// A packed object: its pack is freshened.
	testrepo.Git(t, dir, "repack", "-adq")
	packs, _ := filepath.Glob(filepath.Join(dir, ".git/objects/pack/pack-*.pack"))
	require.Len(t, packs, 1)
	require.NoError(t, os.Chtimes(packs[0], old, old))
	readme := testrepo.GitRaw(t, dir, nil, "cat-file", "blob", "main:README.md")
	_, err = r.WriteBlob(ctx, readme)
	require.NoError(t, err)
	fi, err = os.Stat(packs[0])
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), fi.ModTime(), time.Hour)
}

func TestReadsSurviveRepackAndExternalWrites(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := open(t, dir)
	ctx := t.Context()
	head, err := r.ResolveRevision(ctx, "main")
	require.NoError(t, err)
	_, err = r.Commit(ctx, head) // warm the storages' pack indexes
	require.NoError(t, err)

	// git writes a new commit and repacks everything: old packs vanish.
	testrepo.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "external")
	testrepo.Git(t, dir, "gc", "-q", "--prune=now")
	next, err := r.ResolveRevision(ctx, "main")
	require.NoError(t, err)
	c, err := r.Commit(ctx, next)
	require.NoError(t, err)
	assert.Equal(t, []gitstore.OID{head}, c.Parents)
	_, err = r.Lookup(ctx, c.Tree, "a/b/c/deep.txt")
	require.NoError(t, err)
}

func TestBuildTreeCollisionsAndEdgeCases(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := open(t, dir)
	ctx := t.Context()
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	blob, err := r.WriteBlob(ctx, []byte("x\n"))
	require.NoError(t, err)
	put := func(p string) gitstore.Change { return gitstore.Change{Path: p, Mode: gitstore.ModeFile, OID: blob} }
	del := func(p string) gitstore.Change { return gitstore.Change{Path: p, Delete: true} }

	for name, changes := range map[string][]gitstore.Change{
		"below a file":      {put("README.md/x")},
		"file and below it": {put("n"), put("n/x")},
		"same path twice":   {put("n"), put("n")},
		"empty component":   {put("a//b")},
		"bad mode":          {{Path: "q", Mode: 0o777, OID: blob}},
		"no id":             {{Path: "q", Mode: gitstore.ModeFile}},
	} {
		_, err := r.BuildTree(ctx, base, changes)
		assert.Error(t, err, name)
	}

	// No changes, and deleting what is absent, keep the tree id.
	for _, changes := range [][]gitstore.Change{nil, {del("nope")}, {del("a/nope/deeper")}} {
		id, err := r.BuildTree(ctx, base, changes)
		require.NoError(t, err)
		assert.Equal(t, base, id)
	}
	// Replace a directory by a file, and a file by a directory.
	id, err := r.BuildTree(ctx, base, []gitstore.Change{put("a"), del("README.md"), put("README.md/inside")})
	require.NoError(t, err)
	e, err := r.Lookup(ctx, id, "a")
	require.NoError(t, err)
	assert.Equal(t, gitstore.ModeFile, e.Mode)
	e, err = r.Lookup(ctx, id, "README.md/inside")
	require.NoError(t, err)
	assert.Equal(t, blob, e.OID)
	// Untouched subtrees keep their ids.
	for _, p := range []string{"bin", "data"} {
		before, _ := r.Lookup(ctx, base, p)
		after, _ := r.Lookup(ctx, id, p)
		assert.Equal(t, before.OID, after.OID, p)
	}
	// A subtree put by id replaces what is there.
	binTree, err := r.Lookup(ctx, base, "bin")
	require.NoError(t, err)
	id, err = r.BuildTree(ctx, base, []gitstore.Change{{Path: "a/b", Mode: gitstore.ModeDir, OID: binTree.OID}, {Path: "fresh/sub", Mode: gitstore.ModeDir, OID: binTree.OID}})
	require.NoError(t, err)
	for _, p := range []string{"a/b/run.sh", "fresh/sub/run.sh", "a/moved.txt"} {
		_, err := r.Lookup(ctx, id, p)
		assert.NoError(t, err, p)
	}
	_, err = r.Lookup(ctx, id, "a/b/c/deep.txt")
	assert.ErrorIs(t, err, gitstore.ErrNotFound)
	// Deleting everything gives git's empty tree.
	var all []gitstore.Change
	require.NoError(t, r.List(ctx, base, "", false, func(e gitstore.Entry) error {
		all = append(all, del(e.Path))
		return nil
	}))
	id, err = r.BuildTree(ctx, base, all)
	require.NoError(t, err)
	assert.Equal(t, "4b825dc642cb6eb9a060e54bf8d69288fbee4904", id.String())
	fsck(t, dir)
}

func TestUpdateRefCompareAndSwap(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := open(t, dir)
	ctx := t.Context()
	main := oid(t, testrepo.Git(t, dir, "rev-parse", "main"))
	feature := oid(t, testrepo.Git(t, dir, "rev-parse", "feature"))

	// Wrong old value: conflict carrying the current value, nothing moves.
	err := r.UpdateRef(ctx, "refs/heads/main", feature, feature)
	var ce *gitstore.RefConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, main, ce.Current)
	assert.ErrorIs(t, err, gitstore.ErrRefConflict)
	assert.Equal(t, main.String(), testrepo.Git(t, dir, "rev-parse", "main"))

	// Create-only fails on an existing ref, works on a new one.
	assert.ErrorIs(t, r.UpdateRef(ctx, "refs/heads/main", feature, gitstore.ZeroOID), gitstore.ErrRefConflict)
	require.NoError(t, r.UpdateRef(ctx, "refs/sessions/x/head", feature, gitstore.ZeroOID))
	assert.Equal(t, feature.String(), testrepo.Git(t, dir, "rev-parse", "refs/sessions/x/head"))

	// git's own lock file blocks us, as ours blocks git.
	lock := filepath.Join(dir, ".git/refs/heads/main.lock")
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	assert.ErrorIs(t, r.UpdateRef(ctx, "refs/heads/main", feature, main), gitstore.ErrRefLocked)
	require.NoError(t, os.Remove(lock))

	// Packed refs are read, updated and deleted.
	testrepo.Git(t, dir, "pack-refs", "--all")
	got, err := r.ReadRef(ctx, "refs/heads/feature")
	require.NoError(t, err)
	assert.Equal(t, feature, got)
	require.NoError(t, r.UpdateRef(ctx, "refs/heads/feature", main, feature))
	assert.Equal(t, main.String(), testrepo.Git(t, dir, "rev-parse", "feature"))
	require.NoError(t, r.UpdateRef(ctx, "refs/heads/feature", gitstore.ZeroOID, main))
	_, err = r.ReadRef(ctx, "refs/heads/feature")
	assert.ErrorIs(t, err, gitstore.ErrNotFound)
	assert.NotContains(t, testrepo.Git(t, dir, "branch", "--list"), "feature")

	refs, err := r.ListRefs(ctx, "refs/tags/")
	require.NoError(t, err)
	require.Len(t, refs, 2)
	assert.Equal(t, gitstore.RefName("refs/tags/v0"), refs[0].Name)

	for _, bad := range []gitstore.RefName{"main", "refs/heads/a..b", "refs/heads/x.lock", "refs/heads/sp ace", "refs/heads/.hidden", "refs/heads/"} {
		assert.ErrorIs(t, r.UpdateRef(ctx, bad, main, gitstore.ZeroOID), gitstore.ErrInvalidRef, string(bad))
	}
	fsck(t, dir)
}

func TestConcurrentCASExactlyOneWinner(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := open(t, dir)
	ctx := t.Context()
	main := oid(t, testrepo.Git(t, dir, "rev-parse", "main"))
	const n = 16
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := r.WriteCommit(ctx, gitstore.NewCommit{
				Tree:    oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}")),
				Parents: []gitstore.OID{main},
				Author:  gitstore.Signature{Name: "n", Email: "e", When: time.Unix(int64(i), 0)},
				Message: fmt.Sprint(i),
			})
			if !assert.NoError(t, err) {
				return
			}
			err = r.UpdateRef(ctx, "refs/heads/main", c, main)
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, gitstore.ErrRefConflict), errors.Is(err, gitstore.ErrRefLocked):
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), wins.Load())
	fsck(t, dir)
}

// TestConcurrentReadersAndWriters runs 16 readers and 4 writers on one
// Repo; run with -race.
func TestConcurrentReadersAndWriters(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := open(t, dir)
	ctx := t.Context()
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	wantReadme := testrepo.GitRaw(t, dir, nil, "cat-file", "blob", "main:README.md")
	var wg sync.WaitGroup
	var written sync.Map // tree id → content at w/i.txt
	for w := range 4 {
		wg.Go(func() {
			for i := range 20 {
				b := r.NewBatch()
				content := fmt.Appendf(nil, "writer %d change %d\n", w, i)
				changes := []gitstore.Change{
					{Path: fmt.Sprintf("w%d/%d.txt", w, i), Mode: gitstore.ModeFile, OID: b.AddBlob(content)},
					{Path: fmt.Sprintf("w%d/shared.txt", w), Mode: gitstore.ModeFile, OID: b.AddBlob(fmt.Appendf(nil, "%d", i))},
				}
				tree, err := b.BuildTree(ctx, base, changes)
				if !assert.NoError(t, err) {
					return
				}
				if !assert.NoError(t, b.Flush(ctx)) {
					return
				}
				written.Store(tree, changes[0])
			}
		})
	}
	for range 16 {
		wg.Go(func() {
			for range 50 {
				e, err := r.Lookup(ctx, base, "README.md")
				if !assert.NoError(t, err) {
					return
				}
				data, err := r.ReadBlob(ctx, e.OID)
				assert.NoError(t, err)
				assert.True(t, bytes.Equal(wantReadme, data))
				written.Range(func(k, v any) bool {
					c := v.(gitstore.Change)
					e, err := r.Lookup(ctx, k.(gitstore.OID), c.Path)
					assert.NoError(t, err)
					assert.Equal(t, c.OID, e.OID)
					return true
				})
			}
		})
	}
	wg.Wait()
	n := 0
	written.Range(func(any, any) bool { n++; return true })
	assert.Equal(t, 80, n)
	// Background housekeeping may be merging packs: git fsck, like any
	// reader that does not re-scan, must not run beside it.
	require.NoError(t, r.Close())
	fsck(t, dir)
}

func TestContextCancelled(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := open(t, dir)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	root := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	err := r.List(ctx, root, "", true, func(gitstore.Entry) error { return nil })
	assert.ErrorIs(t, err, context.Canceled)
}

func TestRemoveStaleLocks(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := open(t, dir)
	ctx := t.Context()
	main := oid(t, testrepo.Git(t, dir, "rev-parse", "main"))
	require.NoError(t, r.UpdateRef(ctx, "refs/sessions/s1/head", main, gitstore.ZeroOID))
	lock := filepath.Join(dir, ".git/refs/sessions/s1/head.lock")
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	branchLock := filepath.Join(dir, ".git/refs/heads/main.lock")
	require.NoError(t, os.WriteFile(branchLock, nil, 0o644))
	n, err := r.RemoveStaleLocks("refs/sessions/s1")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.NoFileExists(t, lock)
	assert.FileExists(t, branchLock, "only locks under the prefix go")
	require.NoError(t, r.UpdateRef(ctx, "refs/sessions/s1/head", gitstore.ZeroOID, main))
}

func TestSmallPacksAreCompacted(t *testing.T) {
	dir := testrepo.Build(t, "small")
	r := open(t, dir)
	ctx := t.Context()
	base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
	packsBefore, _ := filepath.Glob(filepath.Join(dir, ".git/objects/pack/pack-*.pack"))
	var trees []gitstore.OID
	for i := range 100 {
		b := r.NewBatch()
		tree, err := b.BuildTree(ctx, base, []gitstore.Change{{Path: fmt.Sprintf("d%d/f.txt", i), Mode: gitstore.ModeFile, OID: b.AddBlob(fmt.Appendf(nil, "%d\n", i))}})
		require.NoError(t, err)
		require.NoError(t, b.Flush(ctx))
		trees = append(trees, tree)
	}
	check := func(r *gitstore.Repo) {
		for i, tree := range trees {
			e, err := r.Lookup(ctx, tree, fmt.Sprintf("d%d/f.txt", i))
			require.NoError(t, err)
			data, err := r.ReadBlob(ctx, e.OID)
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprintf("%d\n", i), string(data))
		}
	}
	check(r)
	// Background housekeeping ran along; one more run, and Close deletes
	// the packs it merged.
	_, err := r.Housekeep(ctx)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	packs, _ := filepath.Glob(filepath.Join(dir, ".git/objects/pack/pack-*.pack"))
	assert.Less(t, len(packs)-len(packsBefore), 16, "100 batches leave fewer packs than housekeeping's trigger")
	check(open(t, dir))
	for _, tree := range trees {
		testrepo.Git(t, dir, "cat-file", "-e", tree.String())
	}
	fsck(t, dir)
}
