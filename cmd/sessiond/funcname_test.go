package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/internal/testrepo"
)

// hunkLines returns the "@@" lines of a unified diff, in order.
func hunkLines(diff string) []string {
	var out []string
	for _, l := range strings.Split(diff, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "@@ ") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// TestDiffFunctionContextEverywhere: a Go file edited in a session whose
// repository's .gitattributes names the golang driver shows the hunk
// headers git diff shows for the same edit, function context included,
// wherever a diff is produced: the session's diff as unified text and
// JSON, the command line's diff, the changeset's diff (the review page's
// data) and an accept's dry run, and the MCP diff tool.
func TestDiffFunctionContextEverywhere(t *testing.T) {
	plainRunOnly(t, "diffs from the daemon's binary")
	ctx := t.Context()
	repo := testrepo.Init(t)
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\n")
	for i := range 4 {
		fmt.Fprintf(&src, "func f%d(x int) int {\n", i)
		for j := range 8 {
			fmt.Fprintf(&src, "\tx += %d\n", j)
		}
		src.WriteString("\treturn x\n}\n\n")
	}
	src.WriteString("type T struct {\n\tA int\n\tB int\n\tC int\n\tD int\n}\n")
	old := src.String()
	edited := strings.Replace(old, "\t\"os\"\n", "\t\"strings\"\n", 1)
	edited = strings.Replace(edited, "\tx += 5\n", "\tx += 50\n", 2)
	edited = strings.Replace(edited, "\tD int\n", "\tD string\n", 1)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "main.go"), []byte(old), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".gitattributes"), []byte("*.go diff=golang\n"), 0o644))
	testrepo.Git(t, repo, "add", "-A")
	testrepo.Git(t, repo, "commit", "-q", "-m", "initial")
	// git's headers for the same edit, in the work tree.
	require.NoError(t, os.WriteFile(filepath.Join(repo, "main.go"), []byte(edited), 0o644))
	want := hunkLines(testrepo.Git(t, repo, "diff"))
	testrepo.Git(t, repo, "checkout", "--", "main.go")
	require.Len(t, want, 4)
	require.True(t, strings.HasSuffix(want[1], "@@ func f0(x int) int {"), "git's golang driver: %v", want)

	bare := filepath.Join(t.TempDir(), "r.git")
	testrepo.Git(t, repo, "clone", "-q", "--bare", repo, bare)

	d := newDaemon(t, stores[0], "--repo", "r="+bare)
	s, err := d.C.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: "r"})
	require.NoError(t, err)
	_, err = d.C.WriteFile(ctx, s.ID, "main.go", []byte(edited), client.WriteOptions{})
	require.NoError(t, err)

	unified, err := d.C.Diff(ctx, s.ID, "")
	require.NoError(t, err)
	assert.Equal(t, want, hunkLines(string(unified)), "the session's unified diff")
	asJSON, err := d.C.DiffJSON(ctx, s.ID, "")
	require.NoError(t, err)
	assert.Equal(t, want, jsonHunkLines(asJSON), "the session's JSON diff")

	clientEnv(t, d, s.ID)
	r := runCLI(t, "", "diff")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, want, hunkLines(r.stdout), "sessiond diff")

	sub := runCLI(t, "", "changeset", "submit", "-q")
	require.Equal(t, exitOK, sub.code, sub.stderr)
	cs := strings.TrimSpace(sub.stdout)
	csDiff, err := d.C.ChangesetDiff(ctx, cs)
	require.NoError(t, err)
	assert.Equal(t, want, hunkLines(string(csDiff)), "the changeset's diff")
	csJSON, err := d.C.ChangesetDiffJSON(ctx, cs)
	require.NoError(t, err)
	assert.Equal(t, want, jsonHunkLines(csJSON), "the changeset's JSON diff, which the review page shows")
	r = runCLI(t, "", "changeset", "accept", cs, "--dry-run")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, want, hunkLines(r.stdout), "an accept's dry run")

	tr := &mcp.StreamableClientTransport{Endpoint: d.URL + "/mcp/sessions/" + s.ID, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{s.Token}}}
	mc, err := mcp.NewClient(&mcp.Implementation{Name: "funcname", Version: "1"}, nil).Connect(ctx, tr, nil)
	require.NoError(t, err)
	t.Cleanup(func() { mc.Close() })
	text, _ := toolOK(t, mc, "diff", nil)
	assert.Equal(t, want, hunkLines(text), "the MCP diff tool")
}

// jsonHunkLines writes a JSON diff's hunk headers as the unified diff
// does.
func jsonHunkLines(d apitypes.Diff) []string {
	var out []string
	for _, f := range d.Files {
		for _, h := range f.Hunks {
			r := func(start, n int) string {
				if n == 1 {
					return fmt.Sprint(start)
				}
				return fmt.Sprintf("%d,%d", start, n)
			}
			out = append(out, strings.TrimSpace(fmt.Sprintf("@@ -%s +%s @@ %s", r(h.OldStart, h.OldLines), r(h.NewStart, h.NewLines), h.Function)))
		}
	}
	return out
}
