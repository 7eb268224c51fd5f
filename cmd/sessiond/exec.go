package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/merge"
)

// execCmd is `sessiond exec [--cwd DIR] [--timeout D] [--network] --
// CMD ARGS…`: it runs the command on the session's view, streams its
// output, lists what was recorded on standard error and exits with the
// command's exit code.
type execCmd struct {
	Cwd       string        `help:"Directory of the view to run in (default: its root)." placeholder:"DIR"`
	Timeout   time.Duration `help:"Kill the command and everything it started after this long (default 10m; the daemon caps it)." placeholder:"D"`
	Network   bool          `help:"Ask for the network the repository's policy gives: the host's (where the daemon allows it too) or its allowlist through the daemon's egress proxy (by default a command has only its own loopback)."`
	NoNetwork bool          `help:"Run with only the command's own loopback (the default; kept for scripts)." hidden:""`
	Env       []string      `help:"KEY=VALUE added to the command's minimal environment (repeatable)." short:"e" sep:"none" placeholder:"KEY=VALUE"`
	Record    string        `help:"When to record what the command changed: always, on_success or never." enum:"always,on_success,never" default:"always"`
	Caches    string        `help:"Tool caches: shared (the repository's) or private (the session's own)." enum:"shared,private" default:"shared"`
	Stdin     bool          `help:"Send standard input to the command."`
	Argv      []string      `arg:"" passthrough:"" help:"The command and its arguments, after --."`
}

func (c *execCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	argv := c.Argv
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return usagef("exec: no command: sessiond exec [flags] -- CMD ARGS…")
	}
	if c.Timeout < 0 {
		return usagef("exec: --timeout %s: want a positive duration such as 30s or 10m (without it, 10m; the daemon caps it)", c.Timeout)
	}
	req := apitypes.ExecRequest{Argv: argv, Cwd: c.Cwd, TimeoutSeconds: c.Timeout.Seconds(), Record: c.Record, Caches: c.Caches}
	if c.Network && c.NoNetwork {
		return usagef("exec: --network and --no-network: give one")
	}
	if c.Network {
		t := true
		req.Network = &t
	}
	if len(c.Env) > 0 {
		req.Env = map[string]string{}
		for _, kv := range c.Env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return usagef("exec: --env %q: want KEY=VALUE", kv)
			}
			req.Env[k] = v
		}
	}
	if c.Stdin {
		data, err := io.ReadAll(x.stdin)
		if err != nil {
			return err
		}
		req.Stdin = string(data)
	}
	var output func(string, []byte)
	if !x.json {
		output = func(stream string, p []byte) {
			if stream == "stderr" {
				_, _ = x.stderr.Write(p)
			} else {
				_, _ = x.stdout.Write(p)
			}
		}
	}
	res, err := x.c.Exec(ctx, id, req, output)
	if err != nil {
		return err
	}
	if x.json {
		x.printJSON(res)
	} else {
		printExecSummary(x.stderr, res)
	}
	if res.ExitCode != 0 {
		return &exitCodeError{code: res.ExitCode}
	}
	return nil
}

func printExecSummary(w io.Writer, res apitypes.ExecResponse) {
	switch {
	case res.TimedOut:
		fmt.Fprintf(w, "sessiond: the command timed out after %d ms and was killed\n", res.DurationMS)
	case res.Signal != "":
		fmt.Fprintf(w, "sessiond: the command was killed by %s\n", res.Signal)
	}
	// res.OutputTruncated is of the answer's stdout and stderr (their
	// tails); the text above was streamed as the command wrote it, all
	// of it, so there is nothing cut to report here (--json prints the
	// answer, which says it).
	if !res.Isolated {
		fmt.Fprintln(w, "sessiond: warning: the command ran without isolation (the kernel refuses namespaces)")
	}
	for _, l := range res.LimitExceeded {
		for _, al := range res.Limits {
			if al.Name == l {
				fmt.Fprintf(w, "sessiond: the command ran into its %s limit (%s, by %s)\n", l, limitValue(al), al.Via)
			}
		}
	}
	if len(res.NetworkRefused) > 0 {
		fmt.Fprintf(w, "sessiond: the network allowlist refused: %s\n", strings.Join(res.NetworkRefused, ", "))
	}
	letters := map[string]string{"added": "A", "modified": "M", "deleted": "D"}
	switch {
	case !res.Recorded && len(res.Changes) > 0:
		fmt.Fprintf(w, "sessiond: not recorded (%s); undone:\n", res.NotRecorded)
	case res.Mutation != nil:
		fmt.Fprintf(w, "sessiond: recorded as mutation %d:\n", res.Mutation.Seq)
	case len(res.Changes) == 0 && len(res.Rejected) == 0:
		fmt.Fprintln(w, "sessiond: no changes")
	}
	for _, c := range res.Changes {
		fmt.Fprintf(w, "  %s %s\n", letters[c.Status], merge.QuotePath(c.Path))
	}
	if len(res.Rejected) > 0 {
		fmt.Fprintln(w, "sessiond: refused and undone:")
		for _, r := range res.Rejected {
			fmt.Fprintf(w, "  %s (%s): %s\n", merge.QuotePath(r.Path), r.Rule, r.Message)
		}
	}
	for _, c := range res.Checkpoints {
		fmt.Fprintf(w, "sessiond: commit became checkpoint %d (%s): %s\n", c.N, c.Commit[:min(12, len(c.Commit))], c.Label)
	}
	if res.GitNote != "" {
		fmt.Fprintf(w, "sessiond: git: %s\n", res.GitNote)
	}
}

// limitValue says a limit's value as a person reads it.
func limitValue(l apitypes.ExecLimit) string {
	switch l.Name {
	case "pids", "cpu_weight":
		return fmt.Sprint(l.Value)
	}
	return humanBytes(l.Value)
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.3g %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// checkoutCmd is `sessiond checkout DIR`: the session's view written into
// a new directory for a person to look at.
type checkoutCmd struct {
	Dir string `arg:"" help:"New (or empty) directory to write the view into." type:"path"`
}

func (c *checkoutCmd) Run(ctx context.Context, x *cli) error {
	id, err := x.sessionOr("")
	if err != nil {
		return err
	}
	if ents, err := os.ReadDir(c.Dir); err == nil && len(ents) > 0 {
		return usagef("checkout: %s is not empty", c.Dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	files, err := x.c.Tree(ctx, id, client.TreeOptions{Recursive: true})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	work := make(chan apitypes.FileInfo)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		n     int
	)
	for range 8 {
		wg.Go(func() {
			for f := range work {
				err := checkoutFile(ctx, x, id, c.Dir, f)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				n++
				mu.Unlock()
			}
		})
	}
	for _, f := range files {
		switch f.Type {
		case "dir", "submodule":
			if err := os.MkdirAll(filepath.Join(c.Dir, filepath.FromSlash(f.Path)), 0o755); err != nil {
				close(work)
				wg.Wait()
				return err
			}
		default:
			work <- f
		}
	}
	close(work)
	wg.Wait()
	if first != nil {
		return first
	}
	return x.out(map[string]any{"dir": c.Dir, "files": n}, func(w io.Writer) {
		fmt.Fprintf(w, "wrote %s into %s\n", count(n, "file"), c.Dir)
	})
}

func checkoutFile(ctx context.Context, x *cli, id, dir string, f apitypes.FileInfo) error {
	data, _, err := x.c.ReadFile(ctx, id, f.Path)
	if err != nil {
		return err
	}
	full := filepath.Join(dir, filepath.FromSlash(f.Path))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	switch f.Mode {
	case "120000":
		return os.Symlink(string(data), full)
	case "100755":
		return os.WriteFile(full, data, 0o755)
	}
	return os.WriteFile(full, data, 0o644)
}
