package gitstore_test

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// commitAt writes a commit of tree with parents, committed at when, and
// returns its id.
func commitAt(tb testing.TB, dir, tree string, when time.Time, msg string, parents ...string) string {
	tb.Helper()
	args := []string{"commit-tree", tree, "-m", msg}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	date := fmt.Sprintf("%d +0000", when.Unix())
	return testrepo.GitEnv(tb, dir, []string{"GIT_COMMITTER_DATE=" + date, "GIT_AUTHOR_DATE=" + date}, nil, args...)
}

// treeWith writes a tree holding one file and returns its id.
func treeWith(tb testing.TB, dir, name, content string) string {
	tb.Helper()
	blob := testrepo.GitInput(tb, dir, []byte(content), "hash-object", "-w", "--stdin")
	return testrepo.GitInput(tb, dir, []byte("100644 blob "+blob+"\t"+name+"\n"), "mktree")
}

// scopedRepo is the small fixture with two sessions' refs beside its
// branches and tags, as the session engine lays them out: a checkpoint of
// each (its head and checkpoints/1) on main, and a live view (a tree).
// Session a's base is a commit no branch reaches, and its checkpoint sits
// on the base it had before a rebase, which no ref names.
type scopedRepo struct {
	dir                 string
	main, mainParent    string
	aBase, aOld, aCP    string
	aLive               string
	bCP, bLive, bCPTree string
	notes, remote       string
}

func newScopedRepo(tb testing.TB) *scopedRepo {
	tb.Helper()
	dir := testrepo.BuildBare(tb, "small")
	s := &scopedRepo{dir: dir}
	s.main = testrepo.Git(tb, dir, "rev-parse", "main")
	s.mainParent = testrepo.Git(tb, dir, "rev-parse", "main~1")
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	mainTree := testrepo.Git(tb, dir, "rev-parse", "main^{tree}")

	s.aBase = commitAt(tb, dir, treeWith(tb, dir, "a-base.txt", "a's base\n"), base, "a's off-branch base", s.main)
	s.aOld = commitAt(tb, dir, treeWith(tb, dir, "a-old.txt", "a's old base\n"), base, "a's base before a rebase", s.main)
	s.aCP = commitAt(tb, dir, treeWith(tb, dir, "a.txt", "a's work\n"), base.Add(time.Hour), "checkpoint 1 of a", s.aOld)
	s.aLive = treeWith(tb, dir, "a.txt", "a's unsaved work\n")
	s.bCPTree = treeWith(tb, dir, "secret.txt", "b's unaccepted secret\n")
	s.bCP = commitAt(tb, dir, s.bCPTree, base.Add(time.Hour), "checkpoint 1 of b", s.main)
	s.bLive = treeWith(tb, dir, "secret.txt", "b's unsaved secret\n")
	s.notes = commitAt(tb, dir, mainTree, base, "a note", s.main)
	s.remote = commitAt(tb, dir, mainTree, base, "upstream", s.main)
	for ref, id := range map[string]string{
		"refs/sessions/a/base": s.aBase, "refs/sessions/a/head": s.aCP, "refs/sessions/a/checkpoints/1": s.aCP, "refs/sessions/a/live": s.aLive,
		"refs/sessions/b/base": s.main, "refs/sessions/b/head": s.bCP, "refs/sessions/b/checkpoints/1": s.bCP, "refs/sessions/b/live": s.bLive,
		"refs/notes/x": s.notes, "refs/remotes/origin/main": s.remote,
	} {
		testrepo.Git(tb, dir, "update-ref", ref, id)
	}
	return s
}

// TestScopedResolution: a scope resolves what it sees exactly as git
// rev-parse does, and everything else (another session's refs, commits
// and trees, in full or abbreviated, refs outside the shared ones) as
// not found, the answer for what does not exist; without a scope
// everything resolves as git says.
func TestScopedResolution(t *testing.T) {
	s := newScopedRepo(t)
	r := open(t, s.dir)
	ctx := t.Context()
	a := &gitstore.Scope{Own: "refs/sessions/a/"}

	visible := []string{
		"main", "HEAD", "@", "feature", "v1", "v0", "tags/v1", "refs/heads/main", "main~1", "main^{tree}", "v1^{commit}",
		s.main, s.main[:7], strings.ToUpper(s.main[:9]), s.mainParent, s.mainParent[:8] + "~1",
		"refs/sessions/a/head", "sessions/a/checkpoints/1", "refs/sessions/a/live", s.aCP, s.aCP[:10], s.aCP + "~1",
		s.aBase, s.aBase[:8], s.aOld, s.aOld[:8] + "^{tree}", s.aLive, s.aLive[:9], s.aCP + "^{tree}",
		"origin/main", s.remote,
	}
	invisible := []string{
		"refs/sessions/b/head", "sessions/b/head", "refs/sessions/b/live", "refs/sessions/b/base", "refs/sessions/b/checkpoints/1",
		"refs/sessions/b/head~1", "sessions/b/head^{tree}",
		s.bCP, s.bCP[:7], s.bCP[:12], strings.ToUpper(s.bCP[:10]), s.bCP + "~1", s.bCP + "^{tree}", s.bCP[:8] + "^0",
		s.bLive, s.bLive[:8], s.bCPTree, s.bCPTree[:10],
		"refs/notes/x", "notes/x", s.notes, s.notes[:9],
	}
	kind := func(rev string) string {
		return testrepo.Git(t, s.dir, "cat-file", "-t", testrepo.Git(t, s.dir, "rev-parse", "--verify", rev))
	}
	resolve := func(sc *gitstore.Scope, rev string) (gitstore.OID, string, error) {
		if kind(rev) == "tree" {
			id, err := r.ResolveTreeIn(ctx, sc, rev)
			return id, testrepo.Git(t, s.dir, "rev-parse", "--verify", rev+"^{tree}"), err
		}
		id, err := r.ResolveRevisionIn(ctx, sc, rev)
		return id, testrepo.Git(t, s.dir, "rev-parse", "--verify", rev+"^{commit}"), err
	}
	for _, rev := range visible {
		t.Run("sees/"+rev, func(t *testing.T) {
			got, want, err := resolve(a, rev)
			require.NoError(t, err)
			assert.Equal(t, want, got.String())
		})
	}
	for _, rev := range invisible {
		t.Run("does not see/"+rev, func(t *testing.T) {
			_, _, err := resolve(a, rev)
			assert.ErrorIs(t, err, gitstore.ErrNotFound)
			assert.NotErrorIs(t, err, gitstore.ErrAmbiguous)
			assert.Contains(t, err.Error(), fmt.Sprintf("%q", rev), "the error names the revision")
			// Not found is what the scope says of what does not exist.
			_, missing := r.ResolveRevisionIn(ctx, a, "nosuchref")
			assert.Equal(t, strings.ReplaceAll(missing.Error(), "nosuchref", rev), err.Error())
		})
	}
	for _, rev := range append(visible, invisible...) {
		t.Run("whole repository/"+rev, func(t *testing.T) {
			got, want, err := resolve(nil, rev)
			require.NoError(t, err)
			assert.Equal(t, want, got.String())
		})
	}
	// Session b sees its own and not a's off-branch base.
	b := &gitstore.Scope{Own: "refs/sessions/b/"}
	_, err := r.ResolveRevisionIn(ctx, b, s.bCP[:7])
	require.NoError(t, err)
	for _, rev := range []string{s.aBase, s.aOld, s.aCP} {
		_, err = r.ResolveRevisionIn(ctx, b, rev)
		assert.ErrorIs(t, err, gitstore.ErrNotFound)
	}
	// A scope without refs of its own sees the shared ones only.
	_, err = r.ResolveRevisionIn(ctx, &gitstore.Scope{}, s.aCP)
	assert.ErrorIs(t, err, gitstore.ErrNotFound)
	_, err = r.ResolveRevisionIn(ctx, &gitstore.Scope{}, s.mainParent)
	assert.NoError(t, err)
}

// TestScopedShortIDsIgnoreWhatTheyDoNotSee: an abbreviated id that a
// visible commit and another session's commit both start with names the
// visible one in the scope (git, and the whole repository, call it
// ambiguous), so the prefix tells nothing of the other commit.
func TestScopedShortIDsIgnoreWhatTheyDoNotSee(t *testing.T) {
	s := newScopedRepo(t)
	ctx := t.Context()
	tree := testrepo.Git(t, s.dir, "rev-parse", "main^{tree}")
	// A commit of session b whose id starts with the same four digits
	// as main's: found by hashing candidates as git would write them.
	prefix := s.main[:4]
	var body string
	for i := 0; ; i++ {
		body = fmt.Sprintf("tree %s\nparent %s\nauthor A <a@example.com> 1704067200 +0000\ncommitter A <a@example.com> 1704067200 +0000\n\nb's collision %d\n", tree, s.main, i)
		sum := sha1.Sum([]byte(fmt.Sprintf("commit %d\x00%s", len(body), body)))
		if hex.EncodeToString(sum[:])[:4] == prefix {
			break
		}
	}
	collide := testrepo.GitInput(t, s.dir, []byte(body), "hash-object", "-t", "commit", "-w", "--stdin")
	require.Equal(t, prefix, collide[:4])
	testrepo.Git(t, s.dir, "update-ref", "refs/sessions/b/checkpoints/2", collide)
	r := open(t, s.dir)

	got, err := r.ResolveRevisionIn(ctx, &gitstore.Scope{Own: "refs/sessions/a/"}, prefix)
	require.NoError(t, err)
	assert.Equal(t, s.main, got.String())
	for _, sc := range []*gitstore.Scope{nil, {Own: "refs/sessions/b/"}} {
		_, err := r.ResolveRevisionIn(ctx, sc, prefix)
		assert.ErrorIs(t, err, gitstore.ErrAmbiguous, "both commits are seen")
	}
	assert.Contains(t, testrepo.GitEnv(t, s.dir, nil, nil, "rev-parse", "--disambiguate="+prefix), collide, "git sees both")
}

// TestScopeFollowsTheRefs: one Repo answers as the refs are now, while
// they move: a fast-forward shows the new commits, a deleted branch or a
// branch moved back hides what only it reached, a new tag shows what it
// names.
func TestScopeFollowsTheRefs(t *testing.T) {
	s := newScopedRepo(t)
	r := open(t, s.dir)
	ctx := t.Context()
	sc := &gitstore.Scope{Own: "refs/sessions/a/"}
	sees := func(id string) bool {
		t.Helper()
		_, err := r.ResolveRevisionIn(ctx, sc, id)
		if err != nil {
			require.ErrorIs(t, err, gitstore.ErrNotFound)
		}
		return err == nil
	}
	tree := testrepo.Git(t, s.dir, "rev-parse", "main^{tree}")
	t0 := time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC)

	// An old commit deep below main, then one that main never reached.
	require.True(t, sees(testrepo.Git(t, s.dir, "rev-parse", "v0")))
	topic := commitAt(t, s.dir, tree, t0, "topic", s.main)
	require.False(t, sees(topic))
	testrepo.Git(t, s.dir, "update-ref", "refs/heads/topic", topic)
	assert.True(t, sees(topic), "a new branch")
	testrepo.Git(t, s.dir, "update-ref", "-d", "refs/heads/topic")
	assert.False(t, sees(topic), "the branch is gone")

	// main moves forward twice, then back.
	next := commitAt(t, s.dir, tree, t0.Add(time.Hour), "next", s.main)
	after := commitAt(t, s.dir, tree, t0.Add(2*time.Hour), "after", next)
	assert.False(t, sees(after))
	testrepo.Git(t, s.dir, "update-ref", "refs/heads/main", next)
	assert.True(t, sees(next), "a fast-forward")
	assert.True(t, sees(s.mainParent), "what main reached before")
	testrepo.Git(t, s.dir, "update-ref", "refs/heads/main", after)
	assert.True(t, sees(after))
	testrepo.Git(t, s.dir, "update-ref", "refs/heads/main", s.main)
	assert.False(t, sees(after), "main moved back")
	assert.False(t, sees(next))
	assert.True(t, sees(s.main))

	// A tag shows what it names, and an annotated one what it peels to.
	testrepo.Git(t, s.dir, "tag", "-a", "-m", "release", "rel", s.bCP)
	assert.True(t, sees(s.bCP), "tagged")
	testrepo.Git(t, s.dir, "tag", "-d", "rel")
	assert.False(t, sees(s.bCP), "untagged")
}

// TestScopeWalkToleratesSkewedDates: a descendant dated before its
// parent (clocks that disagree by hours) still leads to it.
func TestScopeWalkToleratesSkewedDates(t *testing.T) {
	s := newScopedRepo(t)
	ctx := t.Context()
	tree := testrepo.Git(t, s.dir, "rev-parse", "main^{tree}")
	t0 := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	old := commitAt(t, s.dir, tree, t0, "late clock", s.main)
	tip := old
	for i := range 5 {
		tip = commitAt(t, s.dir, tree, t0.Add(-time.Duration(i+1)*2*time.Hour), "early clock", tip)
	}
	testrepo.Git(t, s.dir, "update-ref", "refs/heads/skewed", tip)
	r := open(t, s.dir)
	got, err := r.ResolveRevisionIn(ctx, &gitstore.Scope{}, old)
	require.NoError(t, err)
	assert.Equal(t, old, got.String())
}
