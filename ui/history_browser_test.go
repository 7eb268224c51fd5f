package ui_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
)

// TestReviewPageTimeline: the changeset page's history lists, in order,
// the checkpoints before each revision, the revisions, a review followed
// by its line comment, the accept naming its commit and the undo naming
// its revert commit; a revision's entry opens that revision, and the
// session's link opens the session page.
func TestReviewPageTimeline(t *testing.T) {
	ctx := t.Context()
	const token = "ui-timeline-token"
	url, c := smallDaemon(t, token)

	s, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", AgentID: "agent-h"})
	require.NoError(t, err)
	put := func(p, content string) {
		t.Helper()
		_, err := c.WriteFile(ctx, s.ID, p, []byte(content), client.WriteOptions{})
		require.NoError(t, err)
	}
	put("a.txt", "one\n")
	cp, err := c.Checkpoint(ctx, s.ID, "first try", "")
	require.NoError(t, err)
	put("b.txt", "b\n")
	cs, err := c.Submit(ctx, s.ID, apitypes.SubmitRequest{Intent: "history"})
	require.NoError(t, err)
	_, err = c.Review(ctx, cs.ID, apitypes.ReviewRequest{Verdict: "comment", Body: "why one?", Author: "Rita",
		Comments: []apitypes.LineComment{{Path: "a.txt", Line: 1, Body: "spell it out"}}})
	require.NoError(t, err)
	put("a.txt", "one, in full\n")
	cs, err = c.Submit(ctx, s.ID, apitypes.SubmitRequest{})
	require.NoError(t, err)
	require.Equal(t, 2, cs.Revision)
	acc, err := c.Accept(ctx, cs.ID, apitypes.AcceptRequest{})
	require.NoError(t, err)
	undo, err := c.Undo(ctx, cs.ID, apitypes.UndoRequest{})
	require.NoError(t, err)

	b := newBrowser(t)
	step(t, b, "open the changeset", chromedp.Navigate(url+"/ui/changesets/"+cs.ID), chromedp.WaitVisible(chromedp.ID("token-input")),
		chromedp.SendKeys(chromedp.ID("token-input"), token), chromedp.Click(chromedp.CSS("#token-form button[type=submit]")))
	waitFor(t, b, "the history", `document.querySelector("#timeline") !== null && document.querySelector("#timeline").dataset.ready === "true"`)
	kinds := eval[string](t, b, `[...document.querySelectorAll("#timeline li.tl-entry")].map(li => li.dataset.kind).join(" ")`)
	assert.Equal(t, "checkpoint checkpoint revision review comment checkpoint revision accepted undone", kinds)
	text := func(i int) string {
		return eval[string](t, b, `document.querySelectorAll("#timeline li.tl-entry")[`+strconv.Itoa(i)+`].innerText`)
	}
	assert.Contains(t, text(0), "Checkpoint 1")
	assert.Contains(t, text(0), "first try")
	assert.Contains(t, text(0), cp.Commit[:10])
	assert.Contains(t, text(2), "Revision 1")
	assert.Contains(t, text(3), "Rita")
	assert.Contains(t, text(3), "why one?")
	assert.Contains(t, text(4), "a.txt:1")
	assert.Contains(t, text(4), "spell it out")
	assert.Contains(t, text(6), "Revision 2")
	assert.Contains(t, text(7), acc.Commit[:10], "the accept names its commit")
	assert.Contains(t, text(8), undo.Commit[:10], "the undo names its revert commit")
	assert.Equal(t, "/ui/sessions/"+s.ID+"#checkpoint-"+strconv.Itoa(cp.N),
		eval[string](t, b, `new URL(document.querySelector("#timeline li.tl-checkpoint a").href).pathname + new URL(document.querySelector("#timeline li.tl-checkpoint a").href).hash`))
	shots := t.TempDir()
	if d := os.Getenv("SESSIOND_UI_SHOTS"); d != "" { // to keep them
		shots = d
	}
	screenshot(t, b, shots, "timeline.png")

	// A review while the page is open joins the history.
	_, err = c.Review(ctx, cs.ID, apitypes.ReviewRequest{Verdict: "comment", Body: "after the undo", Author: "Rita"})
	require.NoError(t, err)
	waitFor(t, b, "the new review", `[...document.querySelectorAll("#timeline li.tl-review")].some(li => li.innerText.includes("after the undo"))`)
	assert.Equal(t, "review", eval[string](t, b, `[...document.querySelectorAll("#timeline li.tl-entry")].pop().dataset.kind`), "last")

	// A revision's entry opens that revision.
	rev1 := eval[string](t, b, `document.querySelector('#timeline li.tl-revision[data-revision="1"] a.revision-link').href`)
	step(t, b, "open revision 1", chromedp.Navigate(rev1))
	waitFor(t, b, "revision 1 shown", `document.getElementById("revision") !== null && document.getElementById("revision").value === "1"`)
	assert.True(t, strings.HasSuffix(eval[string](t, b, "location.search"), "revision=1"))
	waitFor(t, b, "revision 1's diff", `document.querySelector("#diffs").innerText.includes("one") && !document.querySelector("#diffs").innerText.includes("in full")`)
}
