package ui_test

import (
	"os"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testdaemon"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// TestReviewPageLinks: with --commit-url, the accepted commit, the base
// and the layers link to the repository's commit view; sessions and
// changesets link to each other and the links resolve; a session's 1,000
// changed paths are cut on the sessions page with "show all", which shows
// them all; short ids do not wrap, even on a phone's width.
func TestReviewPageLinks(t *testing.T) {
	ctx := t.Context()
	repo := testrepo.BuildBare(t, "small")
	const token = "ui-links-token"
	url := testdaemon.New(t, "", "--repo", "r="+repo, "--admin-token", token,
		"--commit-url", "https://forge.example/{repo}/commit/{commit}").URL
	c := client.New(url, token)
	shots := t.TempDir()
	if d := os.Getenv("SESSIOND_UI_SHOTS"); d != "" {
		shots = d
	}

	// An accepted changeset.
	s, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", AgentID: "agent-l"})
	require.NoError(t, err)
	_, err = c.WriteFile(ctx, s.ID, "a.txt", []byte("linked\n"), client.WriteOptions{})
	require.NoError(t, err)
	cs, err := c.Submit(ctx, s.ID, apitypes.SubmitRequest{Intent: "linked change"})
	require.NoError(t, err)
	acc, err := c.Accept(ctx, cs.ID, apitypes.AcceptRequest{})
	require.NoError(t, err)
	// A live session that changed 1,000 files in one command.
	big, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", AgentID: "agent-big"})
	require.NoError(t, err)
	res, err := c.Exec(ctx, big.ID, apitypes.ExecRequest{Argv: []string{"sh", "-c", "mkdir -p many && for i in $(seq 1000); do echo $i > many/f$i.txt; done"}}, nil)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)

	b := newBrowser(t)
	step(t, b, "open the changeset", chromedp.Navigate(url+"/ui/changesets/"+cs.ID), chromedp.WaitVisible(chromedp.ID("token-input")),
		chromedp.SendKeys(chromedp.ID("token-input"), token), chromedp.Click(chromedp.CSS("#token-form button[type=submit]")))
	waitFor(t, b, "the changeset", `document.querySelector("dl.meta") !== null`)
	commitView := func(oid string) string { return "https://forge.example/r/commit/" + oid }
	hrefs := eval[[]string](t, b, `[...document.querySelectorAll("dl.meta a.commit-link")].map(a => a.href)`)
	assert.Contains(t, hrefs, commitView(acc.Commit), "the accepted commit links the commit view")
	assert.Contains(t, hrefs, commitView(cs.BaseCommit), "the base too")
	assert.Contains(t, eval[string](t, b, `document.querySelector("#outcome a.commit-link").href`), acc.Commit)
	waitFor(t, b, "the history", `document.querySelector("#timeline").dataset.ready === "true"`)
	assert.Equal(t, commitView(acc.Commit), eval[string](t, b, `document.querySelector("#timeline li.tl-accepted a.commit-link").href`))

	// The session link resolves to the session's page, which links back.
	href := eval[string](t, b, `document.querySelector("dl.meta a.session-link").href`)
	assert.Equal(t, url+"/ui/sessions/"+s.ID, href)
	step(t, b, "the session", chromedp.Navigate(href))
	waitFor(t, b, "its changeset", `document.querySelector("#session-changesets a.changeset-link") !== null`)
	back := eval[string](t, b, `document.querySelector("#session-changesets a.changeset-link").href`)
	assert.Equal(t, url+"/ui/changesets/"+cs.ID, back)
	assert.Equal(t, commitView(acc.Commit), eval[string](t, b, `document.querySelector("#session-changesets a.commit-link").href`))
	step(t, b, "back to the changeset", chromedp.Navigate(back))
	waitFor(t, b, "the changeset again", `document.querySelector("h1") !== null && document.querySelector("h1").innerText === "linked change"`)

	// The list links each changeset's session; the layers name commits.
	step(t, b, "the list", chromedp.Navigate(url+"/ui/changesets"))
	waitFor(t, b, "the row", `document.querySelector("#changesets a.session-link") !== null`)
	assert.Equal(t, url+"/ui/sessions/"+s.ID, eval[string](t, b, `document.querySelector("#changesets a.session-link").href`))
	step(t, b, "the layers", chromedp.Navigate(url+"/ui/repos/r/layers?branch=main"))
	waitFor(t, b, "the layer", `document.querySelector("li.layer a.commit-link") !== null`)
	assert.Equal(t, commitView(acc.Commit), eval[string](t, b, `document.querySelector("li.layer a.commit-link").href`))
	assert.Equal(t, url+"/ui/changesets/"+cs.ID, eval[string](t, b, `document.querySelector("li.layer a.changeset-link").href`))

	// The sessions page cuts the 1,000 paths, and shows them all on asking.
	row := `document.querySelector('tr[data-session="` + big.ID + `"]')`
	step(t, b, "the sessions", chromedp.Navigate(url+"/ui/sessions"))
	waitFor(t, b, "the big session", row+` !== null && `+row+`.querySelector("td.changed li") !== null`)
	assert.Equal(t, 20, eval[int](t, b, row+`.querySelectorAll("td.changed li").length`), "cut at 20")
	assert.Contains(t, eval[string](t, b, row+`.querySelector("button.show-all").innerText`), "show all 1000")
	screenshot(t, b, shots, "sessions-cut.png")
	step(t, b, "show all", chromedp.Click(chromedp.CSS(`tr[data-session="`+big.ID+`"] button.show-all`)))
	waitFor(t, b, "all of them", row+`.querySelectorAll("td.changed li").length === 1000`)
	// A write redraws the list; the session stays shown whole.
	_, err = c.WriteFile(ctx, big.ID, "many/extra.txt", []byte("x\n"), client.WriteOptions{})
	require.NoError(t, err)
	waitFor(t, b, "the write, all shown", row+`.querySelectorAll("td.changed li").length === 1001`)

	// Short ids never wrap: nowrap, one line box, also at 390px.
	step(t, b, "narrow", chromedp.EmulateViewport(390, 800), chromedp.Navigate(url+"/ui/sessions"))
	waitFor(t, b, "the sessions", row+` !== null`)
	assert.Equal(t, "nowrap", eval[string](t, b, `getComputedStyle(document.querySelector("a.session-link code.id")).whiteSpace`))
	assert.True(t, eval[bool](t, b, `[...document.querySelectorAll("code.id")].every(e => e.getClientRects().length === 1)`), "each short id is one line box")
	step(t, b, "the session page, narrow", chromedp.Navigate(url+"/ui/sessions/"+big.ID))
	waitFor(t, b, "its mutations", `document.querySelector("#mutations tr.mutation") !== null`)
	assert.True(t, eval[bool](t, b, `[...document.querySelectorAll("code.id")].every(e => e.getClientRects().length === 1 && getComputedStyle(e).whiteSpace === "nowrap")`))
	// The command's 1,000 paths are cut in its mutation row too.
	assert.Equal(t, 10, eval[int](t, b, `document.querySelectorAll("#mutations tr.mutation[data-op=exec] ul.paths li").length`))
	screenshot(t, b, shots, "session-narrow.png")
	step(t, b, "show all paths", chromedp.Click(chromedp.CSS(`#mutations tr.mutation[data-op=exec] button.show-all`)))
	waitFor(t, b, "all paths", `document.querySelectorAll("#mutations tr.mutation[data-op=exec] ul.paths li").length === 1000`)
}
