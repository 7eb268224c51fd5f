package ui_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestReviewPageMergeability: the changeset page says whether the
// changeset merges onto its branch before anyone presses Accept, and
// says it again when the branch moves while the page is open.
func TestReviewPageMergeability(t *testing.T) {
	ctx := t.Context()
	repo := testrepo.BuildBare(t, "small")
	const token = "ui-merge-token"
	url := startDaemon(t, repo, token)
	c := client.New(url, token)
	change := func(edit map[int]string) apitypes.Changeset {
		t.Helper()
		s, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
		require.NoError(t, err)
		_, err = c.WriteFile(ctx, s.ID, "doc.txt", []byte(docLines(edit)), client.WriteOptions{})
		require.NoError(t, err)
		cs, err := c.Submit(ctx, s.ID, apitypes.SubmitRequest{Intent: "edit"})
		require.NoError(t, err)
		return cs
	}
	_, err := c.Accept(ctx, change(nil).ID, apitypes.AcceptRequest{})
	require.NoError(t, err)
	mine, theirs := change(map[int]string{7: "mine"}), change(map[int]string{7: "theirs"})
	head := testrepo.Git(t, repo, "rev-parse", "main")

	b := newBrowser(t)
	step(t, b, "open the changeset", chromedp.Navigate(url+"/ui/changesets/"+mine.ID), chromedp.WaitVisible(chromedp.ID("token-input")),
		chromedp.SendKeys(chromedp.ID("token-input"), token), chromedp.Click(chromedp.CSS("#token-form button[type=submit]")))
	waitFor(t, b, "merges cleanly", `document.querySelector('#mergeability [data-clean="true"]') !== null`)
	text := eval[string](t, b, `document.getElementById("mergeability").innerText`)
	assert.Contains(t, text, "Merges cleanly onto main at "+head[:10])
	assert.Equal(t, head, testrepo.Git(t, repo, "rev-parse", "main"), "asking writes nothing")

	// The branch moves under the open page: the answer follows.
	_, err = c.Accept(ctx, theirs.ID, apitypes.AcceptRequest{})
	require.NoError(t, err)
	moved := testrepo.Git(t, repo, "rev-parse", "main")
	waitFor(t, b, "the conflict", `document.querySelector('#mergeability [data-clean="false"]') !== null`)
	text = eval[string](t, b, `document.getElementById("mergeability").innerText`)
	assert.Contains(t, text, "Conflicts with main at "+moved[:10])
	assert.Contains(t, text, "doc.txt")

	// An accepted changeset asks nothing.
	step(t, b, "open the accepted one", chromedp.Navigate(url+"/ui/changesets/"+theirs.ID))
	waitFor(t, b, "the outcome", `document.getElementById("outcome") !== null`)
	assert.Equal(t, "", eval[string](t, b, `document.getElementById("mergeability").innerText`))
}
