package merge_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/merge"
)

type file struct {
	mode gitstore.Mode
	data []byte
}

type model map[string]file

func (m model) clone() model {
	out := make(model, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (m model) paths() []string {
	ps := make([]string, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// canPut reports whether a file can go at p without a file/directory
// clash with the files already there (p itself may be replaced).
func (m model) canPut(p string) bool {
	for q := range m {
		if strings.HasPrefix(q, p+"/") || strings.HasPrefix(p, q+"/") {
			return false
		}
	}
	return true
}

var sig = gitstore.Signature{Name: "T", Email: "t@example.com", When: time.Unix(1700000000, 0).UTC()}

// commitModel queues m as a tree and a commit with the given parents.
func commitModel(ctx context.Context, t require.TestingT, b *gitstore.Batch, m model, parents ...gitstore.OID) (tree, commit gitstore.OID) {
	changes := make([]gitstore.Change, 0, len(m))
	for _, p := range m.paths() {
		f := m[p]
		changes = append(changes, gitstore.Change{Path: p, Mode: f.mode, OID: b.AddBlob(f.data)})
	}
	tree, err := b.BuildTree(ctx, gitstore.ZeroOID, changes)
	require.NoError(t, err)
	commit = b.AddCommit(gitstore.NewCommit{Tree: tree, Parents: parents, Author: sig, Committer: sig, Message: "m\n"})
	return tree, commit
}

// commitThree commits base, and ours and theirs as its children.
func commitThree(ctx context.Context, t require.TestingT, repo *gitstore.Repo, base, ours, theirs model) (bc, oc, tc gitstore.OID) {
	b := repo.NewBatch()
	_, bc = commitModel(ctx, t, b, base)
	_, oc = commitModel(ctx, t, b, ours, bc)
	_, tc = commitModel(ctx, t, b, theirs, bc)
	require.NoError(t, b.Flush(ctx))
	return bc, oc, tc
}

var (
	dirs  = []string{"", "a/", "b/", "a/c/"}
	names = []string{"f1", "f2", "f3", "f4", "g", "h.txt"}
)

func genPath(rt *rapid.T, label string) string {
	return rapid.SampledFrom(dirs).Draw(rt, label+"-dir") + rapid.SampledFrom(names).Draw(rt, label+"-name")
}

func genLines(rt *rapid.T, label string, minLines int) []byte {
	n := rapid.IntRange(minLines, 14).Draw(rt, label+"-n")
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "l%d\n", rapid.IntRange(0, 24).Draw(rt, label+"-line"))
	}
	if b.Len() > 0 && rapid.IntRange(0, 9).Draw(rt, label+"-noeol") == 0 {
		b.Truncate(b.Len() - 1)
	}
	return b.Bytes()
}

func genFile(rt *rapid.T, label string) file {
	data := genLines(rt, label, 0)
	switch rapid.IntRange(0, 19).Draw(rt, label+"-kind") {
	case 0:
		data = append([]byte("bin\x00"), data...)
	case 1:
		return file{gitstore.ModeExec, data}
	case 2:
		return file{gitstore.ModeSymlink, []byte(genPath(rt, label+"-target"))}
	}
	return file{gitstore.ModeFile, data}
}

// editLines replaces, inserts or deletes a few lines of data.
func editLines(rt *rapid.T, label string, data []byte) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	at := rapid.IntRange(0, len(lines)).Draw(rt, label+"-at")
	del := rapid.IntRange(0, min(3, len(lines)-at)).Draw(rt, label+"-del")
	ins := strings.SplitAfter(string(genLines(rt, label+"-ins", 0)), "\n")
	if len(ins) > 0 && ins[len(ins)-1] == "" {
		ins = ins[:len(ins)-1]
	}
	if at+del < len(lines) { // keep inner lines terminated
		for i, l := range ins {
			if !strings.HasSuffix(l, "\n") {
				ins[i] = l + "\n"
			}
		}
	}
	out := slices.Concat(lines[:at], ins, lines[at+del:])
	return []byte(strings.Join(out, ""))
}

// mutate applies a few random changes of every kind the merge knows to m.
func mutate(rt *rapid.T, label string, m model) {
	ops := rapid.IntRange(0, 6).Draw(rt, label+"-ops")
	for i := 0; i < ops; i++ {
		l := fmt.Sprintf("%s%d", label, i)
		ps := m.paths()
		op := rapid.IntRange(0, 11).Draw(rt, l+"-op")
		if len(ps) == 0 {
			op = 1
		}
		switch op {
		case 0, 7, 8: // edit
			p := rapid.SampledFrom(ps).Draw(rt, l+"-p")
			f := m[p]
			if f.mode != gitstore.ModeSymlink {
				f.data = editLines(rt, l, f.data)
				m[p] = f
			}
		case 1: // add
			p := genPath(rt, l+"-new")
			if _, ok := m[p]; !ok && m.canPut(p) {
				m[p] = genFile(rt, l)
			}
		case 2: // delete
			delete(m, rapid.SampledFrom(ps).Draw(rt, l+"-p"))
		case 3: // rename within its directory, maybe edited
			p := rapid.SampledFrom(ps).Draw(rt, l+"-p")
			q := path.Join(path.Dir(p), rapid.SampledFrom(names).Draw(rt, l+"-to"))
			if _, ok := m[q]; ok || !m.canPut(q) {
				continue
			}
			f := m[p]
			delete(m, p)
			if f.mode != gitstore.ModeSymlink && rapid.Bool().Draw(rt, l+"-edit") {
				f.data = append(slices.Clone(f.data), "l99\n"...)
			}
			m[q] = f
		case 4: // mode change
			p := rapid.SampledFrom(ps).Draw(rt, l+"-p")
			f := m[p]
			switch f.mode {
			case gitstore.ModeFile:
				f.mode = gitstore.ModeExec
			case gitstore.ModeExec:
				f.mode = gitstore.ModeFile
			}
			m[p] = f
		case 5: // a file becomes a directory
			p := rapid.SampledFrom(ps).Draw(rt, l+"-p")
			delete(m, p)
			m[p+"/"+rapid.SampledFrom(names).Draw(rt, l+"-child")] = genFile(rt, l)
		case 6: // a directory becomes a file
			d := rapid.SampledFrom([]string{"a", "b", "a/c"}).Draw(rt, l+"-d")
			for _, q := range ps {
				if strings.HasPrefix(q, d+"/") {
					delete(m, q)
				}
			}
			if m.canPut(d) {
				m[d] = genFile(rt, l)
			}
		case 10, 11: // rename a directory: all its files, or most of them
			d := rapid.SampledFrom([]string{"a", "b", "a/c"}).Draw(rt, l+"-from")
			to := rapid.SampledFrom([]string{"a", "b", "b/c", "d", "e/f", ""}).Draw(rt, l+"-to")
			if to == d || strings.HasPrefix(to, d+"/") {
				continue
			}
			keep := rapid.IntRange(0, 3).Draw(rt, l+"-keep") == 0
			for j, q := range ps {
				rest, ok := strings.CutPrefix(q, d+"/")
				if !ok || keep && j%3 == 0 {
					continue
				}
				nq := path.Join(to, rest)
				if _, taken := m[nq]; taken {
					continue
				}
				f := m[q]
				delete(m, q)
				if !m.canPut(nq) {
					m[q] = f
					continue
				}
				m[nq] = f
			}
		case 9: // binary content
			p := rapid.SampledFrom(ps).Draw(rt, l+"-p")
			if m[p].mode != gitstore.ModeSymlink {
				m[p] = file{m[p].mode, append([]byte("\x00"), genLines(rt, l, 1)...)}
			}
		}
	}
}

// gitMergeTree runs git merge-tree --write-tree on two commits with
// merge.directoryRenames set to dirRenames ("" for git's default) and
// returns its tree, whether the merge is clean, and the conflicted paths.
func gitMergeTree(t require.TestingT, dir, dirRenames string, ours, theirs gitstore.OID) (string, bool, []string) {
	args := []string{"merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", ours.String(), theirs.String()}
	if dirRenames != "" {
		args = append([]string{"-c", "merge.directoryRenames=" + dirRenames}, args...)
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = testrepo.Env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && !exit.Exited() && strings.Contains(stderr.String(), "Assertion") {
		// git's merge-ort aborts on some inputs (an assertion in
		// merge-ort.c that both sides' entries have one type): there is no
		// answer of git's to compare with, so the case is set aside.
		if s, ok := t.(interface{ Skipf(string, ...any) }); ok {
			s.Skipf("git merge-tree aborted: %s", stderr.String())
		}
	}
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		require.NoError(t, err, stderr.String())
	}
	fields := strings.Split(string(out), "\x00")
	var paths []string
	for _, f := range fields[1:] {
		if f == "" {
			break
		}
		paths = append(paths, f)
	}
	if err == nil {
		require.Empty(t, paths)
	}
	return fields[0], err == nil, paths
}

// conflictPaths lists the paths git records as conflicted for cs.
func conflictPaths(cs []merge.Conflict) []string {
	var out []string
	for _, c := range cs {
		switch {
		case c.Kind == merge.ConflictDirRenameSplit, c.Kind == merge.ConflictDirRenameCollision:
			// about directories: git records no file
		case len(c.GitPaths) > 0:
			out = append(out, c.GitPaths...)
		default:
			out = append(out, c.Path)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestMergeMatchesGitMergeTree: random base trees and two random sets of
// changes (overlapping and separate edits, adds, deletes, renames of files
// and directories, mode changes, file/directory swaps, symlinks, binary
// files), merged with each of git's directory rename modes. A clean merge
// must give git merge-tree's tree id; a conflicted one git's conflicted
// paths. 6 × 100 cases.
func TestMergeMatchesGitMergeTree(t *testing.T) {
	dir := testrepo.InitBare(t)
	repo, err := gitstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	ctx := t.Context()
	var clean, conflicted, skipped int
	for batch := range 6 {
		t.Run(fmt.Sprintf("batch%d", batch), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				base := model{}
				for i := range rapid.IntRange(1, 10).Draw(rt, "files") {
					p := genPath(rt, fmt.Sprint("base", i))
					if base.canPut(p) {
						base[p] = genFile(rt, fmt.Sprint("base", i))
					}
				}
				ours, theirs := base.clone(), base.clone()
				mutate(rt, "ours", ours)
				mutate(rt, "theirs", theirs)
				if rapid.IntRange(0, 4).Draw(rt, "same") == 0 {
					for _, p := range ours.paths() { // one change made on both sides
						f := ours[p]
						if g, ok := base[p]; !ok || !bytes.Equal(g.data, f.data) {
							if theirs.canPut(p) {
								theirs[p] = f
							}
							break
						}
					}
				}
				bc, oc, tc := commitThree(ctx, rt, repo, base, ours, theirs)

				mode := rapid.SampledFrom([]merge.DirRenameMode{
					merge.DirRenamesConflict, merge.DirRenamesApply, merge.DirRenamesOff,
				}).Draw(rt, "directory-renames")
				gitMode := map[merge.DirRenameMode]string{merge.DirRenamesApply: "true", merge.DirRenamesOff: "false"}[mode]
				gitTree, gitClean, gitConflicts := gitMergeTree(rt, dir, gitMode, oc, tc)
				rt.Logf("base %s\nours %s\ntheirs %s", describe(base), describe(ours), describe(theirs))
				res, err := merge.Merge(ctx, repo, bc, oc, tc, merge.MergeOptions{
					OursLabel: oc.String(), TheirsLabel: tc.String(), DirectoryRenames: mode,
				})
				var ce *merge.ConflictError
				switch {
				case gitClean && strings.Contains(testrepo.Git(t, dir, "ls-tree", "-r", gitTree), gitstore.ZeroOID.String()):
					// git 2.39 (and later) loses the file when a directory
					// rename moves one that replaced a directory of the base
					// (apply_directory_rename_modifications clears stage 1 of
					// the copy it moves) and writes a gitlink with a null id,
					// a tree fsck rejects, or reports a conflict against that
					// empty stage. sessiond moves the file; there is no git
					// answer to compare with.
					require.NoError(rt, err)
					skipped++
				case gitClean && errors.As(err, &ce) && gitLostAFile(t, dir, gitTree, ce, base, ours, theirs):
					// git 2.39 moves a file one side added in a directory
					// the other side renamed to below a file both sides
					// have there, then leaves it out of its tree without a
					// word; sessiond keeps it where it was, in conflict.
					skipped++
				case gitClean:
					require.NoError(rt, err, "git merged cleanly to %s", gitTree)
					if gitTree != res.Tree.String() {
						rt.Logf("git vs ours:\n%s", testrepo.Git(t, dir, "diff-tree", "-r", "-p", gitTree, res.Tree.String()))
					}
					require.Equal(rt, gitTree, res.Tree.String())
					clean++
				default:
					require.ErrorAs(rt, err, &ce, "git conflicts: %q", gitConflicts)
					if got := conflictPaths(ce.Conflicts); !slices.Equal(gitConflicts, got) {
						msgs := gitMergeTreeMessages(dir, gitMode, oc, tc)
						if strings.Contains(msgs, "000000 "+gitstore.ZeroOID.String()) {
							// The same loss as above: git's conflict has a
							// stage with no file, which it cannot have.
							skipped++
							return
						}
						rt.Logf("ours: %+v", ce.Conflicts)
						rt.Logf("git:\n%s", msgs)
					}
					require.Equal(rt, gitConflicts, conflictPaths(ce.Conflicts))
					conflicted++
				}
			})
		})
	}
	t.Logf("%d clean merges, %d conflicted, %d where git writes a broken tree", clean, conflicted, skipped)
}

// gitLostAFile reports whether git's clean merge to gitTree lost a file
// where sessiond's merge found only directory rename collisions (ce): a
// file one side added, at a path the other side does not have and with
// content that is nowhere in the base, is nowhere in git's tree.
func gitLostAFile(t *testing.T, dir, gitTree string, ce *merge.ConflictError, base, ours, theirs model) bool {
	for _, c := range ce.Conflicts {
		if c.Kind != merge.ConflictDirRenameCollision {
			return false
		}
	}
	inBase := map[gitstore.OID]bool{}
	for _, f := range base {
		inBase[gitstore.HashObject(gitstore.KindBlob, f.data)] = true
	}
	listing := testrepo.Git(t, dir, "ls-tree", "-r", gitTree)
	for _, sides := range [][2]model{{ours, theirs}, {theirs, ours}} {
		for p, f := range sides[0] {
			_, based := base[p]
			_, other := sides[1][p]
			id := gitstore.HashObject(gitstore.KindBlob, f.data)
			if !based && !other && !inBase[id] && !strings.Contains(listing, id.String()) {
				return true
			}
		}
	}
	return false
}

// gitMergeTreeMessages is git merge-tree's full output, to explain a
// difference.
func gitMergeTreeMessages(dir, dirRenames string, ours, theirs gitstore.OID) string {
	cmd := exec.Command("git", "-c", "merge.directoryRenames="+cmp.Or(dirRenames, "conflict"), "merge-tree", "--write-tree", ours.String(), theirs.String())
	cmd.Dir = dir
	cmd.Env = testrepo.Env()
	out, _ := cmd.CombinedOutput()
	return string(out)
}

func describe(m model) string {
	var b strings.Builder
	for _, p := range m.paths() {
		f := m[p]
		fmt.Fprintf(&b, "%s:%o:%x ", p, f.mode, gitstore.HashObject(gitstore.KindBlob, f.data).String()[:6])
	}
	return b.String()
}

// TestMergeNameOrderMatchesGit: files and directories whose names extend
// one another with a byte that sorts below '/' ("a", "a-b", "a.c"), so a
// directory's place in git order differs from its name's, and a file and
// a directory of one name meet across the sides. Compared with git
// merge-tree as above.
func TestMergeNameOrderMatchesGit(t *testing.T) {
	dir := testrepo.InitBare(t)
	repo, err := gitstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	ctx := t.Context()
	names := []string{"a", "a-b", "a.c", "b"}
	genPath := func(rt *rapid.T, label string) string {
		parts := make([]string, rapid.IntRange(1, 2).Draw(rt, label+"-depth"))
		for i := range parts {
			parts[i] = rapid.SampledFrom(names).Draw(rt, label+"-name")
		}
		return strings.Join(parts, "/")
	}
	// Contents name their path, so no two files are similar enough to
	// count as renamed: this test is about names, not renames.
	genData := func(rt *rapid.T, p, label string) []byte {
		return fmt.Appendf(nil, "%s 1\n%s 2\n%s %d\n", p, p, p, rapid.IntRange(0, 3).Draw(rt, label))
	}
	change := func(rt *rapid.T, label string, m model) {
		for i := range rapid.IntRange(0, 6).Draw(rt, label+"-ops") {
			l := fmt.Sprint(label, i)
			p := genPath(rt, l+"-p")
			switch rapid.IntRange(0, 2).Draw(rt, l+"-op") {
			case 0: // put a file, replacing what is in the way
				for q := range m {
					if q == p || strings.HasPrefix(q, p+"/") || strings.HasPrefix(p, q+"/") {
						delete(m, q)
					}
				}
				m[p] = file{gitstore.ModeFile, genData(rt, p, l+"-data")}
			case 1: // delete a file or a directory
				for q := range m {
					if q == p || strings.HasPrefix(q, p+"/") {
						delete(m, q)
					}
				}
			case 2: // edit a file
				if f, ok := m[p]; ok {
					m[p] = file{f.mode, append(slices.Clone(f.data), genData(rt, p, l+"-more")...)}
				}
			}
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		base := model{}
		change(rt, "base", base)
		ours, theirs := base.clone(), base.clone()
		change(rt, "ours", ours)
		change(rt, "theirs", theirs)
		bc, oc, tc := commitThree(ctx, rt, repo, base, ours, theirs)

		gitTree, gitClean, gitConflicts := gitMergeTree(rt, dir, "", oc, tc)
		rt.Logf("base %s\nours %s\ntheirs %s", describe(base), describe(ours), describe(theirs))
		res, err := merge.Merge(ctx, repo, bc, oc, tc, merge.MergeOptions{
			OursLabel: oc.String(), TheirsLabel: tc.String(),
		})
		if gitClean {
			require.NoError(rt, err, "git merged cleanly to %s", gitTree)
			require.Equal(rt, gitTree, res.Tree.String())
			return
		}
		var ce *merge.ConflictError
		require.ErrorAs(rt, err, &ce, "git conflicts: %q", gitConflicts)
		require.Equal(rt, gitConflicts, conflictPaths(ce.Conflicts))
	})
}

// A file theirs added in a directory ours renamed, that the rename would
// put below a file both sides renamed to the same place: ours renamed
// a/c/f3 to b/f3 (and so a/c to b), theirs did too and added a/c/f3/g.
// git merge-tree moves a/c/f3/g to b/f3/g and then leaves it out of its
// clean tree; sessiond once failed the merge ("b/f3 is a file:
// file/directory collision"). It is a directory rename collision, and
// kept conflicts keep the file where theirs put it.
func TestDirRenameBelowAFileBothSidesHave(t *testing.T) {
	dir := testrepo.InitBare(t)
	repo, err := gitstore.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	text := func(s string) file { return file{gitstore.ModeFile, []byte(s)} }
	moved, added := text("1\n2\n3\n4\n5\n6\n7\n8\n"), text("added below\n")
	base := model{"a/c/f3": moved, "keep": text("k\n")}
	ours := model{"b/f3": moved, "keep": text("k\n")}
	theirs := model{"a/c/f3/g": added, "a/c/h.txt": text("h\n"), "b/f3": moved, "keep": text("k\n")}
	ctx := t.Context()
	bc, oc, tc := commitThree(ctx, t, repo, base, ours, theirs)

	gitTree, gitClean, _ := gitMergeTree(t, dir, "true", oc, tc)
	require.True(t, gitClean)
	listing := testrepo.Git(t, dir, "ls-tree", "-r", gitTree)
	require.NotContains(t, listing, gitstore.HashObject(gitstore.KindBlob, added.data).String(), "git keeps the file now: compare with it")

	_, err = merge.Merge(ctx, repo, bc, oc, tc, merge.MergeOptions{DirectoryRenames: merge.DirRenamesApply})
	var ce *merge.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Conflicts, 1)
	require.Equal(t, merge.ConflictDirRenameCollision, ce.Conflicts[0].Kind)
	require.Equal(t, "b/f3/g", ce.Conflicts[0].Path)
	require.Contains(t, ce.Conflicts[0].Message, "b/f3")
	require.True(t, gitLostAFile(t, dir, gitTree, ce, base, ours, theirs))

	res, err := merge.Merge(ctx, repo, bc, oc, tc, merge.MergeOptions{DirectoryRenames: merge.DirRenamesApply, KeepConflicts: true})
	require.NoError(t, err)
	require.Len(t, res.Conflicts, 1)
	kept := testrepo.Git(t, dir, "ls-tree", "-r", "--name-only", res.Tree.String())
	require.Equal(t, "a/c/f3/g\nb/f3\nb/h.txt\nkeep", kept)
}
