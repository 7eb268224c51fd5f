package mcpserver_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/internal/testrepo"
	"github.com/sessiond/sessiond/mcpserver"
)

// diffVersions is a file of n lines and a version of it with every tenth
// line changed: a diff of about 0.8 n lines in n/10 hunks.
func diffVersions(n int) (old, new string) {
	var o, w strings.Builder
	for i := range n {
		line := fmt.Sprintf("line %d of the generated file\n", i)
		o.WriteString(line)
		if i%10 == 5 {
			line = fmt.Sprintf("line %d changed by the session\n", i)
		}
		w.WriteString(line)
	}
	return o.String(), w.String()
}

// BenchmarkMCPDiff: the diff tool on a session that changed every tenth
// line of a file of lines=N, in process through the SDK's client, with
// the default result cap (result=capped: the diff is cut into files and
// the one file is too large to show) and with the cap raised so that
// the whole diff is split, counted and sent (result=whole); beside it
// `git diff --no-index` of the same two files in the same run. The
// tool's cost should grow as the diff does.
func BenchmarkMCPDiff(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		old, new := diffVersions(n)
		for _, whole := range []bool{false, true} {
			name, opts := "capped", mcpserver.Options{}
			if whole {
				name, opts = "whole", mcpserver.Options{MaxResultBytes: 64 << 20}
			}
			b.Run(fmt.Sprintf("lines=%d/result=%s/impl=sessiond", n, name), func(b *testing.B) {
				e := newEnv(b)
				require.NoError(b, os.WriteFile(filepath.Join(e.repoDir, "big.txt"), []byte(old), 0o644))
				testrepo.Git(b, e.repoDir, "add", "big.txt")
				testrepo.Git(b, e.repoDir, "commit", "-q", "-m", "big file")
				s := e.newSession(b, apitypes.CreateSessionRequest{})
				cs := e.connect(b, s, opts)
				ok(b, cs, "write_file", map[string]any{"path": "big.txt", "content": new})
				for b.Loop() {
					text, data := ok(b, cs, "diff", nil)
					counts := strings.Contains(text, fmt.Sprintf("(+%d −%d)", n/10, n/10))
					if whole && (data["truncated"] == true || !counts) || !whole && data["truncated"] != true {
						b.Fatalf("diff: %.200s", text)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("lines=%d/impl=git-diff-no-index", n), func(b *testing.B) {
			dir := b.TempDir()
			a, c := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			require.NoError(b, os.WriteFile(a, []byte(old), 0o644))
			require.NoError(b, os.WriteFile(c, []byte(new), 0o644))
			for b.Loop() {
				cmd := exec.Command("git", "diff", "--no-index", "--no-color", a, c)
				cmd.Env = testrepo.Env()
				out, err := cmd.Output()
				if ee, isExit := err.(*exec.ExitError); !isExit || ee.ExitCode() != 1 || len(out) == 0 {
					b.Fatalf("git diff --no-index: %v", err)
				}
			}
		})
	}
}

// BenchmarkMCPEditFile: edit_file changing one line in the middle of a
// file of lines=N, as a dry run (so every iteration edits the same file),
// in process through the SDK's client: the read, the exact-match search,
// and the engine's check of the write and its diff (diff: true on the
// edits route). Beside it, BenchmarkMCPGrepContext: grep with 3 lines of
// context around every hundredth line of the same file, the context now
// cut by the engine in its one pass over the file. Both should grow as
// the file does, no faster.
func BenchmarkMCPEditFile(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		old, _ := diffVersions(n)
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) {
			e := newEnv(b)
			require.NoError(b, os.WriteFile(filepath.Join(e.repoDir, "big.txt"), []byte(old), 0o644))
			testrepo.Git(b, e.repoDir, "add", "big.txt")
			testrepo.Git(b, e.repoDir, "commit", "-q", "-m", "big file")
			cs := e.connect(b, e.newSession(b, apitypes.CreateSessionRequest{}), mcpserver.Options{})
			target := fmt.Sprintf("line %d of the generated file\n", n/2)
			args := map[string]any{"path": "big.txt", "dry_run": true, "edits": []any{map[string]any{"old_text": target, "new_text": "changed\n"}}}
			for b.Loop() {
				text, _ := ok(b, cs, "edit_file", args)
				if !strings.Contains(text, "+changed\n") {
					b.Fatalf("edit_file: %.300s", text)
				}
			}
		})
	}
}

func BenchmarkMCPGrepContext(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		old, _ := diffVersions(n)
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) {
			e := newEnv(b)
			require.NoError(b, os.WriteFile(filepath.Join(e.repoDir, "big.txt"), []byte(old), 0o644))
			testrepo.Git(b, e.repoDir, "add", "big.txt")
			testrepo.Git(b, e.repoDir, "commit", "-q", "-m", "big file")
			cs := e.connect(b, e.newSession(b, apitypes.CreateSessionRequest{}), mcpserver.Options{MaxResultBytes: 64 << 20})
			args := map[string]any{"pattern": "^line [0-9]*00 ", "glob": "big.txt", "context": 3, "max_results": 1000}
			for b.Loop() {
				_, data := ok(b, cs, "grep", args)
				if got := len(data["matches"].([]any)); got != min(n/100-1, 1000) {
					b.Fatalf("grep: %d matches", got)
				}
			}
		})
	}
}
