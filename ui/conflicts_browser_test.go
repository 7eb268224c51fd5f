package ui_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
)

// TestSessionPageConflicts: a session with a conflict a merge kept shows
// it on its page, path, kind and the hunk's three sides; once the markers
// are gone the section empties.
func TestSessionPageConflicts(t *testing.T) {
	ctx := t.Context()
	const token = "ui-conflicts-token"
	url, c := smallDaemon(t, token)
	a, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	b, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	_, err = c.WriteFile(ctx, a.ID, "README.md", []byte("a's line\n"), client.WriteOptions{})
	require.NoError(t, err)
	_, err = c.WriteFile(ctx, b.ID, "README.md", []byte("b's line\n"), client.WriteOptions{})
	require.NoError(t, err)
	res, err := c.MergeWith(ctx, a.ID, b.ID, "", apitypes.ConflictsKeep)
	require.NoError(t, err)
	require.Len(t, res.Conflicts, 1)

	br := newBrowser(t)
	step(t, br, "open the session", chromedp.Navigate(url+"/ui/sessions/"+a.ID), chromedp.WaitVisible(chromedp.ID("token-input")),
		chromedp.SendKeys(chromedp.ID("token-input"), token), chromedp.Click(chromedp.CSS("#token-form button[type=submit]")))
	waitFor(t, br, "the conflict", `document.querySelectorAll("#session-conflicts li.conflict").length === 1`)
	assert.Equal(t, "README.md content", eval[string](t, br, `(li => li.dataset.path + " " + li.dataset.kind)(document.querySelector("#session-conflicts li.conflict"))`))
	text := eval[string](t, br, `document.querySelector("#session-conflicts").innerText`)
	assert.Contains(t, text, "Unresolved conflicts (1)")
	assert.Contains(t, text, "a's line")
	assert.Contains(t, text, "b's line")
	assert.Contains(t, text, "A fixture repository", "the base's side")

	_, err = c.WriteFile(ctx, a.ID, "README.md", []byte("both lines\n"), client.WriteOptions{})
	require.NoError(t, err)
	waitFor(t, br, "resolved", `document.querySelectorAll("#session-conflicts li.conflict").length === 0`)
}
