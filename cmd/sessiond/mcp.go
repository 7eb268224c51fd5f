package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiond/sessiond/api"
	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/internal/graphsession"
	"github.com/sessiond/sessiond/mcpserver"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
)

// mcpCmd is `sessiond mcp`: the MCP server on standard input and output,
// bound to one session (--session, or a new one on --repo). It is a client
// of the daemon at --server; with no daemon answering there and --repo a
// directory, it runs the engine itself on the embedded store. Standard
// output carries nothing but the protocol; logs go to standard error.
type mcpCmd struct {
	Repo     string        `help:"Start a session on this repository: a name the daemon knows or a path; with no daemon answering, the path of a git repository to run the engine on in this process." placeholder:"R"`
	Base     string        `help:"The new session's base revision (default the repository's HEAD)." placeholder:"REV"`
	Intent   string        `help:"What the agent is going to do, recorded on the new session." placeholder:"TEXT"`
	Agent    string        `help:"The agent's name, recorded on the new session." env:"SESSIOND_AGENT" default:"mcp" placeholder:"NAME"`
	DataDir  string        `help:"Data directory of the in-process engine (default: sessiond/ in the repository's git directory)." env:"SESSIOND_MCP_DATA_DIR" placeholder:"DIR"`
	Probe    time.Duration `help:"How long to wait for the daemon to answer before running the engine in-process." default:"1s" placeholder:"DURATION"`
	LogLevel slog.Level    `help:"debug, info, warn or error (logs go to standard error)." env:"SESSIOND_LOG_LEVEL" default:"warn" placeholder:"LEVEL"`
	// The in-process engine's view directories, as serve's.
	WorkdirMode       workdirMode `help:"In-process: how commands (the run tool) see the session's view: overlay, copy or auto." env:"SESSIOND_WORKDIR_MODE" default:"auto" placeholder:"MODE"`
	WorkdirCacheBytes byteSize    `help:"In-process: disk for shared base checkouts." env:"SESSIOND_WORKDIR_CACHE_BYTES" default:"20GiB" placeholder:"SIZE"`
	execFlags         `embed:"" group:"In-process commands"`
}

func (c *mcpCmd) Run(ctx context.Context, x *cli) error {
	if x.session == "" && c.Repo == "" {
		return usagef("mcp: give --session ID to work in a session, or --repo R to start one")
	}
	log := slog.New(slog.NewTextHandler(x.stderr, &slog.HandlerOptions{Level: c.LogLevel}))
	pctx, cancel := context.WithTimeout(ctx, c.Probe)
	err := x.c.Healthz(pctx)
	cancel()
	if err == nil {
		return c.viaDaemon(ctx, x, log)
	}
	if fi, serr := os.Stat(c.Repo); c.Repo != "" && serr == nil && fi.IsDir() {
		log.Info("no daemon answers; running the engine in this process", "server", x.server, "error", err)
		return c.inProcess(ctx, x, log)
	}
	return fmt.Errorf("mcp: no daemon answers at %s (%v); start one with sessiond serve, or give --repo PATH to run the engine in this process", x.server, err)
}

// viaDaemon serves a session of the daemon at --server.
func (c *mcpCmd) viaDaemon(ctx context.Context, x *cli, log *slog.Logger) error {
	b := x.c
	id := x.session
	if id == "" {
		repo, err := c.daemonRepo(ctx, x.c, x.server)
		if err != nil {
			return err
		}
		s, err := x.c.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: repo, Base: c.Base, Intent: c.Intent, AgentID: c.Agent, AgentName: c.Agent})
		if err != nil {
			return fmt.Errorf("mcp: start a session on %s: %w", repo, err)
		}
		id = s.ID
		if s.Token != "" {
			b = x.c.WithToken(s.Token) // the narrowest token that does the job
		}
		fmt.Fprintf(x.stderr, "sessiond mcp: started session %s on %s (daemon %s)\n", id, repo, x.server)
	} else if _, err := x.c.GetSession(ctx, id); err != nil {
		return fmt.Errorf("mcp: session %s: %w", id, err)
	}
	return serveStdio(ctx, x, b, id, log)
}

// daemonRepo finds --repo among the daemon's repositories, by name or by
// path.
func (c *mcpCmd) daemonRepo(ctx context.Context, cl *client.Client, server string) (string, error) {
	repos, err := cl.ListRepos(ctx)
	if err != nil {
		// A session token cannot list repositories; take the name as given.
		if client.Code(err) == "forbidden" {
			return c.Repo, nil
		}
		return "", fmt.Errorf("mcp: list repositories: %w", err)
	}
	abs, _ := filepath.Abs(c.Repo)
	for _, r := range repos {
		if r.Name == c.Repo {
			return r.Name, nil
		}
	}
	for _, r := range repos {
		if filepath.Clean(r.Path) == abs || filepath.Clean(r.Path) == filepath.Join(abs, ".git") {
			return r.Name, nil
		}
	}
	return "", fmt.Errorf("mcp: the daemon at %s has no repository named or at %s; register it with sessiond repo add NAME PATH", server, c.Repo)
}

// inProcess runs the engine on the embedded store in the data directory
// and serves a session of it.
func (c *mcpCmd) inProcess(ctx context.Context, x *cli, log *slog.Logger) error {
	repoPath, err := filepath.Abs(c.Repo)
	if err != nil {
		return err
	}
	dataDir := c.DataDir
	if dataDir == "" {
		if dataDir, err = defaultDataDir(repoPath); err != nil {
			return err
		}
	}
	if err := prepareDataDir(dataDir); err != nil {
		return err
	}
	unlock, err := lockDataDir(dataDir)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	defer unlock()
	store, err := db.OpenSQLiteDir(ctx, dataDir)
	if err != nil {
		return fmt.Errorf("mcp: open store: %w", err)
	}
	defer store.Close()
	reg := repos.New(repos.Config{Store: store, DataDir: dataDir})
	defer reg.Close()
	evs := events.New(store, nil)
	g := graph.New(graph.Config{Events: evs, Logger: log})
	defer g.Close()
	if err := c.execFlags.validate(); err != nil {
		return usagef("mcp: %v", err)
	}
	wd, err := newWorkdirs(dataDir, string(c.WorkdirMode), int64(c.WorkdirCacheBytes), false, c.execFlags, reg, log)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	defer wd.Close()
	m := session.NewManager(session.Config{Store: store, Repos: reg, Events: evs, Workdirs: wd, Observers: []session.Observer{graphsession.Observer(g)}})
	defer m.Close()
	// The in-process engine has no API on the network, so a command on the
	// host's network can reach nothing of it.
	runner := session.NewExecutor(m, session.ExecConfig{Limits: c.limits(), HostNetwork: true})
	// Changesets over the same store, acting on sessions through the engine.
	cs := changeset.New(changeset.Config{Store: store.Changesets(), Sessions: m, Repos: reg, Events: evs, Summaries: g})
	name := repoName(repoPath)
	if err := registerRepos(ctx, reg, []string{name + "=" + repoPath}, log); err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	reconcile(ctx, cs, log)
	// No token: the engine is this process's own, reached through the
	// API's handler for its rules and errors, with no network.
	b := client.NewInProcess(api.New(api.Config{Manager: m, Repos: reg, Events: evs, Exec: runner, Changesets: cs, Logger: log, LocalUser: defaultLocalUser(ctx), Store: store}), "")
	id := x.session
	if id == "" {
		s, err := b.CreateSession(ctx, apitypes.CreateSessionRequest{Repo: name, Base: c.Base, Intent: c.Intent, AgentID: c.Agent, AgentName: c.Agent})
		if err != nil {
			return fmt.Errorf("mcp: start a session on %s: %w", repoPath, err)
		}
		id = s.ID
		fmt.Fprintf(x.stderr, "sessiond mcp: started session %s on %s (engine in this process, data in %s)\n", id, repoPath, dataDir)
	} else if _, err := b.GetSession(ctx, id); err != nil {
		return fmt.Errorf("mcp: session %s: %w", id, err)
	}
	return serveStdio(ctx, x, b, id, log)
}

// defaultDataDir keeps an in-process engine's data with its repository:
// sessiond/ inside the git directory (.git/sessiond, or DIR/sessiond for
// a bare repository), which git ignores.
func defaultDataDir(repo string) (string, error) {
	if fi, err := os.Stat(filepath.Join(repo, ".git")); err == nil && fi.IsDir() {
		return filepath.Join(repo, ".git", "sessiond"), nil
	}
	if _, err := os.Stat(filepath.Join(repo, "HEAD")); err == nil {
		if fi, err := os.Stat(filepath.Join(repo, "objects")); err == nil && fi.IsDir() {
			return filepath.Join(repo, "sessiond"), nil
		}
	}
	return "", fmt.Errorf("mcp: %s is not a git repository with a .git directory (or a bare one); give --data-dir", repo)
}

var repoNameBad = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// repoName names a repository after its directory.
func repoName(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), ".git")
	if n := strings.Trim(repoNameBad.ReplaceAllString(base, "-"), "-."); n != "" {
		return n
	}
	return "repo"
}

// serveStdio speaks MCP on the command's standard input and output until
// the client closes them or the process is interrupted.
func serveStdio(ctx context.Context, x *cli, b mcpserver.Backend, id string, log *slog.Logger) error {
	srv := mcpserver.New(b, mcpserver.Options{Session: id, Logger: log})
	t := &mcp.IOTransport{Reader: io.NopCloser(x.stdin), Writer: nopWriteCloser{x.stdout}, MaxLineLength: -1}
	err := srv.Run(ctx, t)
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "server is closing") {
		return nil
	}
	return fmt.Errorf("mcp: %w", err)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
