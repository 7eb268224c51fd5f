package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/overlay"
	"github.com/sessiond/sessiond/secret"
	"github.com/sessiond/sessiond/workdir"
)

// The view's .git (SPEC §14): what a command's .git holds (gitFor) and
// the commits a command made there becoming checkpoints (gitCommits).

// maxViewCommits bounds the commits one command may make that become
// checkpoints.
const maxViewCommits = 100

// noGitReadLimited is why a read-limited session's view has no .git.
const noGitReadLimited = "the session's policy limits what it may read, and a .git would show every file of the history"

// GitBranch is the branch a session's view has checked out.
func GitBranch(id string) string { return "sessiond/" + id[:min(8, len(id))] }

// gitFor is the .git a command on ls's view gets, or why it gets none.
// ls.mu must be held.
func (m *Executor) gitFor(ctx context.Context, ls *live) (*workdir.Git, string, error) {
	if ls.policy.limitsReads() {
		return nil, noGitReadLimited, nil
	}
	headTree, err := ls.repo.TreeOf(ctx, ls.meta.Head)
	if err != nil {
		return nil, "", err
	}
	info := info(ls.meta)
	sig := info.Author(m.now())
	g := &workdir.Git{
		Branch: GitBranch(ls.meta.ID.String()), Head: ls.meta.Head, HeadTree: headTree,
		BaseRef: strings.TrimPrefix(ls.meta.BaseRef, "refs/heads/"), BaseCommit: ls.meta.BaseCommit,
		UserName: sig.Name, UserEmail: sig.Email,
		RepoGitDir: ls.repo.GitDir(), RepoName: ls.meta.Repo,
	}
	// The session's unresolved conflicts are the index's stages 1 to 3
	// (conflicts.go), so git status, git diff and git checkout --ours or
	// --theirs see them as git's own.
	stages, err := m.conflictStages(ctx, ls)
	if err != nil {
		return nil, "", err
	}
	for _, st := range stages {
		e := workdir.StageEntry{Path: st.Path}
		if v := st.Base; v != nil {
			e.Base, e.BaseMode = v.OID, v.Mode
		}
		if v := st.Ours; v != nil {
			e.Ours, e.OursMode = v.OID, v.Mode
		}
		if v := st.Theirs; v != nil {
			e.Theirs, e.TheirsMode = v.OID, v.Mode
		}
		g.Stages = append(g.Stages, e)
	}
	for _, side := range []struct {
		prefix string
		to     *[]workdir.GitRef
	}{{"refs/heads/", &g.Branches}, {"refs/tags/", &g.Tags}} {
		refs, err := ls.repo.ListRefs(ctx, side.prefix)
		if err != nil {
			return nil, "", err
		}
		for _, r := range refs {
			*side.to = append(*side.to, workdir.GitRef{Name: strings.TrimPrefix(string(r.Name), side.prefix), OID: r.OID})
		}
	}
	return g, "", nil
}

// gitCommits makes a checkpoint of each commit a command made on its
// view's HEAD (from before to after, oldest first), each re-created from
// content checked as any write is: its tree's changes against the
// session's head, every blob read from the view's objects (or the
// repository's public ones), never linked as it is. It stops at the first
// commit it cannot take and says why in note; a HEAD that does not
// descend from before (an amend, a reset) rewrites nothing. ls.mu must be
// held.
func (m *Executor) gitCommits(ctx context.Context, ls *live, sc *workdir.Scratch, run workdir.GitResult, masker *secret.Masker) (cps []Checkpoint, note string, err error) {
	if !run.Present || run.After.IsZero() || run.After == run.Before {
		return nil, "", nil
	}
	objs := sc.GitObjects()
	pub := m.workdirs.PublicObjects(ls.meta.Repo)
	readCommit := func(id gitstore.OID) (*gitstore.Commit, error) {
		c, err := objs.Commit(id)
		if errors.Is(err, gitstore.ErrForeignMissing) {
			c, err = pub.Commit(id)
		}
		return c, err
	}
	var chain []*gitstore.Commit
	for id := run.After; id != run.Before; {
		if len(chain) == maxViewCommits {
			return nil, fmt.Sprintf("HEAD moved by more than %d commits; none became a checkpoint", maxViewCommits), nil
		}
		c, err := readCommit(id)
		if err != nil || len(c.Parents) == 0 {
			return nil, fmt.Sprintf("HEAD moved to %s, which does not descend from %s (HEAD when the command started): history is not rewritten (an amend or a reset of recorded checkpoints is not applied; the working tree's changes are recorded as usual)", run.After, run.Before), nil
		}
		chain = append(chain, c)
		id = c.Parents[0]
	}
	slices.Reverse(chain)
	cur, err := ls.repo.TreeOf(ctx, ls.meta.Head)
	if err != nil {
		return nil, "", err
	}
	rd := &viewReader{repo: ls.repo, objs: objs, pub: pub}
	for _, c := range chain {
		changes, data, why := rd.diff(ctx, cur, c.Tree, "")
		if why == "" {
			why = m.checkViewChanges(ls, changes, data, masker)
		}
		if why != "" {
			return cps, fmt.Sprintf("commit %s did not become a checkpoint: %s", c.OID, why), nil
		}
		b := ls.repo.NewBatch()
		for _, ch := range changes {
			if !ch.Delete {
				b.Add(gitstore.KindBlob, data[ch.Path])
			}
		}
		if err := b.Flush(ctx); err != nil {
			return cps, "", err
		}
		tree, err := ls.repo.BuildTree(ctx, cur, changes)
		if err != nil {
			return cps, "", err
		}
		msg := strings.TrimRight(c.Message, "\n")
		label, _, _ := strings.Cut(msg, "\n")
		cp, err := m.recorder.checkpointTree(ctx, ls, tree, label, msg)
		if err != nil {
			return cps, "", err
		}
		cps = append(cps, cp)
		cur = tree
	}
	return cps, "", nil
}

// checkViewChanges checks a commit's changes as writes are checked: the
// path rules, the policy, the size limit and the secrets. It returns why
// they are refused, "" when they pass.
func (m *Executor) checkViewChanges(ls *live, changes []gitstore.Change, data map[string][]byte, masker *secret.Masker) string {
	for _, ch := range changes {
		if err := overlay.ValidatePath(ch.Path); err != nil {
			return err.Error()
		}
		if err := ls.policy.checkWrite(ch.Path); err != nil {
			return err.Error()
		}
		if name := masker.Find([]byte(ch.Path)); name != "" {
			return "a path holds the value of secret " + name
		}
		if ch.Delete {
			continue
		}
		d := data[ch.Path]
		if int64(len(d)) > m.limits.MaxFileBytes {
			return fmt.Sprintf("%q is %d bytes, the limit is %d", ch.Path, len(d), m.limits.MaxFileBytes)
		}
		if name := masker.Find(d); name != "" {
			return fmt.Sprintf("%q holds the value of secret %s", masker.String(ch.Path), name)
		}
	}
	return ""
}

// viewReader compares a tree of the session (in the repository) with a
// tree a command wrote, reading the latter only from the view's objects
// and the public ones.
type viewReader struct {
	repo      *gitstore.Repo
	objs, pub *gitstore.ForeignObjects
}

func (r *viewReader) tree(id gitstore.OID) (*gitstore.Tree, error) {
	t, err := r.objs.Tree(id)
	if errors.Is(err, gitstore.ErrForeignMissing) {
		t, err = r.pub.Tree(id)
	}
	return t, err
}

func (r *viewReader) blob(id gitstore.OID) ([]byte, error) {
	b, err := r.objs.Blob(id)
	if errors.Is(err, gitstore.ErrForeignMissing) {
		b, err = r.pub.Blob(id)
	}
	return b, err
}

// diff lists the changes from left (the session's, zero: none) to right
// (the view's, zero: none) below dir, with the new blobs' content; why
// says what could not be read or held.
func (r *viewReader) diff(ctx context.Context, left, right gitstore.OID, dir string) (changes []gitstore.Change, data map[string][]byte, why string) {
	data = map[string][]byte{}
	var walk func(left, right gitstore.OID, dir string) string
	walk = func(left, right gitstore.OID, dir string) string {
		if left == right {
			return ""
		}
		var le []gitstore.TreeEntry
		if !left.IsZero() {
			t, err := r.repo.Tree(ctx, left)
			if err != nil {
				return err.Error()
			}
			le = t.Entries
		}
		var re []gitstore.TreeEntry
		if !right.IsZero() {
			t, err := r.tree(right)
			if err != nil {
				return "tree " + right.String() + " is not readable in the view: " + err.Error()
			}
			re = t.Entries
		}
		ls := map[string]gitstore.TreeEntry{}
		for _, e := range le {
			ls[e.Name] = e
		}
		rs := map[string]gitstore.TreeEntry{}
		for _, e := range re {
			rs[e.Name] = e
		}
		for _, e := range re {
			p := e.Name
			if dir != "" {
				p = dir + "/" + e.Name
			}
			l, had := ls[e.Name]
			if had && l.OID == e.OID && l.Mode == e.Mode {
				continue
			}
			switch {
			case e.Mode == gitstore.ModeDir:
				var lid gitstore.OID
				if had && l.Mode == gitstore.ModeDir {
					lid = l.OID
				} else if had {
					changes = append(changes, gitstore.Change{Path: p, Delete: true})
				}
				if w := walk(lid, e.OID, p); w != "" {
					return w
				}
			case e.Mode.IsBlob():
				if had && l.Mode == gitstore.ModeDir {
					if w := walk(l.OID, gitstore.ZeroOID, p); w != "" {
						return w
					}
				}
				b, err := r.blob(e.OID)
				if err != nil {
					return "the blob of " + p + " is not readable in the view: " + err.Error()
				}
				data[p] = b
				changes = append(changes, gitstore.Change{Path: p, Mode: e.Mode, OID: e.OID})
			default:
				return fmt.Sprintf("%s has mode %s, which a session cannot hold", p, e.Mode)
			}
		}
		for _, e := range le {
			if _, kept := rs[e.Name]; kept {
				continue
			}
			p := e.Name
			if dir != "" {
				p = dir + "/" + e.Name
			}
			changes = append(changes, gitstore.Change{Path: p, Delete: true})
		}
		return ""
	}
	why = walk(left, right, dir)
	return changes, data, why
}
