package changeset_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
)

// TestTimeline: a changeset's history in the order it happened: the
// checkpoints before each revision, the revisions, a review followed by
// its line comments, the accept with its commit, the undo with its revert
// commit; a checkpoint of an earlier changeset of the session is not this
// one's.
func TestTimeline(t *testing.T) {
	e := newChangesetEnv(t)
	ctx := t.Context()
	// An earlier changeset of the session, accepted in part: the
	// session stays, with a.txt left out.
	s := e.session(map[string]string{"early.txt": "first\n", "a.txt": "zero\n"})
	early := e.submit(s, "earlier")
	_, err := e.cs.Accept(ctx, early.ID, changeset.AcceptOptions{Select: &merge.Selection{Files: []string{"early.txt"}}})
	require.NoError(t, err)

	e.write(s.ID, "a.txt", "one\n")
	cp, err := e.m.Checkpoint(ctx, s.ID, "wip", "")
	require.NoError(t, err)
	e.write(s.ID, "b.txt", "b\n")
	c := e.submit(s, "the change")
	_, _, err = e.cs.Review(ctx, c.ID, changeset.ReviewInput{Verdict: changeset.VerdictRequestChanges, Body: "say more",
		Reviewer: changeset.Reviewer{Name: "rita", Kind: changeset.ReviewerToken}, Comments: []changeset.LineComment{{Path: "a.txt", Line: 1, Body: "one?"}}})
	require.NoError(t, err)
	e.write(s.ID, "a.txt", "one, two\n")
	c = e.submit(s, "the change")
	require.Equal(t, 2, c.Revision)
	_, _, err = e.cs.Review(ctx, c.ID, changeset.ReviewInput{Verdict: changeset.VerdictApprove, Reviewer: changeset.Reviewer{Name: "rita", Kind: changeset.ReviewerToken}})
	require.NoError(t, err)
	acc := e.accept(c)
	undo, err := e.cs.Undo(ctx, changeset.UndoOptions{Changesets: []uuid.UUID{c.ID}})
	require.NoError(t, err)

	tl, err := e.cs.Timeline(ctx, c.ID)
	require.NoError(t, err)
	var kinds []string
	for _, en := range tl.Entries {
		k := string(en.Kind)
		if en.Kind == changeset.EntryCheckpoint || en.Kind == changeset.EntryRevision {
			k += ":" + en.Commit.String()[:7]
		}
		kinds = append(kinds, k)
	}
	revs, err := e.cs.Revisions(ctx, c.ID)
	require.NoError(t, err)
	require.Len(t, revs, 2)
	// Submitting checkpoints the session: each revision's head is the
	// checkpoint just before it.
	want := []string{
		"checkpoint:" + cp.Commit.String()[:7], "checkpoint:" + revs[0].Head.String()[:7], "revision:" + revs[0].Head.String()[:7],
		"review", "comment",
		"checkpoint:" + revs[1].Head.String()[:7], "revision:" + revs[1].Head.String()[:7],
		"review", "accepted", "undone",
	}
	assert.Equal(t, want, kinds)
	assert.Equal(t, "wip", tl.Entries[0].Label)
	assert.Equal(t, 1, tl.Entries[3].Revision, "the first review looked at revision 1")
	assert.Equal(t, "one?", tl.Entries[4].Comment.Body)
	assert.Equal(t, changeset.VerdictApprove, tl.Entries[7].Review.Verdict)
	assert.Equal(t, acc.Commit, tl.Entries[8].Commit, "the accept names its commit")
	assert.Equal(t, 2, tl.Entries[8].Revision)
	assert.Equal(t, undo.Commit, tl.Entries[9].Commit, "the undo names its revert commit")
	for i := 1; i < len(tl.Entries); i++ {
		assert.False(t, tl.Entries[i].At.Before(tl.Entries[i-1].At), "entry %d is in time order", i)
	}
	assert.Equal(t, s.ID, tl.Session)

	_, err = e.cs.Timeline(ctx, uuid.New())
	assert.ErrorIs(t, err, record.ErrNotFound)
}
