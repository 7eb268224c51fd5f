package gitstore

import (
	"context"
	"errors"
	"strings"
)

// Scope is the part of a repository one caller may name in a revision,
// for a caller that may not see all of it (a session token). It sees:
//   - the shared refs: HEAD and every ref under refs/heads/, refs/tags/
//     and refs/remotes/ (the repository's branches and tags);
//   - its own refs, those under Own;
//   - the commits reachable from those refs; the trees and annotated tags
//     those refs name, and the trees of the commits they name.
//
// Nothing else exists for it: a ref name outside those is skipped as git
// skips a ref that does not exist, an abbreviated id is matched only
// against the objects it sees (so it is never ambiguous because of one it
// does not), and a full id of anything else is ErrNotFound, the same
// answer as for an object that does not exist. Navigation (~N, ^N,
// ^{type}) starts from what was named, so it stays inside.
//
// A nil *Scope sees the whole repository.
type Scope struct {
	// Own is the prefix of the caller's own refs, ending in "/", such as
	// "refs/sessions/<id>/"; empty: none.
	Own RefName
}

// sharedRef reports whether name is one of the refs every scope sees.
func sharedRef(name RefName) bool {
	s := string(name)
	return s == "HEAD" || strings.HasPrefix(s, "refs/heads/") || strings.HasPrefix(s, "refs/tags/") || strings.HasPrefix(s, "refs/remotes/")
}

// sharedPrefixes are the prefixes of the shared refs under refs/.
var sharedPrefixes = []string{"refs/heads/", "refs/tags/", "refs/remotes/"}

// ResolveRevisionIn is ResolveRevision for a caller that sees only sc
// (nil: the whole repository).
func (r *Repo) ResolveRevisionIn(ctx context.Context, sc *Scope, rev string) (OID, error) {
	return revParser{Repo: r, scope: newScopeView(sc)}.resolveTo(ctx, rev, KindCommit, committish)
}

// ResolveTreeIn is ResolveTree for a caller that sees only sc (nil: the
// whole repository).
func (r *Repo) ResolveTreeIn(ctx context.Context, sc *Scope, rev string) (OID, error) {
	return revParser{Repo: r, scope: newScopeView(sc)}.resolveTo(ctx, rev, KindTree, treeish)
}

// scopeView is a Scope during one resolution: the refs it sees, read once
// when an id first needs checking (a revision that names only refs reads
// none).
type scopeView struct {
	own RefName

	loaded  bool
	shared  map[RefName]OID // shared ref → its value
	ownIDs  []OID           // the values of the caller's own refs
	targets map[OID]bool    // every value of a ref the scope sees
}

func newScopeView(sc *Scope) *scopeView {
	if sc == nil {
		return nil
	}
	own := sc.Own
	if own != "" && !strings.HasSuffix(string(own), "/") {
		own += "/"
	}
	return &scopeView{own: own}
}

// refVisible reports whether the scope may name ref name.
func (v *scopeView) refVisible(name RefName) bool {
	if v == nil || sharedRef(name) {
		return true
	}
	return v.own != "" && strings.HasPrefix(string(name), string(v.own))
}

func (v *scopeView) load(ctx context.Context, r *Repo) error {
	if v.loaded {
		return nil
	}
	prefixes := sharedPrefixes
	if v.own != "" {
		prefixes = append(prefixes[:len(prefixes):len(prefixes)], string(v.own))
	}
	refs, err := r.refs.list(ctx, prefixes...)
	if err != nil {
		return err
	}
	v.shared = map[RefName]OID{}
	v.targets = map[OID]bool{}
	if head, err := r.ReadRef(ctx, "HEAD"); err == nil {
		v.shared["HEAD"] = head
		v.targets[head] = true
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	for _, ref := range refs {
		v.targets[ref.OID] = true
		if sharedRef(ref.Name) {
			v.shared[ref.Name] = ref.OID
		} else {
			v.ownIDs = append(v.ownIDs, ref.OID)
		}
	}
	v.loaded = true
	return nil
}

// visible reports whether the scope sees object id (see Scope). An object
// the repository lacks is not visible.
func (v *scopeView) visible(ctx context.Context, r *Repo, id OID) (bool, error) {
	if v == nil {
		return true, nil
	}
	if err := v.load(ctx, r); err != nil {
		return false, err
	}
	if v.targets[id] {
		return true, nil
	}
	obj, err := r.readObject(ctx, id)
	if absent(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	switch obj.kind {
	case KindCommit:
		c, err := decodeCommit(id, obj.data)
		if err != nil {
			return false, err
		}
		return r.reach.reachable(ctx, r, v.shared, v.ownIDs, c)
	case KindTree:
		return v.treeOfRef(ctx, r, id)
	}
	// A tag or blob no ref names.
	return false, nil
}

// treeOfRef reports whether tree is the tree of a commit that a ref of
// the scope names (directly or through annotated tags).
func (v *scopeView) treeOfRef(ctx context.Context, r *Repo, tree OID) (bool, error) {
	for _, id := range v.ownIDs {
		c, err := r.Commit(ctx, id)
		if err != nil {
			continue // the live view is a tree, not a commit
		}
		if c.Tree == tree {
			return true, nil
		}
	}
	return r.reach.tipTree(ctx, r, v.shared, tree)
}
