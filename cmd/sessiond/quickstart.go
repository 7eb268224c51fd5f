package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// quickstartCmd is `make run`: it builds the sample repository from a
// fixture stream into the data directory (once), serves it as "sample" and
// prints commands to paste.
type quickstartCmd struct {
	serveConfig `embed:""`
	Fixture     string `help:"git fast-import stream of the sample repository." default:"testdata/repos/small.fi" placeholder:"FILE"`
}

func (q *quickstartCmd) Run(x *cli) error {
	c := q.serveConfig
	repo := filepath.Join(c.DataDir, "sample.git")
	if err := buildSample(repo, q.Fixture); err != nil {
		return fmt.Errorf("quickstart: %w", err)
	}
	c.Repos = append(c.Repos, "sample="+repo)
	self, err := os.Executable()
	if err != nil {
		self = "sessiond"
	}
	if rel, err := filepath.Rel(mustGetwd(), self); err == nil && !filepath.IsAbs(rel) && len(rel) < len(self) {
		self = rel
	}
	code := serveWith(c, x.stdout, x.stderr, func(url string) {
		fmt.Fprintf(x.stdout, `
sessiond is running at %[1]s with the sample repository "sample" (Ctrl-C stops it).
Paste these into another terminal:

  export SESSIOND_SERVER=%[1]s
  export SESSIOND_SESSION=$(%[2]s session new --repo sample --intent "first steps" -q)
  echo "hello from my session" | %[2]s put hello.txt
  %[2]s diff
  %[2]s exec -- sh -c 'ls; echo more >> hello.txt'   # runs on the session's view, records the change
  %[2]s changeset submit --intent "first steps"

Review changesets in a browser at %[1]s/ui/ .
MCP for coding agents: streamable HTTP at %[1]s/mcp/sessions/$SESSIOND_SESSION,
or on stdio: %[2]s mcp --session $SESSIOND_SESSION

`, url, self)
	})
	if code != exitOK {
		return &exitCodeError{code: code}
	}
	return nil
}

func mustGetwd() string {
	wd, _ := os.Getwd()
	return wd
}

// buildSample imports the fixture into a new bare repository at dir,
// unless one is there already.
func buildSample(dir, fixture string) error {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return nil
	}
	stream, err := os.ReadFile(fixture)
	if err != nil {
		return fmt.Errorf("sample repository: %w (run from the repository root)", err)
	}
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	git := func(stdin []byte, args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = tmp
		cmd.Stdin = bytes.NewReader(stdin)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("git %s: %v: %s", args[0], err, errb.Bytes())
		}
		return nil
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := git(nil, "init", "-q", "--bare"); err != nil {
		return err
	}
	if err := git(nil, "symbolic-ref", "HEAD", "refs/heads/main"); err != nil {
		return err
	}
	if err := git(stream, "fast-import", "--quiet", "--done"); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}
