package ui_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
)

// TestSessionPage: a session's page lists its mutations (op, paths; a
// command with its argv and exit code), its checkpoints, the latest
// command's exit code, its changeset and an overlap warning linking the
// other session; a write while the page is open appears; the sessions
// list and the changeset page link to it.
func TestSessionPage(t *testing.T) {
	ctx := t.Context()
	const token = "ui-session-token"
	url, c := smallDaemon(t, token)

	s, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", AgentID: "agent-s", Intent: "session page"})
	require.NoError(t, err)
	put := func(sid, p, content string) {
		t.Helper()
		_, err := c.WriteFile(ctx, sid, p, []byte(content), client.WriteOptions{})
		require.NoError(t, err)
	}
	put(s.ID, "a.txt", "one\n")
	put(s.ID, "dir/b.txt", "two\n")
	cp, err := c.Checkpoint(ctx, s.ID, "halfway", "")
	require.NoError(t, err)
	res, err := c.Exec(ctx, s.ID, apitypes.ExecRequest{Argv: []string{"sh", "-c", "echo made > made.txt"}}, nil)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	res, err = c.Exec(ctx, s.ID, apitypes.ExecRequest{Argv: []string{"sh", "-c", "echo failing; exit 3"}}, nil)
	require.NoError(t, err)
	require.Equal(t, 3, res.ExitCode)
	cs, err := c.Submit(ctx, s.ID, apitypes.SubmitRequest{Intent: "session page"})
	require.NoError(t, err)
	other, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", AgentName: "Other"})
	require.NoError(t, err)
	put(other.ID, "a.txt", "theirs\n")

	b := newBrowser(t)
	step(t, b, "open the session", chromedp.Navigate(url+"/ui/sessions/"+s.ID), chromedp.WaitVisible(chromedp.ID("token-input")),
		chromedp.SendKeys(chromedp.ID("token-input"), token), chromedp.Click(chromedp.CSS("#token-form button[type=submit]")))
	waitFor(t, b, "the mutations", `document.querySelectorAll("#mutations tr.mutation").length > 0`)
	ms, err := c.Mutations(ctx, s.ID, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, len(ms), eval[int](t, b, `document.querySelectorAll("#mutations tr.mutation").length`), "one row per mutation")
	ops := eval[string](t, b, `[...document.querySelectorAll("#mutations tr.mutation")].map(r => r.dataset.op).join(" ")`)
	assert.Contains(t, ops, "exec")
	row := func(seq int64) string {
		return eval[string](t, b, `document.querySelector('#mutations tr.mutation[data-seq="`+strconv.FormatInt(seq, 10)+`"]').innerText`)
	}
	for _, m := range ms {
		got := row(m.Seq)
		assert.Contains(t, got, m.Op)
		for _, p := range m.Paths {
			assert.Contains(t, got, p)
		}
		if m.Exec != nil {
			assert.Contains(t, got, "exit "+strconv.Itoa(m.Exec.ExitCode))
		}
	}
	// A command that changed no file is no mutation; it is among the
	// commands.
	assert.NotContains(t, eval[string](t, b, `document.querySelector("#mutations").innerText`), "exit 3")
	assert.Equal(t, "3 0", eval[string](t, b, `[...document.querySelectorAll("#exec-latest li.run")].map(li => li.dataset.exitCode).join(" ")`), "the commands, newest first")
	assert.Contains(t, eval[string](t, b, `document.querySelector("#mutations").innerText`), "made.txt", "the command's own write")
	assert.Equal(t, "3", eval[string](t, b, `document.querySelector("#exec-latest .exec").dataset.exitCode`), "the latest command's exit code")
	assert.Contains(t, eval[string](t, b, `document.querySelector("#exec-latest .exec").innerText`), "sh -c 'echo failing; exit 3' exit 3")
	assert.Equal(t, "failing\n", eval[string](t, b, `document.querySelector("#exec-latest .exec pre.output").textContent`), "the end of its output")

	// Checkpoints: the one taken and the submit's.
	cps, err := c.Checkpoints(ctx, s.ID)
	require.NoError(t, err)
	assert.Equal(t, len(cps), eval[int](t, b, `document.querySelectorAll("#checkpoints tr.checkpoint").length`))
	cpRow := eval[string](t, b, `document.querySelector("#checkpoint-`+strconv.Itoa(cp.N)+`").innerText`)
	assert.Contains(t, cpRow, "halfway")
	assert.Contains(t, cpRow, cp.Commit[:10])

	// Its changeset, linked; the overlap, linking the other session.
	assert.Equal(t, "/ui/changesets/"+cs.ID, eval[string](t, b, `new URL(document.querySelector("#session-changesets a.changeset-link").href).pathname`))
	waitFor(t, b, "the overlap", `[...document.querySelectorAll("#session-overlaps li.overlap")].some(li => li.innerText.includes("a.txt") && li.innerText.includes("Other"))`)
	assert.Equal(t, "/ui/sessions/"+other.ID, eval[string](t, b, `new URL(document.querySelector("#session-overlaps a.session-link").href).pathname`))
	shots := t.TempDir()
	if d := os.Getenv("SESSIOND_UI_SHOTS"); d != "" {
		shots = d
	}
	screenshot(t, b, shots, "session.png")
	if p := os.Getenv("SESSIOND_UI_SESSION_SCREENSHOT"); p != "" { // the README's
		step(t, b, "scroll to the top", chromedp.Evaluate[chromedp.Void]("window.scrollTo(0, 0)"))
		require.NoError(t, os.Rename(screenshot(t, b, shots, "readme-session.png"), p))
	}

	// Live: a command run while the page is open shows its output as it
	// comes (GET /v1/sessions/{id}/exec) and then its exit code.
	waitFor(t, b, "following the commands", `document.querySelector("#exec-live").dataset.following === "true"`)
	done := make(chan apitypes.ExecResponse, 1)
	go func() {
		res, err := c.Exec(ctx, s.ID, apitypes.ExecRequest{Argv: []string{"sh", "-c", "echo live one; echo live two >&2; exit 5"}}, nil)
		if err != nil {
			res.ExitCode = -1
		}
		done <- res
	}()
	waitFor(t, b, "the command's end", `document.querySelector("#exec-live").dataset.state === "ended"`)
	assert.Equal(t, 5, (<-done).ExitCode)
	assert.Equal(t, "5", eval[string](t, b, `document.querySelector("#exec-live").dataset.exitCode`))
	live := eval[string](t, b, `document.querySelector("#exec-live").innerText`)
	assert.Contains(t, live, "sh -c 'echo live one; echo live two >&2; exit 5'")
	assert.Contains(t, live, "exit 5")
	assert.Contains(t, eval[string](t, b, `document.querySelector("#exec-live pre.live-output").textContent`), "live one\n")
	assert.Contains(t, eval[string](t, b, `document.querySelector("#exec-live pre.live-output").textContent`), "live two\n")
	// And the finished command is the latest one, once the page reloads.
	waitFor(t, b, "the latest command", `document.querySelector("#exec-latest .exec").dataset.exitCode === "5"`)

	// Live: a write while the page is open.
	put(s.ID, "live.txt", "while open\n")
	waitFor(t, b, "the write", `[...document.querySelectorAll("#mutations tr.mutation")].some(r => r.innerText.includes("live.txt"))`)

	// Linked from the sessions list and from the changeset page.
	step(t, b, "the sessions list", chromedp.Navigate(url+"/ui/sessions"))
	waitFor(t, b, "the session's row", `document.querySelector('tr[data-session="`+s.ID+`"] a.session-link') !== null`)
	href := eval[string](t, b, `document.querySelector('tr[data-session="`+s.ID+`"] a.session-link').href`)
	assert.Equal(t, url+"/ui/sessions/"+s.ID, href)
	step(t, b, "follow it", chromedp.Navigate(href))
	waitFor(t, b, "the session page", `document.querySelector("section.session-page h1") !== null && document.querySelector("#checkpoints") !== null`)
	// A checkpoint's link (from a changeset's history) marks its row.
	step(t, b, "a checkpoint's link", chromedp.Navigate(url+"/ui/sessions/"+s.ID+"#checkpoint-"+strconv.Itoa(cp.N)))
	waitFor(t, b, "the checkpoint marked", `document.querySelector("#checkpoint-`+strconv.Itoa(cp.N)+`.targeted") !== null`)
	assert.Equal(t, 1, eval[int](t, b, `document.querySelectorAll("tr.targeted").length`))
	step(t, b, "the changeset", chromedp.Navigate(url+"/ui/changesets/"+cs.ID))
	waitFor(t, b, "the session link", `document.querySelector("dl.meta a.session-link") !== null`)
	assert.Equal(t, "/ui/sessions/"+s.ID, eval[string](t, b, `new URL(document.querySelector("dl.meta a.session-link").href).pathname`))
}
