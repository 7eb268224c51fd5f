package merge

import (
	"context"
	"fmt"

	"github.com/sessiond/sessiond/gitstore"
)

// The operations below are Merge with the right base, ours and theirs.
// Each is atomic: it returns the new tree, or a *ConflictError and writes
// nothing. None of them touches a ref.

// parentTree returns the tree of commit's only parent, the empty tree for
// a root commit.
func parentTree(ctx context.Context, repo *gitstore.Repo, c *gitstore.Commit) (gitstore.OID, error) {
	switch len(c.Parents) {
	case 0:
		return gitstore.ZeroOID, nil
	case 1:
		p, err := repo.Commit(ctx, c.Parents[0])
		if err != nil {
			return gitstore.OID{}, err
		}
		return p.Tree, nil
	}
	return gitstore.OID{}, fmt.Errorf("commit %s has %d parents: %w", c.OID, len(c.Parents), ErrMergeCommit)
}

// CherryPick applies the change that commit made (against its parent) to
// the tree onto, as git cherry-pick does.
func CherryPick(ctx context.Context, repo *gitstore.Repo, commit, onto gitstore.OID, opts MergeOptions) (*MergeResult, error) {
	c, err := repo.Commit(ctx, commit)
	if err != nil {
		return nil, fmt.Errorf("cherry-pick: %w", err)
	}
	parent, err := parentTree(ctx, repo, c)
	if err != nil {
		return nil, fmt.Errorf("cherry-pick: %w", err)
	}
	return Merge(ctx, repo, parent, onto, c.Tree, withLabels(opts, "HEAD", commit.String()[:7]))
}

// Revert undoes the change that commit made on the tree onto, keeping
// every later change, as git revert does.
func Revert(ctx context.Context, repo *gitstore.Repo, commit, onto gitstore.OID, opts MergeOptions) (*MergeResult, error) {
	c, err := repo.Commit(ctx, commit)
	if err != nil {
		return nil, fmt.Errorf("revert: %w", err)
	}
	parent, err := parentTree(ctx, repo, c)
	if err != nil {
		return nil, fmt.Errorf("revert: %w", err)
	}
	return Merge(ctx, repo, c.Tree, onto, parent, withLabels(opts, "HEAD", "parent of "+commit.String()[:7]))
}

// Rebase re-applies the changes of tree (made on top of oldBase) on
// newBase: the merge of oldBase → tree into newBase. Arguments are trees
// or commits. A session rebases its overlay by building the overlay's
// tree over its base and calling Rebase with the base it moves to.
func Rebase(ctx context.Context, repo *gitstore.Repo, oldBase, tree, newBase gitstore.OID, opts MergeOptions) (*MergeResult, error) {
	return Merge(ctx, repo, oldBase, newBase, tree, withLabels(opts, "onto", "session"))
}

func withLabels(opts MergeOptions, ours, theirs string) MergeOptions {
	if opts.OursLabel == "" {
		opts.OursLabel = ours
	}
	if opts.TheirsLabel == "" {
		opts.TheirsLabel = theirs
	}
	return opts
}
