package overlay_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/overlay"
)

// fileVal is what the model holds at a file path.
type fileVal struct {
	Mode gitstore.Mode
	OID  gitstore.OID
}

// model is the obvious implementation of a session's view: the full set
// of files, copied from the base and edited in place.
type model struct {
	base     map[string]fileVal
	baseDirs map[string]gitstore.OID
	files    map[string]fileVal
	// blobs holds the content of every blob the test writes, for the
	// content rules of .gitmodules and .gitattributes.
	blobs map[gitstore.OID][]byte
}

// world is what a property test draws from: a fixture, its model at the
// base, the paths worth touching and the blobs worth writing.
type world struct {
	f     *fixture
	base  *model
	paths []string
	dirs  []string
	vals  []fileVal
}

func newWorld(tb testing.TB, name string) *world {
	tb.Helper()
	ctx := context.Background()
	f := openFixture(tb, name)
	m := &model{base: map[string]fileVal{}, baseDirs: map[string]gitstore.OID{}, blobs: map[gitstore.OID][]byte{}}
	require.NoError(tb, f.view.List(ctx, "", true, func(e gitstore.Entry) error {
		if e.Mode.IsDir() {
			m.baseDirs[e.Path] = e.OID
		} else {
			m.base[e.Path] = fileVal{e.Mode, e.OID}
		}
		return nil
	}))
	m.files = maps.Clone(m.base)
	w := &world{f: f, base: m}
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			w.paths = append(w.paths, p)
		}
	}
	dirs := append([]string{""}, slices.Sorted(maps.Keys(m.baseDirs))...)
	dirs = append(dirs, "new", "new/deeper")
	for _, p := range slices.Sorted(maps.Keys(m.base)) {
		add(p)
		add(p + "/under")
	}
	for _, d := range dirs {
		if d != "" {
			add(d)
		}
		for _, n := range []string{"n1.txt", "n2"} {
			add(strings.TrimPrefix(d+"/"+n, "/"))
		}
	}
	w.dirs = dirs[1:]
	vals := map[fileVal]bool{}
	for _, v := range m.base {
		if v.Mode != gitstore.ModeGitlink {
			vals[v] = true
		}
	}
	contents := []string{"[submodule \"x\"]\n\tpath = x\n", "[submodule \"x\"]\n\tpath = -x\n"}
	for i := range 3 {
		contents = append(contents, fmt.Sprintf("new content %d\n", i))
	}
	for _, content := range contents {
		id := f.blob(tb, content)
		// The blob id is the one git gives the same content.
		require.Equal(tb, testrepo.GitInput(tb, f.dir, []byte(content), "hash-object", "-w", "--stdin"), id.String())
		for _, mode := range []gitstore.Mode{gitstore.ModeFile, gitstore.ModeExec, gitstore.ModeSymlink} {
			vals[fileVal{mode, id}] = true
		}
	}
	for v := range vals {
		if _, ok := m.blobs[v.OID]; !ok {
			data, err := f.repo.ReadBlob(ctx, v.OID)
			require.NoError(tb, err)
			m.blobs[v.OID] = data
		}
	}
	w.vals = slices.SortedFunc(maps.Keys(vals), func(a, b fileVal) int {
		return strings.Compare(a.Mode.String()+a.OID.String(), b.Mode.String()+b.OID.String())
	})
	return w
}

func (m *model) clone() *model {
	return &model{base: m.base, baseDirs: m.baseDirs, files: maps.Clone(m.files), blobs: m.blobs}
}

// isDir reports whether the merged view has a directory at p.
func (m *model) isDir(p string) bool {
	for q := range m.files {
		if strings.HasPrefix(q, p+"/") {
			return true
		}
	}
	return false
}

func (m *model) under(p string) []string {
	var out []string
	for q := range m.files {
		if strings.HasPrefix(q, p+"/") {
			out = append(out, q)
		}
	}
	return out
}

// put predicts and applies a write; the result is the rule that must
// reject it, or "".
func (m *model) put(p string, v fileVal) overlay.Rule {
	switch filepath.Base(p) {
	case ".gitmodules", ".gitattributes", ".gitignore":
		if v.Mode == gitstore.ModeSymlink {
			return overlay.RuleGitmodulesSymlink
		}
	}
	for _, c := range strings.Split(p, "/")[:strings.Count(p, "/")] {
		switch c {
		case ".gitmodules", ".gitattributes", ".gitignore":
			return overlay.RuleGitmodulesBlob
		}
	}
	if cur, ok := m.files[p]; ok && cur.Mode == gitstore.ModeGitlink {
		return overlay.RuleBadFilemode
	}
	for i := range len(p) {
		if p[i] == '/' {
			if _, ok := m.files[p[:i]]; ok {
				return overlay.RuleFileDirectoryCollision
			}
		}
	}
	if m.isDir(p) {
		return overlay.RuleFileDirectoryCollision
	}
	if m.base[p] != v {
		// Not a revert: the content rules (tested against git fsck on
		// their own) apply.
		var pe *overlay.PathError
		if errors.As(overlay.CheckContent(p, v.Mode, m.blobs[v.OID]), &pe) {
			return pe.Rule
		}
	}
	m.files[p] = v
	return ""
}

// del predicts and applies a delete: the rule that must reject it, "" for
// success, or "notFound".
func (m *model) del(p string) overlay.Rule {
	if v, ok := m.files[p]; ok {
		if v.Mode == gitstore.ModeGitlink {
			return overlay.RuleBadFilemode
		}
		delete(m.files, p)
		return ""
	}
	under := m.under(p)
	if len(under) == 0 {
		return "notFound"
	}
	for _, q := range under {
		if m.files[q].Mode == gitstore.ModeGitlink {
			return overlay.RuleBadFilemode
		}
	}
	for _, q := range under {
		delete(m.files, q)
	}
	return ""
}

func ruleOf(err error) overlay.Rule {
	var pe *overlay.PathError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &pe):
		return pe.Rule
	case errors.Is(err, overlay.ErrNotFound):
		return "notFound"
	}
	return overlay.Rule("unexpected: " + err.Error())
}

// step draws one operation, applies it to the overlay and the model, and
// checks that both agree on whether it is allowed.
func (w *world) step(t *rapid.T, o *overlay.Overlay, m *model) {
	ctx := context.Background()
	switch rapid.IntRange(0, 9).Draw(t, "op") {
	case 0, 1, 2, 3: // write
		p := rapid.SampledFrom(w.paths).Draw(t, "path")
		v := rapid.SampledFrom(w.vals).Draw(t, "val")
		if v.Mode == gitstore.ModeSymlink && rapid.Bool().Draw(t, "no symlink") {
			v.Mode = gitstore.ModeFile
		}
		want := m.put(p, v)
		got := ruleOf(o.Put(ctx, p, v.OID, v.Mode))
		if got != want {
			t.Fatalf("put %q %s %s: got %q, want %q", p, v.Mode, v.OID, got, want)
		}
	case 4: // write back the base content
		p := rapid.SampledFrom(slices.Sorted(maps.Keys(m.base))).Draw(t, "base path")
		v := m.base[p]
		want := m.put(p, v)
		if got := ruleOf(o.Put(ctx, p, v.OID, v.Mode)); got != want {
			t.Fatalf("restore %q: got %q, want %q", p, got, want)
		}
	case 5, 6: // delete a file
		p := rapid.SampledFrom(w.paths).Draw(t, "path")
		want := m.del(p)
		if got := ruleOf(o.Delete(ctx, p)); got != want {
			t.Fatalf("delete %q: got %q, want %q", p, got, want)
		}
	case 7: // delete a directory
		p := rapid.SampledFrom(w.dirs).Draw(t, "dir")
		want := m.del(p)
		if got := ruleOf(o.Delete(ctx, p)); got != want {
			t.Fatalf("delete dir %q: got %q, want %q", p, got, want)
		}
	case 8, 9: // change the mode of a file in the view
		var files []string
		for p, v := range m.files {
			if v.Mode == gitstore.ModeFile || v.Mode == gitstore.ModeExec {
				files = append(files, p)
			}
		}
		if len(files) == 0 {
			return
		}
		sort.Strings(files)
		p := rapid.SampledFrom(files).Draw(t, "chmod path")
		v := m.files[p]
		v.Mode ^= gitstore.ModeFile ^ gitstore.ModeExec
		want := m.put(p, v)
		if got := ruleOf(o.Put(ctx, p, v.OID, v.Mode)); got != want {
			t.Fatalf("chmod %q: got %q, want %q", p, got, want)
		}
	}
}

// expectedNodes is the merged view the model describes, with statuses, in
// git order: files and directories, and (withDeleted) the tops of what was
// deleted.
func (m *model) expectedNodes(withDeleted bool) []overlay.Node {
	var out []overlay.Node
	dirs := map[string]bool{}
	for p, v := range m.files {
		st := overlay.Added
		if b, ok := m.base[p]; ok {
			st = overlay.Modified
			if b == v {
				st = overlay.Unchanged
			}
		}
		out = append(out, overlay.Node{Path: p, Mode: v.Mode, OID: v.OID, Status: st})
		for i := range len(p) {
			if p[i] == '/' {
				dirs[p[:i]] = true
			}
		}
	}
	for d := range dirs {
		n := overlay.Node{Path: d, Mode: gitstore.ModeDir, Status: overlay.Added}
		if id, ok := m.baseDirs[d]; ok {
			n.Status = overlay.Modified
			if m.sameSubtree(d) {
				n.Status, n.OID = overlay.Unchanged, id
			}
		}
		out = append(out, n)
	}
	if withDeleted {
		// Every base file and directory that is gone, unless its path
		// holds the other kind now (then that is listed, once).
		for p, v := range m.base {
			if _, ok := m.files[p]; !ok && !dirs[p] {
				out = append(out, overlay.Node{Path: p, Mode: v.Mode, OID: v.OID, Status: overlay.Deleted})
			}
		}
		for d, id := range m.baseDirs {
			if _, file := m.files[d]; !dirs[d] && !file {
				out = append(out, overlay.Node{Path: d, Mode: gitstore.ModeDir, OID: id, Status: overlay.Deleted})
			}
		}
	}
	key := func(n overlay.Node) string {
		if n.IsDir() {
			return n.Path + "/"
		}
		return n.Path
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}

func (m *model) sameSubtree(d string) bool {
	count := 0
	for p, v := range m.base {
		if strings.HasPrefix(p, d+"/") {
			count++
			if m.files[p] != v {
				return false
			}
		}
	}
	return count == len(m.under(d))
}

// check compares every view of the overlay with the model.
func check(t *rapid.T, o *overlay.Overlay, m *model) {
	ctx := context.Background()
	list := func(opts overlay.ListOptions) []overlay.Node {
		var out []overlay.Node
		if err := o.List(ctx, opts, func(n overlay.Node) error {
			out = append(out, n)
			return nil
		}); err != nil {
			t.Fatalf("list %+v: %v", opts, err)
		}
		return out
	}
	eq := func(what string, got, want []overlay.Node) {
		if !slices.Equal(got, want) {
			t.Fatalf("%s:\n got %v\nwant %v\nentries %v", what, got, want, o.Entries())
		}
	}
	eq("recursive listing", list(overlay.ListOptions{Recursive: true}), m.expectedNodes(false))
	withDeleted := m.expectedNodes(true)
	eq("listing with deletions", list(overlay.ListOptions{Recursive: true, IncludeDeleted: true}), withDeleted)
	var changed []overlay.Node
	for _, n := range withDeleted {
		if n.Status != overlay.Unchanged {
			changed = append(changed, n)
		}
	}
	eq("only modified", list(overlay.ListOptions{Recursive: true, OnlyModified: true}), changed)

	// One level of each directory agrees with the recursive listing.
	dirs := []string{""}
	for _, n := range withDeleted {
		if n.IsDir() && n.Status != overlay.Deleted {
			dirs = append(dirs, n.Path)
		}
	}
	for _, d := range dirs {
		var want []overlay.Node
		for _, n := range withDeleted {
			if filepath.Dir(n.Path) == d || (d == "" && !strings.Contains(n.Path, "/")) {
				want = append(want, n)
			}
		}
		eq(fmt.Sprintf("one level of %q", d), list(overlay.ListOptions{Prefix: d, IncludeDeleted: true}), want)
	}

	// Stat agrees with the listing, and deleted paths are gone.
	for _, n := range withDeleted {
		got, err := o.Stat(ctx, n.Path)
		if n.Status == overlay.Deleted {
			if err == nil && got.IsDir() == n.IsDir() {
				t.Fatalf("stat deleted %q: %v", n.Path, got)
			}
			continue
		}
		if err != nil || got != n {
			t.Fatalf("stat %q: %v %v, want %v", n.Path, got, err, n)
		}
	}

	// Invariant: no entry is equal to the base.
	for _, e := range o.Entries() {
		if e.Status == overlay.Unchanged {
			t.Fatalf("entry %v is unchanged", e)
		}
	}
}

func TestOverlayMatchesModel(t *testing.T) {
	for _, name := range []string{"small", "gitlink"} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, name)
			rapid.Check(t, func(t *rapid.T) {
				o := overlay.New(w.f.view, overlay.Options{})
				m := w.base.clone()
				n := rapid.IntRange(1, 25).Draw(t, "steps")
				for range n {
					w.step(t, o, m)
					check(t, o, m)
				}
				// A clone restored from the entries shows the same view.
				r, err := overlay.Restore(w.f.view, overlay.Options{}, o.Entries())
				if err != nil {
					t.Fatal(err)
				}
				check(t, r, m)
			})
		})
	}
}

// TestTreeFidelity builds the tree of random overlays through gitstore and
// compares it with the tree the git CLI writes for the same files from a
// temporary index; at the end every object passes git fsck --strict.
func TestTreeFidelity(t *testing.T) {
	plainRunOnly(t, "random overlays' trees against git write-tree")
	for _, name := range testrepo.Fixtures(t) {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, name)
			index := filepath.Join(t.TempDir(), "index")
			checks := 0
			rapid.Check(t, func(rt *rapid.T) {
				ctx := context.Background()
				o := overlay.New(w.f.view, overlay.Options{})
				m := w.base.clone()
				n := rapid.IntRange(1, 30).Draw(rt, "steps")
				for range n {
					w.step(rt, o, m)
				}
				got, err := o.BuildTree(ctx, w.f.repo, w.f.tree)
				if err != nil {
					rt.Fatalf("build tree: %v\nchanges %v", err, o.Changes())
				}
				var info strings.Builder
				for _, p := range slices.Sorted(maps.Keys(m.files)) {
					v := m.files[p]
					fmt.Fprintf(&info, "%s %s\t%s\n", v.Mode, v.OID, p)
				}
				gitIndex(t, w.f.dir, index, "", "read-tree", "--empty")
				gitIndex(t, w.f.dir, index, info.String(), "update-index", "--index-info")
				want := gitIndex(t, w.f.dir, index, "", "write-tree")
				if got.String() != want {
					rt.Fatalf("tree %s, git writes %s\nchanges %v", got, want, o.Changes())
				}
				checks++
			})
			// Stopped first: a housekeeping run still deleting the packs it
			// merged would fail fsck's listing.
			require.NoError(t, w.f.repo.Close())
			testrepo.Git(t, w.f.dir, "fsck", "--strict", "--no-dangling")
			t.Logf("%d trees matched git", checks)
		})
	}
}

// gitIndex runs git with GIT_INDEX_FILE set to index (testrepo.Git drops
// GIT_* variables from the environment, so it cannot do this).
func gitIndex(tb testing.TB, dir, index, stdin string, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(testrepo.Env(), "GIT_INDEX_FILE="+index)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			tb.Fatalf("git %v: %v\n%s", args, err, ee.Stderr)
		}
		tb.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}
