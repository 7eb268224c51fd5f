package gitstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/storage/filesystem"
)

// This file is the one revision resolver: every place that takes a
// revision (a session's base, rebase onto, diff against, accept's
// expected head) resolves it here, as `git rev-parse` does
// (object-name.c's get_oid_1): suffixes are taken off the end one at a
// time, so "v1^{commit}~2^2" is the second parent of the grandparent of
// what v1 peels to.
//
// Supported: full and abbreviated (at least 4 digits, either case) ids,
// HEAD and "@", ref names tried in git's order (as given, refs/<name>,
// refs/tags/, refs/heads/, refs/remotes/, refs/remotes/<name>/HEAD),
// "~N" and "~" (first parents), "^N" and "^" (N-th parent; ^0 the commit
// itself), "^{commit}", "^{tree}", "^{blob}", "^{tag}", "^{object}" and
// "^{}" (peel tags). Not supported, and refused as not found: reflogs
// ("@{…}"), "rev:path", ":/text" and "^{/text}" searches, and describe
// output ("name-g<id>").

// disambiguation is what a short id must name when several objects
// share its digits (git's GET_OID_COMMITTISH and GET_OID_TREEISH).
type disambiguation int

const (
	anyObject disambiguation = iota
	committish
	treeish
)

// RevParse resolves rev to the object it names and that object's kind,
// as `git rev-parse --verify 'rev^{object}'` does.
func (r *Repo) RevParse(ctx context.Context, rev string) (OID, Kind, error) {
	id, err := revParser{Repo: r}.revParse(ctx, rev, rev, anyObject)
	if err != nil {
		return OID{}, 0, err
	}
	obj, err := r.readObject(ctx, id)
	if err != nil {
		return OID{}, 0, namedMissing(rev, id, err)
	}
	return id, obj.kind, nil
}

// ResolveRevision resolves rev to a commit, as `git rev-parse
// 'rev^{commit}'` does: annotated tags are peeled, and a revision that
// names a tree or blob is ErrWrongKind.
func (r *Repo) ResolveRevision(ctx context.Context, rev string) (OID, error) {
	return r.ResolveRevisionIn(ctx, nil, rev)
}

// ResolveTree resolves rev to a tree, as `git rev-parse 'rev^{tree}'`
// does: a commit (or a tag of one) gives its tree.
func (r *Repo) ResolveTree(ctx context.Context, rev string) (OID, error) {
	return r.ResolveTreeIn(ctx, nil, rev)
}

// revParser resolves git's revision syntax (gitrevisions(7): names,
// abbreviated ids, ^, ~, ^{type}, :path) over the repository it is built
// on (embedded), as far as scope sees (nil: all of it). Its methods'
// receiver is r, as the Repo's.
//
// The scope is checked where a revision enters the repository: a ref
// name (basicName), a full id (basicName) and an abbreviated one
// (resolveShort). Everything else (~, ^, ^{type}) moves from what those
// named to its parents, trees and tag targets, which the scope sees too.
type revParser struct {
	*Repo
	scope *scopeView
}

func (r revParser) resolveTo(ctx context.Context, rev string, want Kind, hint disambiguation) (OID, error) {
	id, err := r.revParse(ctx, rev, rev, hint)
	if err != nil {
		return OID{}, err
	}
	got, err := r.peelTo(ctx, rev, id, want)
	if err != nil {
		return OID{}, namedMissing(rev, id, err)
	}
	return got, nil
}

// namedMissing turns the absence of the object a caller named by its full
// id into ErrNotFound (no such revision, as git says); an object that
// something else names and the repository lacks stays damage.
func namedMissing(rev string, id OID, err error) error {
	var oe *ObjectError
	if named, perr := ParseOID(rev); perr == nil && named == id && errors.As(err, &oe) && oe.ID == id && errors.Is(err, ErrMissingObject) {
		return notFound(rev)
	}
	return err
}

func revError(rev string, err error) error {
	return fmt.Errorf("resolve revision %q: %w", rev, err)
}

func notFound(rev string) error {
	return fmt.Errorf("resolve revision %q: %w", rev, ErrNotFound)
}

// revParse is get_oid_1: it resolves name (a part of the whole
// revision rev, which errors quote) to an object id. A full id is not
// checked for existence here, as in git; whoever reads it does.
func (r revParser) revParse(ctx context.Context, rev, name string, hint disambiguation) (OID, error) {
	if err := ctx.Err(); err != nil {
		return OID{}, err
	}
	// "name~3", "name~", "name^2", "name^": the last suffix first.
	i := len(name) - 1
	for i >= 0 && '0' <= name[i] && name[i] <= '9' {
		i--
	}
	if i >= 0 && (name[i] == '~' || name[i] == '^') {
		digits := name[i+1:]
		n := 0
		for _, c := range []byte(digits) {
			if n > (math.MaxInt32-int(c-'0'))/10 {
				return OID{}, notFound(rev)
			}
			n = n*10 + int(c-'0')
		}
		if digits == "" {
			n = 1
		}
		c, err := r.commitOf(ctx, rev, name[:i])
		if err != nil {
			return OID{}, err
		}
		if name[i] == '^' {
			if n == 0 {
				return c.OID, nil
			}
			if n > len(c.Parents) {
				return OID{}, fmt.Errorf("resolve revision %q: %s has no parent %d: %w", rev, c.OID, n, ErrNotFound)
			}
			return c.Parents[n-1], nil
		}
		for range n {
			if len(c.Parents) == 0 {
				return OID{}, fmt.Errorf("resolve revision %q: %s has no parent: %w", rev, c.OID, ErrNotFound)
			}
			if c, err = r.Commit(ctx, c.Parents[0]); err != nil {
				return OID{}, revError(rev, err)
			}
		}
		return c.OID, nil
	}
	if id, ok, err := r.peelOnion(ctx, rev, name); ok || err != nil {
		return id, err
	}
	if id, ok, err := r.basicName(ctx, name); ok || err != nil {
		if err != nil {
			return OID{}, revError(rev, err)
		}
		return id, nil
	}
	if len(name) >= 4 && len(name) < 2*OIDSize && isHex(name) {
		return r.resolveShort(ctx, rev, strings.ToLower(name), hint)
	}
	return OID{}, notFound(rev)
}

// commitOf resolves name and peels it to a commit, for "~" and "^N".
func (r revParser) commitOf(ctx context.Context, rev, name string) (*Commit, error) {
	id, err := r.revParse(ctx, rev, name, committish)
	if err != nil {
		return nil, err
	}
	id, err = r.peelTo(ctx, rev, id, KindCommit)
	if err != nil {
		return nil, err
	}
	c, err := r.Commit(ctx, id)
	if err != nil {
		return nil, revError(rev, err)
	}
	return c, nil
}

// peelOnion handles "name^{type}" and "name^{}"; ok is false when name
// does not have that form (then it is tried as a plain name).
func (r revParser) peelOnion(ctx context.Context, rev, name string) (OID, bool, error) {
	if len(name) < 4 || name[len(name)-1] != '}' {
		return OID{}, false, nil
	}
	open := strings.LastIndex(name, "^{")
	if open <= 0 {
		return OID{}, false, nil
	}
	// As git, only the start of what follows "^{" is compared, so
	// "x^{commit}}" peels x to a commit.
	sp := name[open+2:]
	var want Kind
	hint := anyObject
	peelTags := false
	switch {
	case strings.HasPrefix(sp, "commit}"):
		want, hint = KindCommit, committish
	case strings.HasPrefix(sp, "tag}"):
		want = KindTag
	case strings.HasPrefix(sp, "tree}"):
		want, hint = KindTree, treeish
	case strings.HasPrefix(sp, "blob}"):
		want = KindBlob
	case strings.HasPrefix(sp, "object}"):
		want = 0
	case sp[0] == '}':
		peelTags = true
	default:
		// "^{/text}" (a message search) and unknown types.
		return OID{}, false, nil
	}
	id, err := r.revParse(ctx, rev, name[:open], hint)
	if err != nil {
		return OID{}, false, nil
	}
	if peelTags {
		id, _, err = r.peel(ctx, id)
		if err != nil {
			return OID{}, true, revError(rev, err)
		}
		return id, true, nil
	}
	if want == 0 {
		if _, err := r.readObject(ctx, id); err != nil {
			return OID{}, true, revError(rev, err)
		}
		return id, true, nil
	}
	id, err = r.peelTo(ctx, rev, id, want)
	return id, true, err
}

// peelTo dereferences id until it reaches an object of kind want: tags
// to what they tag, a commit to its tree (git's peel_to_type).
func (r revParser) peelTo(ctx context.Context, rev string, id OID, want Kind) (OID, error) {
	for range 32 {
		obj, err := r.readObject(ctx, id)
		if err != nil {
			return OID{}, revError(rev, err)
		}
		if obj.kind == want {
			return id, nil
		}
		switch obj.kind {
		case KindTag:
			id, err = tagTarget(id, obj.data)
		case KindCommit:
			var c *Commit
			c, err = decodeCommit(id, obj.data)
			if err == nil {
				id = c.Tree
			}
		default:
			return OID{}, fmt.Errorf("resolve revision %q: names a %s, not a %s: %w", rev, obj.kind, want, ErrWrongKind)
		}
		if err != nil {
			return OID{}, revError(rev, err)
		}
	}
	return OID{}, fmt.Errorf("resolve revision %q: tags nested too deep: %w", rev, ErrCorrupt)
}

// basicName is get_oid_basic: a full id, or a ref by git's rules.
func (r revParser) basicName(ctx context.Context, name string) (OID, bool, error) {
	if id, err := ParseOID(name); err == nil {
		if ok, err := r.scope.visible(ctx, r.Repo, id); !ok || err != nil {
			return OID{}, false, err
		}
		return id, true, nil
	}
	if name == "@" {
		name = "HEAD"
	}
	_, id, err := r.dwimRef(ctx, r.scope, name)
	if err != nil || id.IsZero() {
		return OID{}, false, err
	}
	return id, true, nil
}

// DWIMRef is the ref that name means as a revision, by git's rules
// (refs.c's ref_rev_parse_rules: as given, refs/<name>, refs/tags/,
// refs/heads/, refs/remotes/, refs/remotes/<name>/HEAD, the first that
// exists), or "" when none exists. HEAD is HEAD: a symbolic ref is not
// followed.
func (r *Repo) DWIMRef(ctx context.Context, name string) (RefName, error) {
	ref, _, err := r.dwimRef(ctx, nil, name)
	return ref, err
}

// dwimRef is DWIMRef with the ref's value, seeing only the refs scope
// sees (nil: all).
func (r *Repo) dwimRef(ctx context.Context, scope *scopeView, name string) (RefName, OID, error) {
	if name == "" {
		return "", OID{}, nil
	}
	for _, cand := range []string{name, "refs/" + name, "refs/tags/" + name, "refs/heads/" + name, "refs/remotes/" + name, "refs/remotes/" + name + "/HEAD"} {
		if cand != "HEAD" && !strings.HasPrefix(cand, "refs/") {
			continue
		}
		if ValidateRefName(RefName(cand)) != nil || !scope.refVisible(RefName(cand)) {
			continue
		}
		id, err := r.ReadRef(ctx, RefName(cand))
		if err == nil {
			return RefName(cand), id, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return "", OID{}, err
		}
	}
	return "", OID{}, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// resolveShort finds the object whose id starts with prefix. When
// several do, the hint picks the one commit-ish (or tree-ish) object
// among them, as git does; otherwise it is ErrAmbiguous.
func (r revParser) resolveShort(ctx context.Context, rev, prefix string, hint disambiguation) (OID, error) {
	found := map[OID]bool{}
	if err := r.withPrefix(ctx, prefix, found); err != nil {
		return OID{}, fmt.Errorf("resolve revision %q: %w", rev, err)
	}
	if len(found) == 0 && r.pool.refreshIfPackForgotten(ctx) {
		if err := r.withPrefix(ctx, prefix, found); err != nil {
			return OID{}, fmt.Errorf("resolve revision %q: %w", rev, err)
		}
	}
	ids := make([]OID, 0, len(found))
	for id := range found {
		// What the scope does not see is not there: it neither matches
		// nor makes the prefix ambiguous.
		ok, err := r.scope.visible(ctx, r.Repo, id)
		if err != nil {
			return OID{}, revError(rev, err)
		}
		if ok {
			ids = append(ids, id)
		}
	}
	if len(ids) > 1 && hint != anyObject {
		fit := ids[:0:0]
		for _, id := range ids {
			if r.fits(ctx, id, hint) {
				fit = append(fit, id)
			}
		}
		if len(fit) == 1 {
			ids = fit
		}
	}
	switch len(ids) {
	case 0:
		return OID{}, notFound(rev)
	case 1:
		return ids[0], nil
	}
	return OID{}, fmt.Errorf("resolve revision %q: %d objects start with %s: %w", rev, len(ids), prefix, ErrAmbiguous)
}

// withPrefix adds to found the ids of the objects, here and in the
// alternates, that start with prefix (lower-case hex).
func (r revParser) withPrefix(ctx context.Context, prefix string, found map[OID]bool) error {
	for _, id := range r.packs.withPrefix(prefix) {
		found[id] = true
	}
	r.meta.withPrefix(filepath.Join(r.gitDir, "objects", "pack"), prefix, found)
	// An odd-length prefix cannot be decoded to bytes: search by the even
	// part and filter.
	even := prefix[:len(prefix)&^1]
	var pb [OIDSize]byte
	n, _ := hexDecode(pb[:], even)
	err := r.pool.withStorage(ctx, func(s *filesystem.Storage) error {
		hs, err := s.HashesWithPrefix(pb[:n])
		if err != nil {
			return err
		}
		for _, h := range hs {
			if strings.HasPrefix(h.String(), prefix) {
				found[OID(h)] = true
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	return r.alternates.withPrefix(ctx, prefix, found)
}

// fits reports whether id peels to what hint asks for.
func (r revParser) fits(ctx context.Context, id OID, hint disambiguation) bool {
	_, kind, err := r.peel(ctx, id)
	if err != nil {
		return false
	}
	return kind == KindCommit || hint == treeish && kind == KindTree
}

// tagTarget returns the object an annotated tag (id, content data) tags.
func tagTarget(id OID, data []byte) (OID, error) {
	line, _, _ := strings.Cut(string(data), "\n")
	target, ok := strings.CutPrefix(line, "object ")
	if !ok {
		return OID{}, fmt.Errorf("tag %s: %w", id, ErrCorrupt)
	}
	t, err := ParseOID(target)
	if err != nil {
		return OID{}, fmt.Errorf("tag %s: %w", id, ErrCorrupt)
	}
	return t, nil
}
