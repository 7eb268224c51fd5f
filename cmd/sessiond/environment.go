package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sessiond/sessiond/apitypes"
)

// repoEnvCmd reads and changes a repository's environment (GET and PUT
// /v1/repos/{repo}/environment). Secret values never come from argv,
// where other users of the host could read them: only from standard
// input or a file.
type repoEnvCmd struct {
	Show    repoEnvShowCmd    `cmd:"" help:"Show a repository's plain variables, the names of its secrets (their values are never shown) and its environment configuration."`
	Set     repoEnvSetCmd     `cmd:"" help:"Change a repository's variables, secrets or environment configuration; what is not named stays."`
	Layers  repoEnvLayersCmd  `cmd:"" help:"List a repository's environment layers: key, commit, size, files, build time, status, last use."`
	Rebuild repoEnvRebuildCmd `cmd:"" help:"Forget a repository's failed environment builds and drop its unused layers: the next command builds again."`
}

type repoEnvShowCmd struct {
	Repo string `arg:"" help:"Repository name."`
}

func (c *repoEnvShowCmd) Run(ctx context.Context, x *cli) error {
	e, err := x.c.RepoEnvironment(ctx, c.Repo)
	if err != nil {
		return err
	}
	return x.out(e, func(w io.Writer) { printEnvironment(w, e) })
}

func printEnvironment(w io.Writer, e apitypes.RepoEnvironment) {
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		fmt.Fprintf(w, "%s=%s\n", k, e.Env[k])
	}
	for _, n := range e.Secrets {
		fmt.Fprintf(w, "%s=*** (secret)\n", n)
	}
	c := e.EnvironmentConfig
	if c.Setup != nil || c.Key != nil || c.Include != nil || c.Auto != nil {
		b, _ := json.MarshalIndent(c, "", "  ")
		fmt.Fprintf(w, "configuration: %s\n", b)
	}
}

type repoEnvSetCmd struct {
	Repo        string   `arg:"" help:"Repository name."`
	Env         []string `help:"A plain variable NAME=VALUE (repeatable)." sep:"none" placeholder:"NAME=VALUE"`
	Unset       []string `help:"Remove a plain variable (repeatable)." placeholder:"NAME"`
	Secret      string   `help:"Set the secret NAME to standard input (one final newline removed)." placeholder:"NAME"`
	SecretsFile string   `help:"Set secrets from a file of NAME=VALUE lines (- for standard input)." placeholder:"FILE"`
	UnsetSecret []string `help:"Remove a secret (repeatable)." placeholder:"NAME"`
	Config      string   `help:"Set the environment configuration (setup, key, include, auto) from a JSON or YAML file (- for standard input, as JSON)." placeholder:"FILE"`
	NoConfig    bool     `help:"Remove the environment configuration set here (the file at the base commit, or the defaults, apply again)."`
}

func (c *repoEnvSetCmd) Run(ctx context.Context, x *cli) error {
	if len(c.Env) == 0 && len(c.Unset) == 0 && c.Secret == "" && c.SecretsFile == "" && len(c.UnsetSecret) == 0 && c.Config == "" && !c.NoConfig {
		return usagef("repo env set %s: nothing to change: give --env, --unset, --secret, --secrets-file, --unset-secret, --config or --no-config", c.Repo)
	}
	if c.Config != "" && c.NoConfig {
		return usagef("repo env set %s: --config and --no-config together", c.Repo)
	}
	if c.Config == "-" && (c.Secret != "" || c.SecretsFile == "-") {
		return usagef("repo env set %s: only one of --config, --secret and --secrets-file may read standard input", c.Repo)
	}
	if c.Secret != "" && c.SecretsFile == "-" {
		return usagef("repo env set %s: --secret and --secrets-file - both read standard input", c.Repo)
	}
	cur, err := x.c.RepoEnvironment(ctx, c.Repo)
	if err != nil {
		return err
	}
	req := apitypes.RepoEnvironmentRequest{Env: cur.Env, Secrets: map[string]*string{}}
	if req.Env == nil {
		req.Env = map[string]string{}
	}
	for _, kv := range c.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return usagef("--env %q: want NAME=VALUE", kv)
		}
		req.Env[k] = v
	}
	for _, k := range c.Unset {
		delete(req.Env, k)
	}
	for _, n := range c.UnsetSecret {
		req.Secrets[n] = nil
	}
	if c.SecretsFile != "" {
		var data []byte
		if c.SecretsFile == "-" {
			data, err = io.ReadAll(x.stdin)
		} else {
			data, err = os.ReadFile(c.SecretsFile)
		}
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for line := 1; sc.Scan(); line++ {
			text := strings.TrimSpace(sc.Text())
			if text == "" || strings.HasPrefix(text, "#") {
				continue
			}
			k, v, ok := strings.Cut(text, "=")
			if !ok {
				// The line may be a value: it is not quoted back.
				return usagef("--secrets-file: line %d: want NAME=VALUE", line)
			}
			req.Secrets[strings.TrimSpace(k)] = &v
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("--secrets-file: %w", err)
		}
	}
	if c.Secret != "" {
		data, err := io.ReadAll(x.stdin)
		if err != nil {
			return err
		}
		v := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
		req.Secrets[c.Secret] = &v
	}
	switch {
	case c.NoConfig:
		req.File = &apitypes.EnvironmentFile{Name: "environment.json", Content: "{}"}
	case c.Config != "":
		var data []byte
		name := c.Config
		if c.Config == "-" {
			name = "stdin.json"
			data, err = io.ReadAll(x.stdin)
		} else {
			data, err = os.ReadFile(c.Config)
		}
		if err != nil {
			return err
		}
		req.File = &apitypes.EnvironmentFile{Name: filepath.Base(name), Content: string(data)}
	}
	e, err := x.c.SetRepoEnvironment(ctx, c.Repo, req)
	if err != nil {
		return err
	}
	return x.out(e, func(w io.Writer) { printEnvironment(w, e) })
}

type repoEnvLayersCmd struct {
	Repo string `arg:"" help:"Repository name."`
}

func (c *repoEnvLayersCmd) Run(ctx context.Context, x *cli) error {
	ls, err := x.c.Environments(ctx, c.Repo)
	if err != nil {
		return err
	}
	return x.out(ls, func(w io.Writer) {
		for _, l := range ls.Layers {
			commit := l.Commit
			if len(commit) > 12 {
				commit = commit[:12]
			}
			fmt.Fprintf(w, "%s  %-8s  commit %s  %d files  %d bytes  built in %d ms  last used %s\n",
				l.Key, l.Status, commit, l.Files, l.Bytes, l.BuildMS, l.LastUsed.Format(time.RFC3339))
			if l.Error != "" {
				fmt.Fprintf(w, "  error: %s\n", l.Error)
			}
		}
	})
}

type repoEnvRebuildCmd struct {
	Repo string `arg:"" help:"Repository name."`
}

func (c *repoEnvRebuildCmd) Run(ctx context.Context, x *cli) error {
	r, err := x.c.RebuildEnvironments(ctx, c.Repo)
	if err != nil {
		return err
	}
	return x.out(r, func(w io.Writer) { fmt.Fprintf(w, "dropped %d\n", r.Dropped) })
}
