package overlay_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/overlay"
)

func TestPutStatusAndEqualToBase(t *testing.T) {
	ctx := t.Context()
	f := openFixture(t, "small")
	o := overlay.New(f.view, overlay.Options{})
	base, err := f.view.Lookup(ctx, "a.txt")
	require.NoError(t, err)
	changed := f.blob(t, "changed\n")

	require.NoError(t, o.PutSized(ctx, "a.txt", changed, gitstore.ModeFile, 8))
	require.NoError(t, o.Put(ctx, "new/dir/file.txt", changed, gitstore.ModeFile))
	e, ok := o.Get("a.txt")
	require.True(t, ok)
	assert.Equal(t, overlay.Modified, e.Status)
	e, _ = o.Get("new/dir/file.txt")
	assert.Equal(t, overlay.Added, e.Status)
	assert.Equal(t, int64(8), o.ContentBytes())

	data, err := o.Read(ctx, "new/dir/file.txt")
	require.NoError(t, err)
	assert.Equal(t, "changed\n", string(data))
	n, err := o.Stat(ctx, "new/dir")
	require.NoError(t, err)
	assert.Equal(t, overlay.Node{Path: "new/dir", Mode: gitstore.ModeDir, Status: overlay.Added}, n)

	// A mode change alone is a modification; changing it back removes it.
	require.NoError(t, o.Put(ctx, "a.txt", base.OID, gitstore.ModeExec))
	e, _ = o.Get("a.txt")
	assert.Equal(t, overlay.Modified, e.Status)
	require.NoError(t, o.Put(ctx, "a.txt", base.OID, gitstore.ModeFile))
	_, ok = o.Get("a.txt")
	assert.False(t, ok, "writing the base content back removes the entry")
	assert.Equal(t, 1, o.Len())
	assert.Equal(t, int64(0), o.ContentBytes())
	n, err = o.Stat(ctx, "a.txt")
	require.NoError(t, err)
	assert.Equal(t, overlay.Unchanged, n.Status)
}

func TestDeleteDirectoryIsOneWhiteout(t *testing.T) {
	ctx := t.Context()
	f := openFixture(t, "small")
	o := overlay.New(f.view, overlay.Options{})
	blob := f.blob(t, "x\n")
	require.NoError(t, o.Put(ctx, "a/b/c/deep.txt", blob, gitstore.ModeFile))
	require.NoError(t, o.Put(ctx, "a/b/new.txt", blob, gitstore.ModeFile))
	require.NoError(t, o.Delete(ctx, "a/moved.txt"))
	require.NoError(t, o.Delete(ctx, "a"))
	aTree, err := f.view.Lookup(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, []overlay.Entry{{Path: "a", Status: overlay.Deleted, Mode: gitstore.ModeDir, OID: aTree.OID}}, o.Entries())
	_, err = o.Stat(ctx, "a/b/sibling.txt")
	assert.ErrorIs(t, err, overlay.ErrNotFound)
	assert.Equal(t, []gitstore.Change{{Path: "a", Delete: true}}, o.Changes())

	// Writing base content back below the deleted directory reopens just
	// the path to it.
	deep, err := f.view.Lookup(ctx, "a/b/c/deep.txt")
	require.NoError(t, err)
	require.NoError(t, o.Put(ctx, "a/b/c/deep.txt", deep.OID, deep.Mode))
	var paths []string
	for _, e := range o.Entries() {
		assert.Equal(t, overlay.Deleted, e.Status)
		paths = append(paths, e.Path)
	}
	assert.Equal(t, []string{"a/b/sibling.txt", "a/moved.txt"}, paths)
	n, err := o.Stat(ctx, "a/b/c")
	require.NoError(t, err)
	assert.Equal(t, overlay.Unchanged, n.Status)
}

func TestDeletingEveryFileCollapses(t *testing.T) {
	ctx := t.Context()
	f := openFixture(t, "small")
	o := overlay.New(f.view, overlay.Options{})
	require.NoError(t, o.Delete(ctx, "a/b/c/deep.txt"))
	require.NoError(t, o.Delete(ctx, "a/b/sibling.txt"))
	// a/b is now empty, so it is one whiteout, and a/ shows as modified.
	entries := o.Entries()
	require.Len(t, entries, 1)
	assert.Equal(t, "a/b", entries[0].Path)
	_, err := o.Stat(ctx, "a/b")
	assert.ErrorIs(t, err, overlay.ErrNotFound)
	require.NoError(t, o.Delete(ctx, "a/moved.txt"))
	entries = o.Entries()
	require.Len(t, entries, 1)
	assert.Equal(t, "a", entries[0].Path)
}

func TestListMergesInGitOrder(t *testing.T) {
	ctx := t.Context()
	f := openFixture(t, "small")
	o := overlay.New(f.view, overlay.Options{})
	blob := f.blob(t, "x\n")
	require.NoError(t, o.Put(ctx, "a-c", blob, gitstore.ModeFile))     // sorts between a-b and a.txt
	require.NoError(t, o.Put(ctx, "a/0.txt", blob, gitstore.ModeFile)) // first in a/
	require.NoError(t, o.Put(ctx, "a.txt", blob, gitstore.ModeExec))
	require.NoError(t, o.Delete(ctx, "a0"))
	require.NoError(t, o.Delete(ctx, "src"))

	type row struct {
		Path   string
		Status overlay.Status
	}
	rows := func(opts overlay.ListOptions) []row {
		var out []row
		for _, n := range listAll(t, o, opts) {
			out = append(out, row{n.Path, n.Status})
		}
		return out
	}
	top := rows(overlay.ListOptions{IncludeDeleted: true})
	want := []row{
		{"README.md", overlay.Unchanged},
		{"a-b", overlay.Unchanged},
		{"a-c", overlay.Added},
		{"a.txt", overlay.Modified},
		{"a", overlay.Modified},
		{"a0", overlay.Deleted},
		{"bin", overlay.Unchanged},
	}
	require.GreaterOrEqual(t, len(top), len(want))
	assert.Equal(t, want, top[:len(want)])
	assert.Contains(t, top, row{"src", overlay.Deleted})
	assert.NotContains(t, rows(overlay.ListOptions{}), row{"src", overlay.Deleted})

	assert.Equal(t, []row{
		{"a-c", overlay.Added},
		{"a.txt", overlay.Modified},
		{"a", overlay.Modified},
		{"a/0.txt", overlay.Added},
		{"a0", overlay.Deleted},
		{"src", overlay.Deleted},
		{"src/lib", overlay.Deleted},
		{"src/lib/lib.go", overlay.Deleted},
		{"src/main.go", overlay.Deleted},
	}, rows(overlay.ListOptions{Recursive: true, OnlyModified: true}))
	assert.Equal(t, []row{{"a/0.txt", overlay.Added}}, rows(overlay.ListOptions{Prefix: "a", OnlyModified: true}))

	err := o.List(ctx, overlay.ListOptions{Prefix: "src"}, func(overlay.Node) error { return nil })
	assert.ErrorIs(t, err, overlay.ErrNotFound)
	err = o.List(ctx, overlay.ListOptions{Prefix: "a.txt"}, func(overlay.Node) error { return nil })
	assert.ErrorIs(t, err, overlay.ErrNotDir)
}

// TestListKeepsDeletions: a deleted file is listed whether or not its
// directory still has files, and a path whose kind changed is listed
// once (issue 13, wrong results 2).
func TestListKeepsDeletions(t *testing.T) {
	ctx := t.Context()
	f := openFixture(t, "small")
	type row struct {
		Path   string
		Status overlay.Status
		Dir    bool
	}
	rows := func(o *overlay.Overlay, opts overlay.ListOptions) []row {
		var out []row
		for _, n := range listAll(t, o, opts) {
			out = append(out, row{n.Path, n.Status, n.IsDir()})
		}
		return out
	}
	only := overlay.ListOptions{Recursive: true, OnlyModified: true}

	// The only file of a/b/c/: its directory goes, the file is listed.
	o := overlay.New(f.view, overlay.Options{})
	require.NoError(t, o.Delete(ctx, "a/b/c/deep.txt"))
	assert.Equal(t, []row{
		{"a", overlay.Modified, true},
		{"a/b", overlay.Modified, true},
		{"a/b/c", overlay.Deleted, true},
		{"a/b/c/deep.txt", overlay.Deleted, false},
	}, rows(o, only))
	assert.Contains(t, rows(o, overlay.ListOptions{Recursive: true, IncludeDeleted: true}), row{"a/b/c/deep.txt", overlay.Deleted, false})

	// A directory replaced by a file: the path once, as the file, and
	// what the directory held as deleted.
	o = overlay.New(f.view, overlay.Options{})
	require.NoError(t, o.Delete(ctx, "a/b"))
	require.NoError(t, o.Put(ctx, "a/b", f.blob(t, "x\n"), gitstore.ModeFile))
	assert.Equal(t, []row{
		{"a", overlay.Modified, true},
		{"a/b", overlay.Added, false},
		{"a/b/c", overlay.Deleted, true},
		{"a/b/c/deep.txt", overlay.Deleted, false},
		{"a/b/sibling.txt", overlay.Deleted, false},
	}, rows(o, only))
	assert.Equal(t, []row{{"a/b", overlay.Added, false}, {"a/moved.txt", overlay.Unchanged, false}},
		rows(o, overlay.ListOptions{Prefix: "a", IncludeDeleted: true}))

	// A file replaced by a directory: once, as the directory.
	o = overlay.New(f.view, overlay.Options{})
	require.NoError(t, o.Delete(ctx, "a0"))
	require.NoError(t, o.Put(ctx, "a0/x", f.blob(t, "x\n"), gitstore.ModeFile))
	assert.Equal(t, []row{{"a0", overlay.Added, true}, {"a0/x", overlay.Added, false}}, rows(o, only))
	var top []row
	for _, r := range rows(o, overlay.ListOptions{IncludeDeleted: true}) {
		if r.Path == "a0" {
			top = append(top, r)
		}
	}
	assert.Equal(t, []row{{"a0", overlay.Added, true}}, top)
}

func TestCloneAndRestore(t *testing.T) {
	ctx := t.Context()
	f := openFixture(t, "small")
	o := overlay.New(f.view, overlay.Options{})
	blob := f.blob(t, "x\n")
	require.NoError(t, o.Put(ctx, "n.txt", blob, gitstore.ModeFile))
	require.NoError(t, o.Delete(ctx, "docs"))
	c := o.Clone()
	require.NoError(t, c.Delete(ctx, "n.txt"))
	assert.Equal(t, 2, o.Len())
	assert.Equal(t, 1, c.Len())

	r, err := overlay.Restore(f.view, overlay.Options{}, o.Entries())
	require.NoError(t, err)
	assert.Equal(t, o.Entries(), r.Entries())
	assert.Equal(t, listAll(t, o, overlay.ListOptions{Recursive: true, IncludeDeleted: true}),
		listAll(t, r, overlay.ListOptions{Recursive: true, IncludeDeleted: true}))

	_, err = overlay.Restore(f.view, overlay.Options{}, []overlay.Entry{{Path: ".git/x", Status: overlay.Added, Mode: gitstore.ModeFile}})
	assert.ErrorIs(t, err, overlay.ErrInvalidPath)
}

func TestBuildTreeWithoutChangesIsBase(t *testing.T) {
	f := openFixture(t, "small")
	o := overlay.New(f.view, overlay.Options{})
	id, err := o.BuildTree(t.Context(), f.repo, f.tree)
	require.NoError(t, err)
	assert.Equal(t, f.tree, id)
}

// failingBase fails List once armed, to check that an operation that
// fails halfway leaves the overlay as it was.
type failingBase struct {
	overlay.Base
	armed bool
}

var errInjected = errors.New("injected failure")

func (b *failingBase) List(ctx context.Context, prefix string, recursive bool, fn func(gitstore.Entry) error) error {
	if b.armed {
		return errInjected
	}
	return b.Base.List(ctx, prefix, recursive, fn)
}

func TestFailedOperationChangesNothing(t *testing.T) {
	ctx := t.Context()
	f := openFixture(t, "small")
	fb := &failingBase{Base: f.view}
	o := overlay.New(fb, overlay.Options{AllowCaseCollisions: true})
	require.NoError(t, o.Delete(ctx, "a"))
	require.NoError(t, o.Put(ctx, "a/x", f.blob(t, "x"), gitstore.ModeFile))
	before := o.Entries()
	deep, err := f.view.Lookup(ctx, "a/b/c/deep.txt")
	require.NoError(t, err)

	// Reopening a/b/c/deep.txt lists a/ after removing its whiteout.
	fb.armed = true
	err = o.Put(ctx, "a/b/c/deep.txt", deep.OID, deep.Mode)
	require.ErrorIs(t, err, errInjected)
	assert.Equal(t, before, o.Entries())
	fb.armed = false
	require.NoError(t, o.Put(ctx, "a/b/c/deep.txt", deep.OID, deep.Mode))
	assert.NotEqual(t, before, o.Entries())
}

func TestEmptyBase(t *testing.T) {
	ctx := t.Context()
	o := overlay.New(nil, overlay.Options{})
	var id gitstore.OID
	id[0] = 1
	require.NoError(t, o.Put(ctx, "d/f", id, gitstore.ModeFile))
	assert.Equal(t, []overlay.Node{
		{Path: "d", Mode: gitstore.ModeDir, Status: overlay.Added},
		{Path: "d/f", Mode: gitstore.ModeFile, OID: id, Status: overlay.Added},
	}, listAll(t, o, overlay.ListOptions{Recursive: true}))
	root, err := o.Stat(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, overlay.Modified, root.Status)
	_, err = o.Read(ctx, "d")
	assert.ErrorIs(t, err, overlay.ErrIsDir)
	require.NoError(t, o.Delete(ctx, "d"))
	assert.Zero(t, o.Len())
}

func TestStatusText(t *testing.T) {
	for _, s := range []overlay.Status{overlay.Unchanged, overlay.Added, overlay.Modified, overlay.Deleted} {
		b, err := s.MarshalText()
		require.NoError(t, err)
		var back overlay.Status
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, s, back)
	}
	assert.Equal(t, "deleted", overlay.Deleted.String())
	var s overlay.Status
	assert.Error(t, s.UnmarshalText([]byte("gone")))
}
