package ui_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
)

// readingFixture is a daemon with a repository whose main has files,
// and a session changing them, submitted as a changeset.
type readingFixture struct {
	url, token string
	c          *client.Client
	s          apitypes.Session
	cs         apitypes.Changeset
}

// newReadingFixture puts base on main, then writes change in a session
// and submits it.
func newReadingFixture(t *testing.T, base, change map[string]string) *readingFixture {
	t.Helper()
	ctx := t.Context()
	const token = "ui-reading-token"
	url, c := smallDaemon(t, token)
	write := func(id string, files map[string]string) { // one batch
		t.Helper()
		var edits []apitypes.Edit
		for p, body := range files {
			edits = append(edits, apitypes.Edit{Op: "write", Path: p, Content: body})
		}
		_, err := c.Edits(ctx, id, apitypes.EditsRequest{Edits: edits})
		require.NoError(t, err)
	}
	s0, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main"})
	require.NoError(t, err)
	write(s0.ID, base)
	cs0, err := c.Submit(ctx, s0.ID, apitypes.SubmitRequest{Intent: "the base"})
	require.NoError(t, err)
	_, err = c.Accept(ctx, cs0.ID, apitypes.AcceptRequest{})
	require.NoError(t, err)
	s, err := c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r", Base: "main", AgentID: "reader"})
	require.NoError(t, err)
	write(s.ID, change)
	cs, err := c.Submit(ctx, s.ID, apitypes.SubmitRequest{Intent: "the change"})
	require.NoError(t, err)
	return &readingFixture{url: url, token: token, c: c, s: s, cs: cs}
}

const goBefore = `package shapes

import "fmt"

// Area is a square's.
func Area(side int) int {
	return side * side
}

func Name() string {
	return "square"
}
`

const goAfter = `package shapes

import "fmt"

// Area is a square's.
func Area(side int) int {
	return side * side
}

func Name() string {
	return fmt.Sprintf("square of %d", 2)
}
`

// TestReviewPageHighlight: a Go file's diff comes with syntax tokens
// from the server, shown as spans with classes (a keyword, a string),
// while what is copied or read as text is the plain line.
func TestReviewPageHighlight(t *testing.T) {
	f := newReadingFixture(t, map[string]string{"shapes.go": goBefore, "notes.unknownext": "a\n"},
		map[string]string{"shapes.go": goAfter, "notes.unknownext": "b\n"})

	// The API: spans for the Go file, one per line; none for the other.
	d, err := f.c.ChangesetDiffJSON(t.Context(), f.cs.ID)
	require.NoError(t, err)
	var goFile, other apitypes.FileDiff
	for _, fd := range d.Files {
		switch fd.Path {
		case "shapes.go":
			goFile = fd
		case "notes.unknownext":
			other = fd
		}
	}
	require.Len(t, goFile.Hunks, 1)
	h := goFile.Hunks[0]
	require.Len(t, h.Spans, len(h.Lines))
	found := map[string]string{}
	for j, l := range h.Lines {
		r := []rune(strings.TrimSuffix(l[1:], "\n"))
		for _, s := range h.Spans[j] {
			found[string(r[s.Start:s.End])] = s.Class
		}
	}
	assert.Equal(t, "kd", found["func"])
	assert.Equal(t, "s", found[`"square of %d"`][:1])
	require.Len(t, other.Hunks, 1)
	assert.Nil(t, other.Hunks[0].Spans)

	b := newBrowser(t)
	step(t, b, "open the changeset", chromedp.Navigate(f.url+"/ui/changesets/"+f.cs.ID), chromedp.WaitVisible(chromedp.ID("token-input")),
		chromedp.SendKeys(chromedp.ID("token-input"), f.token), chromedp.Click(chromedp.CSS("#token-form button[type=submit]")))
	waitFor(t, b, "the highlighted diff", `document.querySelector('#diffs table[aria-label="Diff of shapes.go"] span.hl') !== null`)
	kw := eval[[]string](t, b, `[...document.querySelectorAll('#diffs table[aria-label="Diff of shapes.go"] span.hl-k')].map(s => s.textContent)`)
	assert.Contains(t, kw, "func")
	assert.Contains(t, kw, "return")
	str := eval[[]string](t, b, `[...document.querySelectorAll('#diffs table[aria-label="Diff of shapes.go"] span.hl-s')].map(s => s.textContent)`)
	assert.Contains(t, str, `"square of %d"`)
	assert.Equal(t, 0, eval[int](t, b, `document.querySelectorAll('#diffs table[aria-label="Diff of notes.unknownext"] span.hl').length`))
	// Nothing executes: every token is a span of text.
	assert.Equal(t, 0, eval[int](t, b, `document.querySelectorAll('#diffs span.hl *').length`))

	// Copying the added line: the line alone, no sign, no markup.
	const added = `	return fmt.Sprintf("square of %d", 2)`
	row := `[...document.querySelectorAll('#diffs tr.line.add')].find(r => r.querySelector("td.code.add").textContent.includes("square of"))`
	assert.Equal(t, added, eval[string](t, b, row+`.querySelector("td.code.add").innerText`))
	sel := eval[string](t, b, `(() => { const td = `+row+`.querySelector("td.code.add");
		const r = document.createRange(); r.selectNodeContents(td);
		const s = window.getSelection(); s.removeAllRanges(); s.addRange(r); return s.toString(); })()`)
	assert.Equal(t, added, sel)
	// The whole table copied reads as the file's lines (and the numbers).
	table := eval[string](t, b, `(() => { const t = document.querySelector('#diffs table[aria-label="Diff of shapes.go"]');
		const r = document.createRange(); r.selectNodeContents(t);
		const s = window.getSelection(); s.removeAllRanges(); s.addRange(r); return s.toString(); })()`)
	assert.Contains(t, table, `return "square"`)
	assert.NotContains(t, table, "+\t")
}

// numbered is a file of n lines "line i", with edits.
func numbered(n int, edit map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := edit[i]; ok {
			b.WriteString(s + "\n")
		} else {
			fmt.Fprintf(&b, "line %d\n", i)
		}
	}
	return b.String()
}

// openPage opens a changeset's page in a new browser, giving the token.
func (f *readingFixture) openPage(t *testing.T, csID string) context.Context {
	t.Helper()
	b := newBrowser(t)
	step(t, b, "open the changeset", chromedp.Navigate(f.url+"/ui/changesets/"+csID), chromedp.WaitVisible(chromedp.ID("token-input")),
		chromedp.SendKeys(chromedp.ID("token-input"), f.token), chromedp.Click(chromedp.CSS("#token-form button[type=submit]")))
	waitFor(t, b, "the files", `document.querySelector("#diffs section.file") !== null`)
	return b
}

// TestReviewPageExpandContext: "expand" above and below each hunk loads
// the unchanged lines around it, 20 at a time, until the gaps close:
// the table then reads as the whole file, in order.
func TestReviewPageExpandContext(t *testing.T) {
	f := newReadingFixture(t, map[string]string{"doc.txt": numbered(80, nil)},
		map[string]string{"doc.txt": numbered(80, map[int]string{30: "thirty", 70: "seventy"})})
	b := f.openPage(t, f.cs.ID)
	gaps := func() []string {
		return eval[[]string](t, b, `[...document.querySelectorAll("#diffs tr.expand-row")].map(r => r.dataset.from + "-" + r.dataset.to)`)
	}
	require.Equal(t, []string{"1-26", "34-66", "74-"}, gaps(), "before, between and after the two hunks")
	click := func(what string, gap int, dir string) {
		t.Helper()
		n := eval[int](t, b, `document.querySelectorAll("#diffs tr.expanded").length`)
		step(t, b, what, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelectorAll("#diffs tr.expand-row")[%d].querySelector('button[data-dir=%q]').click()`, gap, dir)))
		waitFor(t, b, what, fmt.Sprintf(`document.querySelectorAll("#diffs tr.expanded").length > %d`, n))
	}
	click("above the first hunk", 0, "up")
	assert.Equal(t, []string{"1-6", "34-66", "74-"}, gaps(), "20 lines, nearest the hunk")
	assert.Equal(t, "line 7", eval[string](t, b, `document.querySelector('#diffs tr.expanded[data-new="7"] td.code').innerText`))
	click("above the first hunk again", 0, "up")
	click("below the first hunk", 0, "down")
	assert.Equal(t, []string{"54-66", "74-"}, gaps())
	click("above the second hunk", 0, "up")
	click("below the last hunk", 0, "down")
	assert.Empty(t, gaps(), "every gap closed: the end of the file is known")

	// The table now reads as the new file, line by line, numbers and all.
	nums := eval[[]int](t, b, `[...document.querySelectorAll("#diffs tr.line[data-new]")].map(r => Number(r.dataset.new))`)
	texts := eval[[]string](t, b, `[...document.querySelectorAll("#diffs tr.line[data-new]")].map(r => r.querySelector("td.code.ctx, td.code.add").innerText)`)
	want := strings.Split(strings.TrimSuffix(numbered(80, map[int]string{30: "thirty", 70: "seventy"}), "\n"), "\n")
	require.Len(t, nums, 80)
	for i, n := range nums {
		assert.Equal(t, i+1, n)
		assert.Equal(t, want[i], texts[i], "line %d", n)
	}
	// Old numbers follow: unchanged line 50 is 50 on both sides.
	assert.Equal(t, "50", eval[string](t, b, `document.querySelector('#diffs tr.expanded[data-new="50"]').dataset.old`))
	// An expanded line can be commented on like any other.
	assert.True(t, eval[bool](t, b, `document.querySelector('#diffs tr.expanded[data-new="50"] button.ln-btn[data-line="50"]') !== null`))

	// Side by side: the same lines on both sides.
	step(t, b, "side by side", chromedp.Click(chromedp.CSS(`input[name=diff-mode][value=split]`)))
	waitFor(t, b, "the split diff", `document.querySelector("#diffs table.diff.split") !== null`)
	require.Equal(t, []string{"1-26", "34-66", "74-"}, gaps(), "drawn again: the gaps are back")
	click("above the first hunk, side by side", 0, "up")
	assert.Equal(t, []string{"line 7", "line 7"}, eval[[]string](t, b, `[...document.querySelectorAll('#diffs tr.expanded[data-new="7"] td.code')].map(td => td.innerText)`))
}

// TestReviewPageViewedMarks: the file tree groups files by directory;
// a file marked viewed folds away, its mark lasts across reloads of the
// tab, and a new revision that changes the file clears it (and only
// its).
func TestReviewPageViewedMarks(t *testing.T) {
	f := newReadingFixture(t, map[string]string{"a.txt": "a\n", "lib/b.txt": "b\n", "lib/c.txt": "c\n"},
		map[string]string{"a.txt": "a1\n", "lib/b.txt": "b1\n", "lib/c.txt": "c1\n"})
	b := f.openPage(t, f.cs.ID)
	assert.Equal(t, []string{"lib/"}, eval[[]string](t, b, `[...document.querySelectorAll("#files tr.dir")].map(r => r.innerText.trim())`))
	assert.Equal(t, []string{"a.txt", "b.txt", "c.txt"}, eval[[]string](t, b, `[...document.querySelectorAll("#files tr.file-row td.path a")].map(a => a.innerText)`))
	assert.Equal(t, 3, eval[int](t, b, `document.querySelectorAll("#diffs table.diff").length`), "three small files: all open")
	viewed := func() []string {
		return eval[[]string](t, b, `[...document.querySelectorAll("#files input.viewed-check")].filter(c => c.checked).map(c => c.dataset.path)`)
	}
	openDiffs := func() []string {
		return eval[[]string](t, b, `[...document.querySelectorAll("#diffs section.file")].filter(s => s.querySelector("table.diff")).map(s => s.dataset.path)`)
	}
	step(t, b, "mark a.txt viewed", chromedp.Click(chromedp.CSS(`#files input.viewed-check[data-path="a.txt"]`)))
	step(t, b, "mark lib/b.txt viewed in its diff's header", chromedp.Click(chromedp.CSS(`#diffs section.file[data-path="lib/b.txt"] input.viewed-check`)))
	assert.Equal(t, []string{"a.txt", "lib/b.txt"}, viewed())
	assert.Equal(t, []string{"lib/c.txt"}, openDiffs(), "viewed files fold away")
	assert.Equal(t, "2 of 3 files viewed", eval[string](t, b, `document.querySelector("#viewed-count").innerText`))

	reload := func(what string) {
		t.Helper()
		step(t, b, what, chromedp.Reload())
		waitFor(t, b, "the files", `document.querySelectorAll("#files input.viewed-check").length === 3`)
	}
	reload("reload")
	assert.Equal(t, []string{"a.txt", "lib/b.txt"}, viewed(), "the marks outlive a reload")
	assert.Equal(t, []string{"lib/c.txt"}, openDiffs())

	// Revision 2 changes a.txt again, not lib/b.txt.
	_, err := f.c.WriteFile(t.Context(), f.s.ID, "a.txt", []byte("a2\n"), client.WriteOptions{})
	require.NoError(t, err)
	cs, err := f.c.Submit(t.Context(), f.s.ID, apitypes.SubmitRequest{})
	require.NoError(t, err)
	require.Equal(t, 2, cs.Revision)
	reload("reload on revision 2")
	assert.Equal(t, []string{"lib/b.txt"}, viewed(), "a.txt changed: its mark is gone; lib/b.txt's stays")
	assert.Equal(t, []string{"a.txt", "lib/c.txt"}, openDiffs())

	// Unmarking opens the diff again.
	step(t, b, "unmark lib/b.txt", chromedp.Click(chromedp.CSS(`#files input.viewed-check[data-path="lib/b.txt"]`)))
	assert.Equal(t, []string{"a.txt", "lib/b.txt", "lib/c.txt"}, openDiffs())
	assert.Equal(t, "0 of 3 files viewed", eval[string](t, b, `document.querySelector("#viewed-count").innerText`))
}

// TestReviewPageLargeChangeset: a changeset of 1,000 Go files renders
// with every diff folded (only the file list and the headers), within a
// generous budget of the page's own clock; the list comes without syntax
// tokens, a diff is built (with its file's tokens, asked for then) when
// opened and dropped when closed, so only the opened diffs are in the
// DOM.
func TestReviewPageLargeChangeset(t *testing.T) {
	const n = 1000
	base, change := map[string]string{}, map[string]string{}
	for i := range n {
		p := fmt.Sprintf("pkg%02d/file%04d.go", i/50, i)
		src := fmt.Sprintf("package pkg%02d\n\n// F%d says which.\nfunc F%d() string {\n\treturn %%q\n}\n", i/50, i, i)
		base[p] = fmt.Sprintf(src, "before")
		change[p] = fmt.Sprintf(src, "after")
	}
	f := newReadingFixture(t, base, change)
	start := time.Now()
	d, err := f.c.ChangesetDiffJSON(t.Context(), f.cs.ID)
	require.NoError(t, err)
	require.Len(t, d.Files, n)
	t.Logf("the JSON diff of %d files: %s", n, time.Since(start))
	b := f.openPage(t, f.cs.ID)
	// Measured on a load with the token already given: navigation to
	// the page's first render, by the page's clock.
	step(t, b, "reload", chromedp.Reload())
	waitFor(t, b, "the page", `performance.getEntriesByName("sessiond.changeset.rendered").length === 1`)
	ms := eval[float64](t, b, `performance.getEntriesByName("sessiond.changeset.rendered")[0].startTime`)
	t.Logf("a %d-file changeset rendered %.0f ms after navigation", n, ms)
	assert.Less(t, ms, 10000.0, "a generous budget; the goal is under 2 s")

	assert.Equal(t, n, eval[int](t, b, `document.querySelectorAll("#diffs section.file").length`))
	assert.Equal(t, n, eval[int](t, b, `document.querySelectorAll("#files tr.file-row").length`))
	assert.Equal(t, 20, eval[int](t, b, `document.querySelectorAll("#files tr.dir").length`))
	assert.Equal(t, 0, eval[int](t, b, `document.querySelectorAll("#diffs table.diff").length`), "every diff folded")
	assert.Contains(t, eval[string](t, b, `document.querySelector("#collapsed-note").innerText`), "1000 files")

	open := func(what, sel string) {
		t.Helper()
		step(t, b, what, chromedp.Evaluate[chromedp.Void](`document.querySelector('`+sel+`').click()`))
	}
	open("open one from its header", `#diffs section.file[data-path="pkg03/file0170.go"] button.toggle`)
	open("open one from the file list", `#files tr.file-row[data-path="pkg19/file0999.go"] td.path a`)
	waitFor(t, b, "both diffs", `document.querySelectorAll("#diffs table.diff").length === 2`)
	assert.Equal(t, []string{"pkg03/file0170.go", "pkg19/file0999.go"},
		eval[[]string](t, b, `[...document.querySelectorAll("#diffs table.diff")].map(t => t.closest("section").dataset.path)`), "only the opened diffs")
	assert.Equal(t, "pkg19/file0999.go", eval[string](t, b, `document.activeElement.closest("section").dataset.path`), "the file list's link focuses the file")
	assert.Contains(t, eval[[]string](t, b, `[...document.querySelectorAll('#diffs section.file[data-path="pkg03/file0170.go"] span.hl-s')].map(s => s.textContent)`), `"after"`,
		"an opened file's tokens come with it")
	// The list came without tokens; each opened file asked for its own.
	assert.Equal(t, 2, eval[int](t, b, `performance.getEntriesByType("resource").filter(e => /\/diff\?format=json&path=/.test(e.name)).length`))
	assert.Equal(t, 1, eval[int](t, b, `performance.getEntriesByType("resource").filter(e => /\/diff\?format=json&spans=false/.test(e.name)).length`))
	open("close the first", `#diffs section.file[data-path="pkg03/file0170.go"] button.toggle`)
	assert.Equal(t, 1, eval[int](t, b, `document.querySelectorAll("#diffs table.diff").length`))
	assert.Equal(t, "false", eval[string](t, b, `document.querySelector('#diffs section.file[data-path="pkg03/file0170.go"] button.toggle').getAttribute("aria-expanded")`))
}

// TestReviewPageKeyboard: j and k move between files, n and p between
// the hunks of the open diffs (to the hunk's first changed line), c
// comments on the focused line; keys typed in the comment are text.
func TestReviewPageKeyboard(t *testing.T) {
	f := newReadingFixture(t, map[string]string{"a.txt": numbered(40, nil), "b.txt": numbered(10, nil), "c.txt": "c\n"},
		map[string]string{"a.txt": numbered(40, map[int]string{5: "five", 30: "thirty"}), "b.txt": numbered(10, map[int]string{8: "eight"}), "c.txt": "c1\n"})
	b := f.openPage(t, f.cs.ID)
	waitFor(t, b, "three diffs", `document.querySelectorAll("#diffs table.diff").length === 3`)
	key := func(k string) {
		t.Helper()
		step(t, b, "press "+k, chromedp.KeyEvent(k))
	}
	focusedFile := func() string {
		return eval[string](t, b, `(document.activeElement.closest("section.file") || {dataset: {}}).dataset.path || ""`)
	}
	focusedLine := func() string {
		return eval[string](t, b, `document.activeElement.matches("button.ln-btn") ? document.activeElement.dataset.path + ":" + document.activeElement.dataset.line : ""`)
	}
	key("j")
	assert.Equal(t, "a.txt", focusedFile())
	key("j")
	key("j")
	assert.Equal(t, "c.txt", focusedFile())
	key("j")
	assert.Equal(t, "c.txt", focusedFile(), "the last file stays")
	key("k")
	assert.Equal(t, "b.txt", focusedFile())
	assert.Equal(t, 1, eval[int](t, b, `document.querySelectorAll("#diffs section.file.current").length`))

	key("k")
	key("n")
	assert.Equal(t, "a.txt:5", focusedLine(), "a.txt's first hunk, at its changed line")
	key("n")
	assert.Equal(t, "a.txt:30", focusedLine())
	key("n")
	assert.Equal(t, "b.txt:8", focusedLine(), "on into the next file")
	key("p")
	assert.Equal(t, "a.txt:30", focusedLine())

	key("c")
	waitFor(t, b, "the comment form", `document.activeElement && document.activeElement.id === "comment-body"`)
	assert.Equal(t, "Comment on line 30 of a.txt", eval[string](t, b, `document.querySelector("#comment-form label").innerText`))
	step(t, b, "type", chromedp.SendKeys(chromedp.ID("comment-body"), "just kidding"))
	assert.Equal(t, "just kidding", eval[string](t, b, `document.getElementById("comment-body").value`), "j, k, n, p and c typed as text")
	step(t, b, "add it", chromedp.Click(chromedp.CSS("#comment-form button[type=submit]")))
	waitFor(t, b, "the draft", `[...document.querySelectorAll("#diffs tr.comment-row.draft")].some(r => r.innerText.includes("just kidding"))`)
	assert.Contains(t, eval[string](t, b, `document.querySelector("#drafts").innerText`), "a.txt:30")
}
