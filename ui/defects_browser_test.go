package ui_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
)

// TestReviewPageDefects: one test per defect found by reading the page's
// code (issue 25), each failing on the code before its fix.
func TestReviewPageDefects(t *testing.T) {
	ctx := t.Context()
	const token = "ui-defects-token"
	url, c := smallDaemon(t, token)
	// change makes a session writing files and submits it.
	change := func(intent string, files map[string]string) (apitypes.Session, apitypes.Changeset) {
		t.Helper()
		s, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", AgentID: "agent-d"})
		require.NoError(t, err)
		for p, content := range files {
			_, err = c.WriteFile(ctx, s.ID, p, []byte(content), client.WriteOptions{})
			require.NoError(t, err)
		}
		cs, err := c.Submit(ctx, s.ID, apitypes.SubmitRequest{Intent: intent})
		require.NoError(t, err)
		return s, cs
	}
	accept := func(cs apitypes.Changeset) apitypes.AcceptResult {
		t.Helper()
		res, err := c.Accept(ctx, cs.ID, apitypes.AcceptRequest{})
		require.NoError(t, err)
		return res
	}
	_, base := change("base docs", map[string]string{"a.txt": docLines(nil), "b.txt": docLines(nil)})
	accepted := accept(base)
	for i := range 2 {
		accept(func() apitypes.Changeset {
			_, cs := change(fmt.Sprintf("layer %d", i), map[string]string{fmt.Sprintf("l%d.txt", i): "x\n"})
			return cs
		}())
	}
	_, twoFiles := change("two files", map[string]string{"a.txt": docLines(map[int]string{3: "three", 30: "thirty"}), "b.txt": docLines(map[int]string{5: "five"})})

	b := newBrowser(t)
	step(t, b, "give the token", chromedp.Navigate(url+"/ui/changesets"), chromedp.WaitVisible(chromedp.ID("token-input")),
		chromedp.SendKeys(chromedp.ID("token-input"), token), chromedp.Click(chromedp.CSS("#token-form button[type=submit]")))
	waitFor(t, b, "the list", `document.body.dataset.ready === "true"`)
	// await evaluates an expression whose value is a promise.
	await := func(expr string) string {
		t.Helper()
		sctx, cancel := context.WithTimeout(b, 30*time.Second)
		defer cancel()
		v, err := chromedp.Run(sctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
		require.NoError(t, err, expr)
		return v
	}
	requests := func(pattern string) int {
		t.Helper()
		return eval[int](t, b, `performance.getEntriesByType("resource").filter(e => new RegExp(`+"`"+pattern+"`"+`).test(new URL(e.name).pathname)).length`)
	}

	t.Run("the sessions page neither replays the log nor keeps closed sessions", func(t *testing.T) {
		dead, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", AgentID: "gone"})
		require.NoError(t, err)
		for i := range 5 {
			_, err = c.WriteFile(ctx, dead.ID, fmt.Sprintf("d%d.txt", i), []byte("x\n"), client.WriteOptions{})
			require.NoError(t, err)
		}
		_, err = c.AbandonSession(ctx, dead.ID)
		require.NoError(t, err)
		live, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", AgentID: "alive"})
		require.NoError(t, err)

		step(t, b, "open the sessions", chromedp.Navigate(url+"/ui/sessions"))
		waitFor(t, b, "the live session", `document.querySelector('tr[data-session="`+live.ID+`"]') !== null`)
		_, err = c.WriteFile(ctx, live.ID, "now.txt", []byte("x\n"), client.WriteOptions{})
		require.NoError(t, err)
		waitFor(t, b, "the write", `document.querySelector('tr[data-session="`+live.ID+`"] td.changed').innerText.includes("now.txt")`)
		assert.Zero(t, requests(`^/v1/sessions/`+dead.ID), "no request about a session closed before the page opened: the log is not replayed")

		_, err = c.AbandonSession(ctx, live.ID)
		require.NoError(t, err)
		waitFor(t, b, "the row gone", `document.querySelector('tr[data-session="`+live.ID+`"]') === null`)
		assert.NotContains(t, eval[string](t, b, `document.getElementById("sessions-body").dataset.tracked`), live.ID)
		assert.Equal(t, eval[string](t, b, `[...document.querySelectorAll("#sessions-body tr[data-session]")].map(r => r.dataset.session).sort().join(" ")`),
			eval[string](t, b, `document.getElementById("sessions-body").dataset.tracked.split(" ").filter(Boolean).sort().join(" ")`), "the page follows the live sessions it shows, no other")
	})

	t.Run("the layers page lists the intents in one request", func(t *testing.T) {
		step(t, b, "open the layers", chromedp.Navigate(url+"/ui/repos/r/layers?branch=main"))
		waitFor(t, b, "three layers", `document.querySelectorAll("li.layer").length === 3`)
		text := eval[string](t, b, `document.getElementById("layers").innerText`)
		assert.Contains(t, text, "base docs")
		assert.Contains(t, text, "layer 1")
		assert.Zero(t, requests(`^/v1/changesets/[0-9a-f-]{36}$`), "no request per layer")
	})

	t.Run("the layers link of an accept names the repository", func(t *testing.T) {
		assert.Equal(t, "/ui/repos/r/layers", await(`import("/ui/assets/changeset.js").then(m => m.layersHref("r", ""))`))
		assert.Equal(t, "/ui/repos/my%20repo/layers?branch=a%2Fb", await(`import("/ui/assets/changeset.js").then(m => m.layersHref("my repo", "a/b"))`))
	})

	t.Run("a malformed escape in the URL is a page, not Loading…", func(t *testing.T) {
		step(t, b, "open a bad URL", chromedp.Navigate(url+"/ui/changesets/%E0%A4"))
		waitFor(t, b, "the page settled", `document.body.dataset.ready === "true"`)
		assert.Contains(t, eval[string](t, b, `document.getElementById("main").innerText`), "Not found")
	})

	t.Run("the event stream parser keeps data lines apart and reads CRLF", func(t *testing.T) {
		got := await(`import("/ui/assets/api.js").then(m => JSON.stringify(m.parseEvents("retry: 2000\r\n\r\nid: 7\r\nevent: x\r\ndata: {\"a\":\r\ndata: [1,\r\ndata:2]}\r\n\r\n: heartbeat\n\nid: 8\ndata: {}\n\nid: 9\ndata: {\"b\"")))`)
		assert.JSONEq(t, `{"events":[{"id":7,"data":"{\"a\":\n[1,\n2]}"},{"id":8,"data":"{}"}],"last":8,"rest":"id: 9\ndata: {\"b\""}`, got)
		got = await(`import("/ui/assets/api.js").then(m => JSON.stringify(m.parseEvents("retry: 2000\nid: 41\n\n")))`)
		assert.JSONEq(t, `{"events":[],"last":41,"rest":""}`, got, "an id-only block moves the id")
	})

	t.Run("a file's checkbox leaves the other diffs alone", func(t *testing.T) {
		step(t, b, "open the changeset", chromedp.Navigate(url+"/ui/changesets/"+twoFiles.ID))
		waitFor(t, b, "both diffs", `document.querySelectorAll("#diffs table.diff").length === 2 && document.querySelectorAll("input.hunk-check").length === 3`)
		step(t, b, "mark the diffs", chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("#diffs table.diff").forEach(t => t.dataset.kept = "yes")`))
		step(t, b, "untick a.txt", chromedp.Click(chromedp.CSS(`#files input.file-check[data-path="a.txt"]`)))
		waitFor(t, b, "a.txt's hunks unticked", `[...document.querySelectorAll('input.hunk-check[data-path="a.txt"]')].every(c => !c.checked)`)
		assert.Equal(t, 2, eval[int](t, b, `document.querySelectorAll('#diffs table.diff[data-kept="yes"]').length`), "no diff was rendered again")
		assert.Equal(t, "a.txt", eval[string](t, b, `document.activeElement && document.activeElement.dataset.path || ""`), "the checkbox keeps the focus")
		step(t, b, "tick one hunk back", chromedp.Click(chromedp.CSS(`input.hunk-check[data-path="a.txt"][data-hunk="1"]`)))
		waitFor(t, b, "a.txt partly selected", `document.querySelector('#files input.file-check[data-path="a.txt"]').indeterminate`)
		assert.Equal(t, 2, eval[int](t, b, `document.querySelectorAll('#diffs table.diff[data-kept="yes"]').length`))
		step(t, b, "preview", chromedp.Click(chromedp.ID("accept-preview")))
		waitFor(t, b, "the preview", `document.querySelector("#preview") !== null`)
		preview := eval[string](t, b, `document.querySelector("#preview").innerText`)
		assert.Contains(t, preview, "thirty")
		assert.NotContains(t, preview, "three")
		assert.Contains(t, preview, "five")
	})

	t.Run("an accepted changeset shows its outcome, not the review form", func(t *testing.T) {
		step(t, b, "open the accepted changeset", chromedp.Navigate(url+"/ui/changesets/"+base.ID))
		waitFor(t, b, "the page", `document.body.dataset.ready === "true" && document.querySelector("#diffs") !== null`)
		assert.False(t, eval[bool](t, b, `document.getElementById("review-form") !== null`), "no review form")
		outcome := eval[string](t, b, `(document.getElementById("outcome") || {innerText: ""}).innerText`)
		assert.Contains(t, outcome, "Accepted")
		assert.Contains(t, outcome, accepted.Commit[:10])
		assert.Contains(t, outcome, "main")
	})
}
