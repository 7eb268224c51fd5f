package gitstore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
)

type fileState struct {
	mode gitstore.Mode
	oid  gitstore.OID
}

// TestBuildTreeMatchesGit: random writes, deletes (of files and whole
// directories), mode changes and file/directory swaps over each fixture;
// the tree gitstore builds must have the id git's write-tree gives the
// same final content, and pass fsck --strict.
func TestBuildTreeMatchesGit(t *testing.T) {
	plainRunOnly(t, "random trees built one at a time against git write-tree")
	for _, fixture := range testrepo.Fixtures(t) {
		t.Run(fixture, func(t *testing.T) {
			dir := testrepo.BuildBare(t, fixture)
			r := open(t, dir)
			ctx := t.Context()
			base := oid(t, testrepo.Git(t, dir, "rev-parse", "main^{tree}"))
			baseFiles := map[string]fileState{}
			require.NoError(t, r.List(ctx, base, "", true, func(e gitstore.Entry) error {
				if !e.Mode.IsDir() {
					baseFiles[e.Path] = fileState{e.Mode, e.OID}
				}
				return nil
			}))
			index := filepath.Join(t.TempDir(), "index")

			rapid.Check(t, func(rt *rapid.T) {
				model := maps(baseFiles)
				names := []string{"a", "b", "x.txt", "a.txt", "a-b", "z", "ä", "A"}
				genPath := rapid.Custom(func(rt *rapid.T) string {
					if len(model) > 0 && rapid.Bool().Draw(rt, "existing") {
						keys := sortedPaths(model)
						p := rapid.SampledFrom(keys).Draw(rt, "file")
						if rapid.Bool().Draw(rt, "below") {
							return p + "/" + rapid.SampledFrom(names).Draw(rt, "name")
						}
						return p
					}
					n := rapid.IntRange(1, 4).Draw(rt, "depth")
					parts := make([]string, n)
					for i := range parts {
						parts[i] = rapid.SampledFrom(names).Draw(rt, "name")
					}
					return strings.Join(parts, "/")
				})
				b := r.NewBatch()
				nOps := rapid.IntRange(1, 12).Draw(rt, "ops")
				for range nOps {
					switch rapid.IntRange(0, 3).Draw(rt, "op") {
					case 0, 1: // write
						p := genPath.Draw(rt, "path")
						mode := rapid.SampledFrom([]gitstore.Mode{gitstore.ModeFile, gitstore.ModeExec, gitstore.ModeSymlink}).Draw(rt, "mode")
						if strings.Contains(strings.ToLower(p+"/"), ".gitmodules/") {
							// fsck refuses .gitmodules as a tree or a symlink;
							// sessiond's path validation refuses those writes.
							continue
						}
						data := []byte(rapid.SampledFrom([]string{"", "one\n", "two\n", "bin\x00ary", "target/path"}).Draw(rt, "data"))
						put(model, p, fileState{mode, b.AddBlob(data)})
					case 2: // delete a file or a whole directory
						if len(model) == 0 {
							continue
						}
						p := rapid.SampledFrom(sortedPaths(model)).Draw(rt, "victim")
						if i := strings.LastIndexByte(p, '/'); i > 0 && rapid.Bool().Draw(rt, "whole dir") {
							p = p[:i]
						}
						remove(model, p)
					case 3: // mode change
						if len(model) == 0 {
							continue
						}
						p := rapid.SampledFrom(sortedPaths(model)).Draw(rt, "chmod")
						if f := model[p]; f.mode == gitstore.ModeFile || f.mode == gitstore.ModeExec {
							model[p] = fileState{gitstore.ModeFile + gitstore.ModeExec - f.mode, f.oid}
						}
					}
				}
				changes := diffChanges(baseFiles, model, rapid.Bool().Draw(rt, "collapse dir deletes"))
				switch rapid.IntRange(0, 2).Draw(rt, "order") {
				case 1: // a tree walk's order, which the builder takes as it is
					slices.SortFunc(changes, func(a, b gitstore.Change) int {
						return slices.Compare(strings.Split(a.Path, "/"), strings.Split(b.Path, "/"))
					})
				case 2:
					changes = rapid.Permutation(changes).Draw(rt, "shuffled")
				}
				tree, err := b.BuildTree(ctx, base, changes)
				require.NoError(rt, err)
				require.NoError(rt, b.Flush(ctx))

				// git's answer from the same final content.
				var info strings.Builder
				for _, p := range sortedPaths(model) {
					f := model[p]
					fmt.Fprintf(&info, "%s %s\t%s\n", f.mode, f.oid, p)
				}
				os.Remove(index)
				env := []string{"GIT_INDEX_FILE=" + index}
				testrepo.GitEnv(t, dir, env, nil, "read-tree", "--empty")
				testrepo.GitEnv(t, dir, env, []byte(info.String()), "update-index", "--index-info")
				want := testrepo.GitEnv(t, dir, env, nil, "write-tree")
				require.Equal(rt, want, tree.String(), "changes: %v", changes)
			})
			require.NoError(t, r.Close()) // no housekeeping beside git fsck
			fsck(t, dir)
		})
	}
}

func maps(m map[string]fileState) map[string]fileState {
	out := make(map[string]fileState, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedPaths(m map[string]fileState) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// put writes p, first removing a file at any prefix of p and everything
// below p, as a file system would.
func put(model map[string]fileState, p string, f fileState) {
	for i := range len(p) {
		if p[i] == '/' {
			delete(model, p[:i])
		}
	}
	remove(model, p)
	model[p] = f
}

func remove(model map[string]fileState, p string) {
	delete(model, p)
	for k := range model {
		if strings.HasPrefix(k, p+"/") {
			delete(model, k)
		}
	}
}

// diffChanges turns the final state into builder changes: puts for new or
// changed files, deletes for vanished ones, optionally collapsed into one
// delete per directory that vanished whole; nothing below a put.
func diffChanges(base, final map[string]fileState, collapse bool) []gitstore.Change {
	var changes []gitstore.Change
	puts := map[string]bool{}
	for _, p := range sortedPaths(final) {
		if f := final[p]; base[p] != f {
			changes = append(changes, gitstore.Change{Path: p, Mode: f.mode, OID: f.oid})
			puts[p] = true
		}
	}
	gone := map[string]bool{}
	for _, p := range sortedPaths(base) {
		if _, ok := final[p]; !ok {
			gone[p] = true
		}
	}
	if collapse {
		// A directory with nothing left below it (and nothing written over
		// it) goes in one delete.
		for p := range gone {
			for d := parentDir(p); d != ""; d = parentDir(d) {
				empty := !puts[d]
				for k := range final {
					if strings.HasPrefix(k, d+"/") || k == d {
						empty = false
						break
					}
				}
				if !empty {
					break
				}
				for k := range gone {
					if strings.HasPrefix(k, d+"/") {
						delete(gone, k)
					}
				}
				gone[d] = true
			}
		}
	}
	for _, p := range sortedKeys(gone) {
		changes = append(changes, gitstore.Change{Path: p, Delete: true})
	}
	// Drop changes below a put: the put replaces the whole subtree.
	out := changes[:0]
	for _, c := range changes {
		below := false
		for d := parentDir(c.Path); d != ""; d = parentDir(d) {
			if puts[d] {
				below = true
			}
		}
		if !below {
			out = append(out, c)
		}
	}
	return out
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return ""
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestBuildTreeChangeOrder: names where string order and git order differ
// ("a", "a-b", "a.c", "a/x"), files that become directories and back,
// and the changes given in several orders, among them the tree walk's
// that the builder uses without sorting. Every order must give the tree
// git's write-tree makes of the same content.
func TestBuildTreeChangeOrder(t *testing.T) {
	dir := testrepo.InitBare(t)
	r := open(t, dir)
	ctx := t.Context()
	index := filepath.Join(t.TempDir(), "index")
	env := []string{"GIT_INDEX_FILE=" + index}
	blob := func(s string) gitstore.OID {
		id, err := r.WriteBlob(ctx, []byte(s))
		require.NoError(t, err)
		return id
	}
	writeTree := func(files map[string]gitstore.OID) string {
		var info strings.Builder
		var paths []string
		for p := range files {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		for _, p := range paths {
			fmt.Fprintf(&info, "100644 %s\t%s\n", files[p], p)
		}
		os.Remove(index)
		testrepo.GitEnv(t, dir, env, nil, "read-tree", "--empty")
		testrepo.GitEnv(t, dir, env, []byte(info.String()), "update-index", "--index-info")
		return testrepo.GitEnv(t, dir, env, nil, "write-tree")
	}
	older, newer := blob("old\n"), blob("new\n")
	baseFiles := map[string]gitstore.OID{}
	for _, p := range []string{"a", "a-b", "a.c/x", "a0", "b/a", "b/a-b", "b/a.c/y", "b/a0/z"} {
		baseFiles[p] = older
	}
	base := oid(t, writeTree(baseFiles))
	put := func(p string) gitstore.Change { return gitstore.Change{Path: p, Mode: gitstore.ModeFile, OID: newer} }
	del := func(p string) gitstore.Change { return gitstore.Change{Path: p, Delete: true} }
	changes := []gitstore.Change{
		del("a"), put("a/x"), put("a/x-y"), put("a-b"), // a file becomes a directory
		put("a.c"), // and a directory a file
		put("a0/new"), del("a0"),
		put("b/a"), put("b/a-b"), del("b/a.c/y"), put("b/a.c-d"), put("b/a.c/e"), del("b/a0"), put("b/a0.x"),
	}
	final := map[string]gitstore.OID{}
	for p, id := range baseFiles {
		final[p] = id
	}
	for _, c := range changes {
		for p := range final {
			if p == c.Path || strings.HasPrefix(p, c.Path+"/") {
				delete(final, p)
			}
		}
	}
	for _, c := range changes {
		if !c.Delete {
			final[c.Path] = c.OID
		}
	}
	want := writeTree(final)
	orders := map[string]func(a, b gitstore.Change) int{
		"strings": func(a, b gitstore.Change) int { return strings.Compare(a.Path, b.Path) },
		"reverse": func(a, b gitstore.Change) int { return strings.Compare(b.Path, a.Path) },
		"walk": func(a, b gitstore.Change) int {
			return slices.Compare(strings.Split(a.Path, "/"), strings.Split(b.Path, "/"))
		},
	}
	for name, order := range orders {
		cs := slices.Clone(changes)
		slices.SortFunc(cs, order)
		id, err := r.BuildTree(ctx, base, cs)
		require.NoError(t, err, name)
		assert.Equal(t, want, id.String(), name)
	}
	fsck(t, dir)
}
