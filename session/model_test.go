package session_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/session"
)

// file is the model of one file: content and mode.
type file struct {
	content string
	mode    gitstore.Mode
}

// viewModes is the session's view with modes: path → file.
func (e *env) viewModes(t require.TestingT, id uuid.UUID) map[string]file {
	infos, err := e.m.ListFiles(e.t.Context(), id, session.ListOptions{Recursive: true})
	require.NoError(t, err)
	out := map[string]file{}
	for _, fi := range infos {
		if fi.Type == "dir" || fi.Type == "submodule" {
			continue
		}
		data, _, err := e.m.Read(e.t.Context(), id, fi.Path, 0, -1)
		require.NoError(t, err)
		out[fi.Path] = file{string(data), fi.Mode}
	}
	return out
}

func (e *env) treeModes(t require.TestingT, tree gitstore.OID) map[string]file {
	out := map[string]file{}
	for p, content := range e.treeFiles(tree) {
		out[p] = file{content: content}
	}
	for _, line := range strings.Split(e.git("ls-tree", "-r", tree.String()), "\n") {
		meta, p, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if f[1] != "blob" {
			continue
		}
		m, err := gitstore.ParseMode(f[0])
		require.NoError(t, err)
		x := out[p]
		x.mode = m
		out[p] = x
	}
	return out
}

// blocked reports whether writing p collides with the model: a file at a
// proper prefix of p, or a directory at p.
func blocked(model map[string]file, p string) bool {
	for i := range len(p) {
		if p[i] == '/' {
			if _, ok := model[p[:i]]; ok {
				return true
			}
		}
	}
	for k := range model {
		if strings.HasPrefix(k, p+"/") {
			return true
		}
	}
	return false
}

// TestSessionAgainstModel runs random operations on a session and checks
// its view, its listing and every checkpoint's tree (read back with the
// git CLI) against a map from path to content and mode, after every step.
// Restarts of the engine are among the operations.
func TestSessionAgainstModel(t *testing.T) {
	e := newEnv(t, "small")
	base := e.treeModes(t, e.oid("main^{tree}"))
	names := []string{"a", "b", "c.txt", "d0"}
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		ctx := t.Context()
		s := e.create(sessionOpts())
		model := maps.Clone(base)
		var checkpoints []map[string]file
		genNew := rapid.Custom(func(rt *rapid.T) string {
			parts := make([]string, rapid.IntRange(1, 3).Draw(rt, "depth"))
			for i := range parts {
				parts[i] = rapid.SampledFrom(names).Draw(rt, "name")
			}
			return strings.Join(parts, "/")
		})
		existing := func(rt *rapid.T, label string) string {
			keys := slices.Sorted(maps.Keys(model))
			return rapid.SampledFrom(keys).Draw(rt, label)
		}
		steps := rapid.IntRange(1, 15).Draw(rt, "steps")
		for range steps {
			n++
			switch op := rapid.IntRange(0, 9).Draw(rt, "op"); {
			case op <= 3: // write, often over an existing file
				p := genNew.Draw(rt, "path")
				if len(model) > 0 && rapid.Bool().Draw(rt, "overwrite") {
					p = existing(rt, "target")
				}
				mode := rapid.SampledFrom([]gitstore.Mode{gitstore.ModeFile, gitstore.ModeExec}).Draw(rt, "mode")
				content := fmt.Sprintf("step %d\n", n)
				_, _, err := e.m.Write(ctx, s.ID, p, []byte(content), session.WriteOptions{Mode: mode})
				if blocked(model, p) {
					require.Error(rt, err, "write %q should collide", p)
				} else {
					require.NoError(rt, err, "write %q", p)
					model[p] = file{content, mode}
				}
			case op == 4: // delete a file
				if len(model) == 0 {
					continue
				}
				p := existing(rt, "victim")
				_, err := e.m.Delete(ctx, s.ID, p, false, "")
				require.NoError(rt, err, "delete %q", p)
				delete(model, p)
			case op == 5: // delete a directory
				if len(model) == 0 {
					continue
				}
				p := existing(rt, "in dir")
				i := strings.LastIndexByte(p, '/')
				if i < 0 {
					continue
				}
				dir := p[:i]
				_, err := e.m.Delete(ctx, s.ID, dir, true, "")
				require.NoError(rt, err, "delete dir %q", dir)
				for k := range model {
					if strings.HasPrefix(k, dir+"/") {
						delete(model, k)
					}
				}
			case op == 6: // move or copy a file to a fresh place
				if len(model) == 0 {
					continue
				}
				src := existing(rt, "src")
				dst := fmt.Sprintf("moved%d/%s", n, src)
				move := rapid.Bool().Draw(rt, "move")
				var err error
				if move {
					_, err = e.m.Move(ctx, s.ID, src, dst, "")
				} else {
					_, err = e.m.Copy(ctx, s.ID, src, dst, "")
				}
				require.NoError(rt, err, "move=%v %q → %q", move, src, dst)
				model[dst] = model[src]
				if move {
					delete(model, src)
				}
			case op == 7: // checkpoint
				cp, err := e.m.Checkpoint(ctx, s.ID, "", "")
				require.NoError(rt, err)
				require.Equal(rt, len(checkpoints)+1, cp.N)
				require.Equal(rt, model, e.treeModes(rt, cp.Tree), "checkpoint %d tree", cp.N)
				checkpoints = append(checkpoints, maps.Clone(model))
			case op == 8: // rollback
				if len(checkpoints) == 0 {
					continue
				}
				k := rapid.IntRange(1, len(checkpoints)).Draw(rt, "rollback to")
				cp, _, err := e.m.Rollback(ctx, s.ID, fmt.Sprint(k), "")
				require.NoError(rt, err)
				model = maps.Clone(checkpoints[k-1])
				require.Equal(rt, model, e.treeModes(rt, cp.Tree))
				checkpoints = append(checkpoints, maps.Clone(model))
			case op == 9:
				e.restart()
			}
			require.Equal(rt, model, e.viewModes(rt, s.ID), "view after step")
			kept, full, err := e.m.TreesForTest(ctx, s.ID)
			require.NoError(rt, err)
			require.Equal(rt, full, kept, "the incrementally kept tree is the full build")
		}
		// The log accounts for every change, in order.
		muts, err := e.m.Mutations(ctx, s.ID, 0, 0)
		require.NoError(rt, err)
		for i, mu := range muts {
			require.Equal(rt, int64(i+1), mu.Seq)
		}
		_, err = e.m.Stat(ctx, s.ID, "no/such/file")
		require.True(rt, errors.Is(err, record.ErrNotFound))
	})
	// Background housekeeping may be merging packs, and git fsck does not
	// re-scan packs that vanish under it.
	require.NoError(t, e.en.Close())
	testrepoFsck(t, e)
}

func sessionOpts() session.CreateOptions {
	return session.CreateOptions{Repo: "r", Base: "main", AgentID: "model"}
}
