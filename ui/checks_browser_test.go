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

// TestReviewPageChecks: the checks a session's commands make of a
// revision appear at the top of the changeset page and as a badge in the
// list: passed, then failed after an edit, then stale after another; a
// required check that does not pass blocks accept on the page (and
// through the API) until it passes again.
func TestReviewPageChecks(t *testing.T) {
	ctx := t.Context()
	repo := testrepo.BuildBare(t, "small")
	const token = "ui-checks-token"
	url := startDaemon(t, repo, token)
	c := client.New(url, token)
	// The check is the project's own test run: a Go test that wants
	// "good" in a.txt.
	check := []string{"go", "test", "./..."}
	_, err := c.SetRepoPolicy(ctx, "r", apitypes.RepoPolicy{RequiredChecks: [][]string{check}})
	require.NoError(t, err)

	s, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", AgentID: "agent-c"})
	require.NoError(t, err)
	put := func(content string) {
		t.Helper()
		_, err := c.WriteFile(ctx, s.ID, "a.txt", []byte(content), client.WriteOptions{})
		require.NoError(t, err)
	}
	run := func(want int) {
		t.Helper()
		res, err := c.Exec(ctx, s.ID, apitypes.ExecRequest{Argv: check}, nil)
		require.NoError(t, err)
		require.Equal(t, want, res.ExitCode, "%s%s", res.Stdout, res.Stderr)
	}
	submit := func() apitypes.Changeset {
		t.Helper()
		cs, err := c.Submit(ctx, s.ID, apitypes.SubmitRequest{Intent: "checked change"})
		require.NoError(t, err)
		return cs
	}
	for name, content := range map[string]string{
		"go.mod":    "module m\n\ngo 1.21\n",
		"m_test.go": "package m\n\nimport (\n\t\"os\"\n\t\"strings\"\n\t\"testing\"\n)\n\nfunc TestGood(t *testing.T) {\n\tb, err := os.ReadFile(\"a.txt\")\n\tif err != nil || !strings.Contains(string(b), \"good\") {\n\t\tt.Fatalf(\"a.txt is not good: %q %v\", b, err)\n\t}\n}\n",
	} {
		_, err := c.WriteFile(ctx, s.ID, name, []byte(content), client.WriteOptions{})
		require.NoError(t, err)
	}
	put("good\n")
	run(0)
	cs := submit()

	b := newBrowser(t)
	step(t, b, "open the list", chromedp.Navigate(url+"/ui/changesets"), chromedp.WaitVisible(chromedp.ID("token-input")),
		chromedp.SendKeys(chromedp.ID("token-input"), token), chromedp.Click(chromedp.CSS("#token-form button[type=submit]")))
	waitFor(t, b, "the passed badge in the list", `document.querySelector("#changesets td.checks-cell .check-passed") !== null`)

	open := func(what, state string) {
		t.Helper()
		step(t, b, what, chromedp.Navigate(url+"/ui/changesets/"+cs.ID))
		waitFor(t, b, "the checks: "+state, `document.querySelector("#checks") !== null && document.querySelector("#checks").dataset.state === "`+state+`"`)
	}
	open("open the changeset", "passed")
	// At the top: before the files and the diff.
	assert.True(t, eval[bool](t, b, `!!(document.querySelector("#checks").compareDocumentPosition(document.querySelector("#files")) & Node.DOCUMENT_POSITION_FOLLOWING)`))
	item := eval[string](t, b, `document.querySelector("#checks li.check-item").innerText`)
	assert.Contains(t, item, "go test ./...")
	assert.Contains(t, item, "(required)")
	assert.Contains(t, item, "exit 0")
	assert.Regexp(t, `^ok\s+m\s`, eval[string](t, b, `document.querySelector("#checks pre.output").textContent`))

	// An edit and a failing run: revision 2 has failed.
	put("bad\n")
	run(1)
	cs = submit()
	require.Equal(t, 2, cs.Revision)
	open("the failed revision", "failed")
	assert.Contains(t, eval[string](t, b, `document.querySelector("#checks li.check-item").innerText`), "exit 1")
	step(t, b, "accept", chromedp.Click(chromedp.ID("accept-submit")))
	waitFor(t, b, "the refusal", `document.querySelector("#accept-result .error") !== null`)
	refusal := eval[string](t, b, `document.querySelector("#accept-result").innerText`)
	assert.Contains(t, refusal, "checks_required")
	assert.Contains(t, eval[string](t, b, `document.querySelector("#checks-required").innerText`), "is failed")
	main := testrepo.Git(t, repo, "rev-parse", "main")

	// Revision 1 still shows what ran on its files.
	step(t, b, "revision 1", chromedp.SetValue(chromedp.ID("revision"), "1"), chromedp.Evaluate[chromedp.Void](`document.getElementById("revision").dispatchEvent(new Event("change"))`))
	waitFor(t, b, "revision 1's checks", `document.querySelector("#checks").dataset.state === "passed"`)

	// Another edit without a run: stale, on the page and in the list.
	put("good again\n")
	cs = submit()
	open("the stale revision", "stale")
	assert.Contains(t, eval[string](t, b, `document.querySelector("#checks li.check-item").innerText`), "the files changed after it ran")
	step(t, b, "accept the stale", chromedp.Click(chromedp.ID("accept-submit")))
	waitFor(t, b, "the refusal", `document.querySelector("#checks-required") !== null`)
	assert.Contains(t, eval[string](t, b, `document.querySelector("#checks-required").innerText`), "is stale")
	assert.Equal(t, main, testrepo.Git(t, repo, "rev-parse", "main"), "a refused accept writes nothing")
	_, err = c.Accept(ctx, cs.ID, apitypes.AcceptRequest{})
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, apitypes.CodeChecksRequired, apiErr.Code)
	step(t, b, "the list", chromedp.Navigate(url+"/ui/changesets"))
	waitFor(t, b, "the stale badge", `document.querySelector("#changesets td.checks-cell .check-stale") !== null`)

	// It runs again and passes: accept goes through on the page.
	run(0)
	open("the passing revision", "passed")
	step(t, b, "accept", chromedp.Click(chromedp.ID("accept-submit")))
	waitFor(t, b, "accepted", `document.querySelector("#accept-done") !== null`)
	assert.NotEqual(t, main, testrepo.Git(t, repo, "rev-parse", "main"))
}
