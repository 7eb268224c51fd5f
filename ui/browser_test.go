package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testdaemon"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// The review page is tested in a real headless Chromium against the real
// daemon: the binary, built once in TestMain, serving a bare repository
// with an admin token, so the page also has to ask for the token.

func TestMain(m *testing.M) { testdaemon.Main(m, "../cmd/sessiond") }

// browserPath finds a Chromium: SESSIOND_CHROME, else the usual names on
// PATH. Without one the test skips, except under CI=true, where it fails.
func browserPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SESSIOND_CHROME"); p != "" {
		return p
	}
	for _, name := range []string{"chromium-headless-shell", "chromium", "chromium-browser", "google-chrome", "chrome-headless-shell", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium found (install chromium-headless-shell, or set SESSIOND_CHROME); CI=true requires the browser tests")
	}
	t.Skip("no Chromium found; install chromium-headless-shell or set SESSIOND_CHROME")
	return ""
}

// startDaemon runs sessiond serve with an admin token and the repository
// "r"; it stops with t.
func startDaemon(t *testing.T, repo, token string) string {
	t.Helper()
	return testdaemon.New(t, "", "--repo", "r="+repo, "--admin-token", token).URL
}

// smallDaemon starts a daemon serving the small fixture as r with the
// admin token; it returns its URL and a client with the token.
func smallDaemon(t *testing.T, token string) (string, *client.Client) {
	t.Helper()
	url := startDaemon(t, testrepo.BuildBare(t, "small"), token)
	return url, client.New(url, token)
}

// newBrowser starts a headless Chromium with a fresh profile; the
// returned context is one tab.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browserPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// Start the browser now, and keep what the page writes to its console
	// for the log of a failure.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")))
	console := &testdaemon.LockedBuffer{}
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			fmt.Fprintln(console, m.String())
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("browser console:\n%s", console.String())
		}
	})
	return ctx
}

// step runs browser actions with a deadline, failing the test with what
// it was doing.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(sctx, actions...), what)
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(sctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// waitFor polls a JavaScript expression until it is truthy.
func waitFor(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := chromedp.Run(sctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(25*time.Second)))
	require.NoError(t, err, "waiting for %s (%s)", what, expr)
}

// screenshot saves the whole page as a PNG in dir and returns its path.
func screenshot(t *testing.T, ctx context.Context, dir, name string) string {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, png, 0o644))
	t.Logf("screenshot %s", p)
	return p
}

func docLines(edit map[int]string) string {
	var b strings.Builder
	for i := 1; i <= 40; i++ {
		if s, ok := edit[i]; ok {
			b.WriteString(s + "\n")
		} else {
			fmt.Fprintf(&b, "line %d\n", i)
		}
	}
	return b.String()
}

// TestReviewPage drives the page as a reviewer would: the list, a
// changeset, a line comment (by keyboard), approve, accept two of three
// hunks (checked with the git CLI: the branch has those two, the session
// keeps the third), the layers page with an undo preview and the undo,
// and the sessions page following a write as it happens.
func TestReviewPage(t *testing.T) {
	ctx := t.Context()
	repo := testrepo.BuildBare(t, "small")
	const token = "ui-test-admin-token"
	url := startDaemon(t, repo, token)
	c := client.New(url, token)
	shots := t.TempDir()
	if d := os.Getenv("SESSIOND_UI_SHOTS"); d != "" { // to keep them
		shots = d
	}
	git := func(args ...string) string { return testrepo.Git(t, repo, args...) }

	// The base: doc.txt of 40 lines on main.
	s0, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", AgentID: "setup"})
	require.NoError(t, err)
	_, err = c.WriteFile(ctx, s0.ID, "doc.txt", []byte(docLines(nil)), client.WriteOptions{})
	require.NoError(t, err)
	cs0, err := c.Submit(ctx, s0.ID, apitypes.SubmitRequest{Intent: "add doc.txt"})
	require.NoError(t, err)
	_, err = c.Accept(ctx, cs0.ID, apitypes.AcceptRequest{})
	require.NoError(t, err)
	base := git("rev-parse", "main")

	// The changeset under review: three hunks in doc.txt.
	s, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", AgentID: "agent-7", AgentName: "Seven", Intent: "tidy the doc"})
	require.NoError(t, err)
	_, err = c.WriteFile(ctx, s.ID, "doc.txt", []byte(docLines(map[int]string{2: "two"})), client.WriteOptions{})
	require.NoError(t, err)
	cs, err := c.Submit(ctx, s.ID, apitypes.SubmitRequest{Intent: "tidy the doc"})
	require.NoError(t, err)
	_, err = c.WriteFile(ctx, s.ID, "doc.txt", []byte(docLines(map[int]string{2: "two", 20: "twenty", 38: "thirty-eight"})), client.WriteOptions{})
	require.NoError(t, err)
	cs, err = c.Submit(ctx, s.ID, apitypes.SubmitRequest{})
	require.NoError(t, err)
	require.Equal(t, 2, cs.Revision)
	// The session checks its work: a check on the revision's files.
	res, err := c.Exec(ctx, s.ID, apitypes.ExecRequest{Argv: []string{"sh", "-c", "grep -c line doc.txt"}}, nil)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	// Another agent, given by name alone, changes the same file: an
	// overlap for both, where the name is the agent.
	other, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", AgentName: "Eight"})
	require.NoError(t, err)
	_, err = c.WriteFile(ctx, other.ID, "doc.txt", []byte(docLines(map[int]string{10: "ten"})), client.WriteOptions{})
	require.NoError(t, err)

	b := newBrowser(t)

	// The list, after the page asks for the token.
	step(t, b, "open the page", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.ID("token-input")))
	step(t, b, "give the token", chromedp.SendKeys(chromedp.ID("token-input"), token), chromedp.Click(chromedp.CSS("#token-form button[type=submit]")))
	waitFor(t, b, "the changesets list", `document.querySelectorAll("a.cs-link").length === 2`)
	assert.Contains(t, eval[string](t, b, `document.querySelector("#changesets").innerText`), "2", "the revision")
	assert.True(t, strings.HasPrefix(eval[string](t, b, "location.pathname"), "/ui/"), "/ redirects to /ui/")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(url + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusFound, resp.StatusCode)
	assert.Equal(t, "/ui/", resp.Header.Get("Location"))
	assert.Equal(t, "", eval[string](t, b, "document.cookie"), "no cookies")
	assert.Equal(t, token, eval[string](t, b, `sessionStorage.getItem("sessiond.token")`))
	listText := eval[string](t, b, `document.querySelector("#changesets").innerText`)
	assert.Contains(t, listText, "tidy the doc")
	assert.Contains(t, listText, "agent-7")
	screenshot(t, b, shots, "changesets.png")

	// The status filter.
	step(t, b, "filter accepted", chromedp.SetValue(chromedp.ID("filter-status"), "accepted"), chromedp.Click(chromedp.CSS(".filters button")))
	waitFor(t, b, "one accepted changeset", `document.querySelectorAll("a.cs-link").length === 1 && document.querySelector("a.cs-link").textContent === "add doc.txt"`)

	// A changeset.
	step(t, b, "open the changeset", chromedp.Navigate(url+"/ui/changesets/"+cs.ID))
	waitFor(t, b, "the diff", `document.querySelectorAll("#diffs tr.hunk-header").length === 3`)
	page := eval[string](t, b, `document.querySelector("main").innerText`)
	waitFor(t, b, "the check passed", `document.querySelector("#checks").dataset.state === "passed"`)
	assert.Contains(t, page, "Seven (agent-7)")
	assert.Contains(t, page, "Revision 2 (current)")
	assert.Contains(t, page, "doc.txt")
	waitFor(t, b, "the overlap warning", `[...document.querySelectorAll("#warnings li.overlap")].some(li => li.innerText.includes("doc.txt") && li.innerText.includes("Eight"))`)

	// The first revision, and back.
	step(t, b, "revision 1", chromedp.SetValue(chromedp.ID("revision"), "1"), chromedp.Evaluate[chromedp.Void](`document.getElementById("revision").dispatchEvent(new Event("change"))`))
	waitFor(t, b, "revision 1's diff", `document.querySelectorAll("#diffs tr.hunk-header").length === 1 && document.querySelector("input.hunk-check") === null`)
	step(t, b, "revision 2", chromedp.SetValue(chromedp.ID("revision"), "2"), chromedp.Evaluate[chromedp.Void](`document.getElementById("revision").dispatchEvent(new Event("change"))`))
	waitFor(t, b, "revision 2's diff", `document.querySelectorAll("#diffs tr.hunk-header").length === 3`)
	assert.Equal(t, "M", eval[string](t, b, `document.querySelector("#files .status-letter").innerText`))
	assert.Equal(t, "+3", eval[string](t, b, `document.querySelector("#files td.num.add").innerText`))

	// Side by side, and back.
	step(t, b, "side by side", chromedp.Click(chromedp.CSS(`input[name=diff-mode][value=split]`)))
	waitFor(t, b, "the split diff", `document.querySelector("#diffs table.diff.split") !== null`)
	step(t, b, "unified", chromedp.Click(chromedp.CSS(`input[name=diff-mode][value=unified]`)))
	waitFor(t, b, "the unified diff", `document.querySelector("#diffs table.diff.unified") !== null`)

	// The reviewer, Rita, reviews with her reviewer token: her approval
	// counts (the admin token's would be a comment).
	rita, err := c.CreateReviewer(ctx, "Rita")
	require.NoError(t, err)
	useToken := func(what, tok string) {
		t.Helper()
		step(t, b, what, chromedp.Click(chromedp.ID("token-button")), chromedp.WaitVisible(chromedp.ID("token-input")),
			chromedp.SendKeys(chromedp.ID("token-input"), tok), chromedp.Click(chromedp.CSS("#token-form button[type=submit]")))
		waitFor(t, b, "the diff again", `document.querySelectorAll("#diffs tr.hunk-header").length === 3`)
	}
	useToken("the reviewer's token", rita.Token)

	// A line comment on the new line 20, by keyboard.
	step(t, b, "comment on line 20",
		chromedp.Focus(chromedp.CSS(`#diffs button.ln-btn[data-path="doc.txt"][data-line="20"]`)),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.ID("comment-body")),
		chromedp.SendKeys(chromedp.ID("comment-body"), "Say twenty in words?"),
		chromedp.Click(chromedp.CSS("#comment-form button[type=submit]")))
	waitFor(t, b, "the draft in place", `[...document.querySelectorAll("#diffs tr.comment-row.draft")].some(r => r.innerText.includes("Say twenty"))`)

	// Approve, sending the comment with it.
	step(t, b, "approve", chromedp.Click(chromedp.ID("verdict-approve")), chromedp.SendKeys(chromedp.ID("verdict-body"), "Good, two of three."),
		chromedp.Click(chromedp.ID("review-submit")))
	waitFor(t, b, "approved", `document.querySelector("#cs-status .badge-approved") !== null`)
	waitFor(t, b, "the comment in place", `[...document.querySelectorAll("#diffs tr.comment-row:not(.draft)")].some(r => r.innerText.includes("Say twenty"))`)
	assert.Contains(t, eval[string](t, b, `document.querySelector("#review-result").innerText`), "Rita (reviewer token)")
	assert.Contains(t, eval[string](t, b, `document.querySelector("#reviews").innerText`), "Rita (reviewer token)")
	got, err := c.GetChangeset(ctx, cs.ID)
	require.NoError(t, err)
	assert.Equal(t, "approved", got.Status)
	require.Len(t, got.Reviews, 1)
	assert.Equal(t, "approve", got.Reviews[0].Verdict)
	assert.Equal(t, "Rita", got.Reviews[0].Author)
	assert.Equal(t, apitypes.AuthorReviewer, got.Reviews[0].AuthorKind)
	assert.Equal(t, []apitypes.LineComment{{Path: "doc.txt", Line: 20, Body: "Say twenty in words?"}}, got.Reviews[0].Comments)

	// Accepting is the admin's.
	useToken("the admin token again", token)

	// Leave out the second hunk, preview, accept.
	step(t, b, "untick hunk 2", chromedp.Click(chromedp.CSS(`input.hunk-check[data-path="doc.txt"][data-hunk="1"]`)))
	assert.True(t, eval[bool](t, b, `document.querySelector("#files input.file-check").indeterminate`), "the file is partly selected")
	step(t, b, "preview", chromedp.Click(chromedp.ID("accept-preview")))
	waitFor(t, b, "the preview", `document.querySelectorAll("#preview tr.hunk-header").length === 2`)
	preview := eval[string](t, b, `document.querySelector("#preview").innerText`)
	assert.Contains(t, preview, "thirty-eight")
	assert.NotContains(t, preview, "twenty")
	assert.Equal(t, base, git("rev-parse", "main"), "a preview writes nothing")
	screenshot(t, b, shots, "changeset.png")
	if p := os.Getenv("SESSIOND_UI_SCREENSHOT"); p != "" {
		step(t, b, "scroll to the top", chromedp.Evaluate[chromedp.Void]("window.scrollTo(0, 0)"))
		require.NoError(t, os.Rename(screenshot(t, b, shots, "readme.png"), p))
	}

	step(t, b, "accept", chromedp.Click(chromedp.ID("accept-submit")))
	waitFor(t, b, "accepted", `document.querySelector("#accept-done") !== null`)
	after := git("rev-parse", "main")
	assert.Equal(t, base, git("rev-parse", "main^"), "one commit on the branch")
	assert.Equal(t, strings.TrimSuffix(docLines(map[int]string{2: "two", 38: "thirty-eight"}), "\n"), git("show", "main:doc.txt"), "the branch has hunks 1 and 3")
	assert.Contains(t, eval[string](t, b, `document.querySelector("#accept-done").innerText`), after[:10])
	assert.Contains(t, eval[string](t, b, `document.querySelector("#accept-done").innerText`), "doc.txt (hunk 2)")
	restb, err := c.Diff(ctx, s.ID, "base")
	rest := string(restb)
	require.NoError(t, err)
	assert.Contains(t, rest, "+twenty\n", "the session keeps the third")
	assert.NotContains(t, rest, "+two\n")
	assert.NotContains(t, rest, "thirty-eight")
	ss, err := c.GetSession(ctx, s.ID)
	require.NoError(t, err)
	assert.Equal(t, after, ss.BaseCommit)
	assert.Equal(t, "active", ss.State)

	// The layers page: preview the undo of the partial accept, undo it.
	step(t, b, "open the layers", chromedp.Navigate(url+"/ui/repos/r/layers?branch=main"))
	waitFor(t, b, "two layers", `document.querySelectorAll("li.layer").length === 2`)
	step(t, b, "preview the undo", chromedp.Click(chromedp.CSS(`button.undo-preview[data-changeset="`+cs.ID+`"]`)))
	waitFor(t, b, "the undo preview", `document.querySelector("#comes-back") !== null`)
	assert.Contains(t, eval[string](t, b, `document.querySelector("#comes-back").innerText`), "doc.txt")
	assert.Contains(t, eval[string](t, b, `document.querySelector("#undo-preview").innerText`), "No conflicts.")
	assert.Equal(t, after, git("rev-parse", "main"), "a preview writes nothing")
	screenshot(t, b, shots, "layers.png")
	step(t, b, "undo", chromedp.Click(chromedp.ID("undo-confirm")))
	waitFor(t, b, "undone", `document.querySelector("#undo-done") !== null && document.querySelector("li.layer-undone") !== null`)
	assert.Equal(t, after, git("rev-parse", "main^"), "the undo is one revert commit")
	assert.Equal(t, strings.TrimSuffix(docLines(nil), "\n"), git("show", "main:doc.txt"), "the undo restores doc.txt")

	// The sessions page follows a write as it happens.
	step(t, b, "open the sessions", chromedp.Navigate(url+"/ui/sessions"))
	waitFor(t, b, "the session", `document.querySelector('tr[data-session="`+s.ID+`"]') !== null`)
	assert.Contains(t, eval[string](t, b, `document.querySelector('tr[data-session="`+s.ID+`"]').innerText`), "doc.txt")
	waitFor(t, b, "the overlap with the other session", `document.querySelector('tr[data-session="`+s.ID+`"] td.overlaps').innerText.includes("Eight")`)
	assert.Equal(t, "Eight", eval[string](t, b, `document.querySelector('tr[data-session="`+other.ID+`"] td[data-label=Agent]').innerText`),
		"a session given only a name shows it, as the CLI does")
	_, err = c.WriteFile(ctx, s.ID, "notes/live.txt", []byte("written while the page is open\n"), client.WriteOptions{})
	require.NoError(t, err)
	waitFor(t, b, "the write on the page", `document.querySelector('tr[data-session="`+s.ID+`"] td.changed').innerText.includes("notes/live.txt")`)
	screenshot(t, b, shots, "sessions.png")

	// Narrow: the changeset page fits a phone's width.
	step(t, b, "narrow", chromedp.EmulateViewport(390, 800), chromedp.Navigate(url+"/ui/changesets/"+cs.ID))
	waitFor(t, b, "the changeset", `document.querySelector("#diffs table.diff") !== null`)
	assert.LessOrEqual(t, eval[int](t, b, "document.documentElement.scrollWidth"), 390, "no sideways scrolling at 390px")
	screenshot(t, b, shots, "changeset-narrow.png")
}

// TestReviewPageErrors: an error from the API is shown with its message;
// a wrong token is asked for again; an accept that conflicts with the
// moved branch shows the conflicts and writes nothing.
func TestReviewPageErrors(t *testing.T) {
	ctx := t.Context()
	repo := testrepo.BuildBare(t, "small")
	url := startDaemon(t, repo, "right-token")
	c := client.New(url, "right-token")
	changeOn := func(edit map[int]string) apitypes.Changeset {
		t.Helper()
		s, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
		require.NoError(t, err)
		_, err = c.WriteFile(ctx, s.ID, "doc.txt", []byte(docLines(edit)), client.WriteOptions{})
		require.NoError(t, err)
		cs, err := c.Submit(ctx, s.ID, apitypes.SubmitRequest{Intent: fmt.Sprint(edit)})
		require.NoError(t, err)
		return cs
	}
	_, err := c.Accept(ctx, changeOn(nil).ID, apitypes.AcceptRequest{})
	require.NoError(t, err)
	mine, theirs := changeOn(map[int]string{5: "mine"}), changeOn(map[int]string{5: "theirs"})
	_, err = c.Accept(ctx, theirs.ID, apitypes.AcceptRequest{})
	require.NoError(t, err)
	head := testrepo.Git(t, repo, "rev-parse", "main")

	b := newBrowser(t)
	step(t, b, "open a changeset that does not exist", chromedp.Navigate(url+"/ui/changesets/00000000-0000-0000-0000-000000000000"),
		chromedp.WaitVisible(chromedp.ID("token-input")), chromedp.SendKeys(chromedp.ID("token-input"), "wrong-token"),
		chromedp.Click(chromedp.CSS("#token-form button[type=submit]")))
	waitFor(t, b, "asked again", `document.getElementById("token-dialog").open`)
	step(t, b, "the right token", chromedp.SendKeys(chromedp.ID("token-input"), "right-token"), chromedp.Click(chromedp.CSS("#token-form button[type=submit]")))
	waitFor(t, b, "the error", `document.querySelector("#notice .error") !== null`)
	assert.Contains(t, eval[string](t, b, `document.querySelector("#notice").innerText`), "not_found")

	step(t, b, "open the conflicting changeset", chromedp.Navigate(url+"/ui/changesets/"+mine.ID))
	waitFor(t, b, "the diff", `document.querySelector("#diffs table.diff") !== null`)
	step(t, b, "accept", chromedp.Click(chromedp.ID("accept-submit")))
	waitFor(t, b, "the conflicts", `document.querySelector("#accept-result table.conflicts") !== null`)
	out := eval[string](t, b, `document.querySelector("#accept-result").innerText`)
	assert.Contains(t, out, "doc.txt")
	assert.Contains(t, out, "conflict")
	assert.Equal(t, head, testrepo.Git(t, repo, "rev-parse", "main"), "a conflicting accept writes nothing")
}
