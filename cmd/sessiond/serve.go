package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/api"
	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/cluster"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/internal/checkruns"
	"github.com/sessiond/sessiond/internal/clustergraph"
	"github.com/sessiond/sessiond/internal/clustersession"
	"github.com/sessiond/sessiond/internal/durable"
	"github.com/sessiond/sessiond/internal/graphsession"
	"github.com/sessiond/sessiond/mcpserver"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/secret"
	"github.com/sessiond/sessiond/session"
	"github.com/sessiond/sessiond/ui"
	"github.com/sessiond/sessiond/workdir"
)

// serveConfig is the daemon's configuration: flags, each with the
// environment variable that sets it when the flag is not given. A value
// that does not parse, from either, stops start-up with a message naming
// the flag or the variable.
type serveConfig struct {
	Addr              string        `help:"Listen address host:port (port 0 picks one)." env:"SESSIOND_ADDR" default:"127.0.0.1:7420" placeholder:"HOST:PORT"`
	DataDir           string        `help:"Data directory: embedded store, created repositories, token key." env:"SESSIOND_DATA_DIR" default:"sessiond-data" placeholder:"DIR"`
	DatabaseURL       string        `help:"Postgres URL; empty uses the embedded store in the data directory." name:"database-url" env:"SESSIOND_DATABASE_URL" placeholder:"URL"`
	Repos             []string      `help:"Register the repository at PATH as NAME, or the one at a git URL (https://, ssh://, git://, file://), which this node clones and pushes accepts to (repeatable; comma-separated in the variable)." name:"repo" env:"SESSIOND_REPOS" placeholder:"NAME=PATH|URL"`
	FetchInterval     time.Duration `help:"How often the origins of repositories registered from a git URL are fetched (0: only when needed)." env:"SESSIOND_FETCH_INTERVAL" default:"1m" placeholder:"DURATION"`
	NodeID            string        `help:"Join the cluster of the nodes on --database-url (PostgreSQL) as this node: letters, digits, '-', '_', '.'." name:"node-id" env:"SESSIOND_NODE_ID" placeholder:"ID"`
	AdvertiseURL      string        `help:"With --node-id: the URL the other nodes reach this one at (http://HOST:PORT)." name:"advertise-url" env:"SESSIOND_ADVERTISE_URL" placeholder:"URL"`
	NodeHeartbeat     time.Duration `help:"With --node-id: how often the node renews its row in the nodes table." env:"SESSIOND_NODE_HEARTBEAT" default:"2s" placeholder:"DURATION"`
	NodeLease         time.Duration `help:"With --node-id: how old a node's heartbeat may be (on the database's clock) before the others hold it dead." env:"SESSIOND_NODE_LEASE" default:"15s" placeholder:"DURATION"`
	Placement         string        `help:"With --node-id: where new sessions go: local (the node the request reached) or balanced (the live node with the fewest running commands)." env:"SESSIOND_PLACEMENT" default:"local" placeholder:"MODE"`
	ObjectSweep       time.Duration `help:"With --node-id: how often the objects the cluster stored for sessions are deleted where no live session or unsettled changeset of their repository needs them (0: never)." env:"SESSIOND_OBJECT_SWEEP" default:"5m" placeholder:"DURATION"`
	AdminToken        string        `help:"Admin bearer token; turns auth on and allows non-loopback addresses." env:"SESSIOND_ADMIN_TOKEN" placeholder:"T"`
	AllowedHosts      []string      `help:"Another name of the daemon that requests may carry in Host (repeatable; comma-separated in the variable): NAME for any port, NAME:PORT for one. The listen address, localhost and loopback addresses need none." name:"allowed-host" env:"SESSIOND_ALLOWED_HOSTS" placeholder:"NAME[:PORT]"`
	CommitURL         string        `help:"Template of a repository's commit view, for the review page's commit links: {repo} and {commit} are replaced (https://forge.example/{repo}/commit/{commit}); empty: commits are not linked." name:"commit-url" env:"SESSIOND_COMMIT_URL" placeholder:"TEMPLATE"`
	LocalUser         string        `help:"Without an admin token, the daemon's one identity, whose reviews count once (default: git's user.name, else the OS user)." env:"SESSIOND_LOCAL_USER" placeholder:"NAME"`
	MaxBodyBytes      byteSize      `help:"Request body limit after decompression (bytes, or a size such as 10MB or 128MiB)." env:"SESSIOND_MAX_BODY_BYTES" default:"128MiB" placeholder:"SIZE"`
	MaxFileBytes      byteSize      `help:"File size limit." env:"SESSIOND_MAX_FILE_BYTES" default:"64MiB" placeholder:"SIZE"`
	MaxEntries        int           `help:"Overlay entries per session." name:"max-overlay-entries" env:"SESSIOND_MAX_OVERLAY_ENTRIES" default:"100000" placeholder:"N"`
	MaxOverlayBytes   byteSize      `help:"Overlay content per session." env:"SESSIOND_MAX_OVERLAY_BYTES" default:"2GiB" placeholder:"SIZE"`
	MaxLifetime       time.Duration `help:"Absolute session lifetime, 0 for none." name:"max-session-lifetime" env:"SESSIOND_MAX_SESSION_LIFETIME" default:"0s" placeholder:"DURATION"`
	IdleUnload        time.Duration `help:"Unload a session from memory after this long unused (it loads again when used), negative for never; finished sessions are unloaded at once." name:"session-idle-unload" env:"SESSIOND_SESSION_IDLE_UNLOAD" default:"10m" placeholder:"DURATION"`
	Heartbeat         time.Duration `help:"Interval of event-stream heartbeats." env:"SESSIOND_HEARTBEAT" default:"15s" placeholder:"DURATION"`
	ShutdownTimeout   time.Duration `help:"How long shutdown waits for in-flight requests." env:"SESSIOND_SHUTDOWN_TIMEOUT" default:"30s" placeholder:"DURATION"`
	WriteTimeout      time.Duration `help:"Deadline of every request that writes (not exec, which has its own): one still waiting for a session's lock or the store then fails with 503 unavailable. Independent of the client: a client that leaves does not cut a write short." env:"SESSIOND_WRITE_TIMEOUT" default:"30s" placeholder:"DURATION"`
	WorkdirMode       workdirMode   `help:"How commands see a session's view: overlay (overlayfs in a user namespace), copy, or auto." env:"SESSIOND_WORKDIR_MODE" default:"auto" placeholder:"MODE"`
	WorkdirCacheBytes byteSize      `help:"Disk for shared base checkouts; least recently used ones beyond it are removed." env:"SESSIOND_WORKDIR_CACHE_BYTES" default:"20GiB" placeholder:"SIZE"`
	WorkdirNoNS       bool          `help:"Run commands without namespaces, as where the kernel refuses them: copy mode, unisolated (answers say isolated false). For tests of that path." name:"workdir-no-namespaces" env:"SESSIOND_WORKDIR_NO_NAMESPACES"`
	ExecMaxTimeout    time.Duration `help:"Longest timeout a command may ask for." env:"SESSIOND_EXEC_MAX_TIMEOUT" default:"1h" placeholder:"DURATION"`
	PreviewDomain     string        `help:"Serve the ports of sessions' services at host names PORT-SHORTID.DOMAIN too (a wildcard DNS name pointing at the daemon), each its own web origin." name:"preview-domain" env:"SESSIOND_PREVIEW_DOMAIN" placeholder:"DOMAIN"`
	execFlags         `embed:""`
	LogLevel          slog.Level `help:"debug, info, warn or error." env:"SESSIOND_LOG_LEVEL" default:"info" placeholder:"LEVEL"`
	LogFormat         logFormat  `help:"text or json." env:"SESSIOND_LOG_FORMAT" default:"text" placeholder:"FORMAT"`
}

// execFlags bound the commands run on sessions and say what of the host
// they reach, for serve and for mcp's in-process engine alike.
type execFlags struct {
	ExecMemory       byteSize `help:"Memory of one command and all it starts." env:"SESSIOND_EXEC_MEMORY" default:"4GiB" placeholder:"SIZE"`
	ExecPids         int64    `help:"Processes and threads of one command at once." env:"SESSIOND_EXEC_PIDS" default:"1024" placeholder:"N"`
	ExecCPUWeight    int64    `help:"CPU weight of a command against others, 1 to 10000 (100 is an even share)." name:"exec-cpu-weight" env:"SESSIOND_EXEC_CPU_WEIGHT" default:"100" placeholder:"N"`
	ExecScratchBytes byteSize `help:"Disk of a session's scratch (ignored outputs and home); past it the command is killed and the scratch keeps only what is recorded." env:"SESSIOND_EXEC_SCRATCH_BYTES" default:"10GiB" placeholder:"SIZE"`
	ExecTmpBytes     byteSize `help:"Size of each private tmpfs of a command (/tmp, /var/tmp, /dev/shm); past it writes fail with ENOSPC." env:"SESSIOND_EXEC_TMP_BYTES" default:"1GiB" placeholder:"SIZE"`
	ExecHostNetwork  bool     `help:"Let commands that ask for it (network: true) share the host's network even without an admin token (any process on the host network can then use the API)." env:"SESSIOND_EXEC_HOST_NETWORK"`
	ExecShow         []string `help:"A host path commands see read-only though it would be hidden (a toolchain in a home directory, say); repeatable, comma-separated in the variable." name:"exec-show" env:"SESSIOND_EXEC_SHOW" placeholder:"PATH"`
	CacheBytes       byteSize `help:"Disk for each repository's shared tool caches (Go, npm, pip, uv, cargo); beyond it the least recently used entries are trimmed between commands (0: no bound)." name:"cache-bytes" env:"SESSIOND_CACHE_BYTES" default:"10GiB" placeholder:"SIZE"`
	EnvironmentBytes byteSize `help:"Disk for the environment layers (installed dependencies shared by sessions); beyond it the least recently used layers no command uses are removed (0: no bound)." name:"environment-bytes" env:"SESSIOND_ENVIRONMENT_BYTES" default:"20GiB" placeholder:"SIZE"`
}

func (f execFlags) validate() error {
	if f.ExecPids <= 0 {
		return fmt.Errorf("--exec-pids (SESSIOND_EXEC_PIDS) %d: want a positive number", f.ExecPids)
	}
	if f.ExecCPUWeight < 1 || f.ExecCPUWeight > 10000 {
		return fmt.Errorf("--exec-cpu-weight (SESSIOND_EXEC_CPU_WEIGHT) %d: want 1 to 10000", f.ExecCPUWeight)
	}
	for name, v := range map[string]byteSize{"--exec-memory (SESSIOND_EXEC_MEMORY)": f.ExecMemory,
		"--exec-scratch-bytes (SESSIOND_EXEC_SCRATCH_BYTES)": f.ExecScratchBytes, "--exec-tmp-bytes (SESSIOND_EXEC_TMP_BYTES)": f.ExecTmpBytes} {
		if v <= 0 {
			return fmt.Errorf("%s %d: want a positive size", name, v)
		}
	}
	for _, p := range f.ExecShow {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("--exec-show (SESSIOND_EXEC_SHOW) %q: want an absolute path", p)
		}
	}
	return nil
}

func (f execFlags) limits() workdir.Limits {
	return workdir.Limits{MemoryBytes: int64(f.ExecMemory), Pids: f.ExecPids, CPUWeight: f.ExecCPUWeight,
		ScratchBytes: int64(f.ExecScratchBytes), TmpBytes: int64(f.ExecTmpBytes)}
}

// serveCmd is `sessiond serve`: it runs the daemon until SIGINT or SIGTERM.
type serveCmd struct {
	serveConfig `embed:""`
}

func (c *serveCmd) Run(x *cli) error {
	if code := serveWith(c.serveConfig, x.stdout, x.stderr, nil); code != exitOK {
		return &exitCodeError{code: code}
	}
	return nil
}

// Validate runs after parsing, so that a bad configuration is a usage
// error before anything starts. Kong names the variable a value came from
// only when the value does not parse; these checks come after, so each
// message names the flag and its variable. A database URL is never
// echoed: it may hold a password.
func (c *serveConfig) Validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("--addr (SESSIOND_ADDR) %q: want HOST:PORT", c.Addr)
	}
	if c.AdminToken == "" && !loopback(c.Addr) {
		return fmt.Errorf("--addr (SESSIOND_ADDR) %s: refusing to listen beyond loopback without a token: set --admin-token (SESSIOND_ADMIN_TOKEN) or listen on a loopback address", c.Addr)
	}
	if c.MaxEntries <= 0 {
		return fmt.Errorf("--max-overlay-entries (SESSIOND_MAX_OVERLAY_ENTRIES) %d: want a positive number", c.MaxEntries)
	}
	if c.WriteTimeout <= 0 {
		return fmt.Errorf("--write-timeout (SESSIOND_WRITE_TIMEOUT) %s: want a positive duration", c.WriteTimeout)
	}
	if err := c.execFlags.validate(); err != nil {
		return err
	}
	for _, spec := range c.Repos {
		if name, path, ok := strings.Cut(spec, "="); !ok || name == "" || path == "" {
			return fmt.Errorf("--repo (SESSIOND_REPOS) %q: want NAME=PATH", spec)
		}
	}
	for _, h := range c.AllowedHosts {
		if err := checkAllowedHost(h); err != nil {
			return fmt.Errorf("--allowed-host (SESSIOND_ALLOWED_HOSTS) %q: %w", h, err)
		}
	}
	if err := ui.CheckCommitURL(c.CommitURL); err != nil {
		return fmt.Errorf("--commit-url (SESSIOND_COMMIT_URL) %q: %w", c.CommitURL, err)
	}
	if c.LocalUser != "" {
		if err := api.CheckIdentityName(c.LocalUser); err != nil {
			return fmt.Errorf("--local-user (SESSIOND_LOCAL_USER): %w", err)
		}
	}
	if c.DatabaseURL != "" {
		if err := db.CheckPostgresURL(c.DatabaseURL); err != nil {
			return fmt.Errorf("--database-url (SESSIOND_DATABASE_URL): %w", err)
		}
	}
	return c.validateNode()
}

// validateNode checks the cluster flags: a node id needs PostgreSQL and
// an advertised URL, and an advertised URL a node id.
func (c *serveConfig) validateNode() error {
	switch {
	case c.NodeID == "" && c.AdvertiseURL != "":
		return errors.New("--advertise-url (SESSIOND_ADVERTISE_URL) is only for a node of a cluster: give --node-id too")
	case c.NodeID == "":
		return nil
	case c.DatabaseURL == "":
		return fmt.Errorf("--node-id (SESSIOND_NODE_ID) %q: a cluster needs PostgreSQL (--database-url); the embedded store is one node's", c.NodeID)
	case c.AdvertiseURL == "":
		return fmt.Errorf("--node-id (SESSIOND_NODE_ID) %q: give --advertise-url (SESSIOND_ADVERTISE_URL), the URL the other nodes reach this one at", c.NodeID)
	case c.NodeHeartbeat <= 0 || c.NodeLease <= c.NodeHeartbeat:
		return fmt.Errorf("--node-heartbeat %s and --node-lease %s: want a positive heartbeat shorter than the lease", c.NodeHeartbeat, c.NodeLease)
	}
	if err := cluster.CheckPlacement(c.Placement); err != nil {
		return fmt.Errorf("--placement (SESSIOND_PLACEMENT): %w", err)
	}
	if err := cluster.CheckConfig(c.NodeID, c.AdvertiseURL); err != nil {
		return fmt.Errorf("--node-id (SESSIOND_NODE_ID), --advertise-url (SESSIOND_ADVERTISE_URL): %w", err)
	}
	return nil
}

// workdirMode is overlay, copy or auto, as workdir.ParseMode reads it.
type workdirMode string

func (m *workdirMode) UnmarshalText(b []byte) error {
	md, err := workdir.ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = workdirMode(md)
	return nil
}

// logFormat is text or json.
type logFormat string

func (f *logFormat) UnmarshalText(b []byte) error {
	switch string(b) {
	case "text", "json":
		*f = logFormat(b)
		return nil
	}
	return fmt.Errorf("log format %q: use text or json", b)
}

// serveWith runs the daemon with c until SIGINT or SIGTERM. ready, if not
// nil, is called with the base URL once it listens.
func serveWith(c serveConfig, stdout, stderr io.Writer, ready func(url string)) int {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	logger := slog.New(slog.NewTextHandler(stderr, opts))
	if c.LogFormat == "json" {
		logger = slog.New(slog.NewJSONHandler(stderr, opts))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, c, logger, stdout, ready); err != nil {
		logger.Error("sessiond stopped", "error", err)
		return exitError
	}
	return exitOK
}

// loopback reports whether addr's host is a loopback address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func serve(ctx context.Context, c serveConfig, log *slog.Logger, stdout io.Writer, ready func(string)) error {
	if err := prepareDataDir(c.DataDir); err != nil {
		return err
	}
	unlock, err := lockDataDir(c.DataDir)
	if err != nil {
		return err
	}
	defer unlock()
	tokenKey, err := loadSecret(filepath.Join(c.DataDir, "token.key"))
	if err != nil {
		return err
	}
	// The repositories' secrets are sealed with a key of their own, kept
	// beside the token key.
	box, err := secret.LoadBox(filepath.Join(c.DataDir, secret.KeyFile))
	if err != nil {
		return err
	}
	store, err := db.Open(ctx, c.DatabaseURL, c.DataDir)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer store.Close()
	// The registry of repositories and the event log, over the store;
	// every part below is handed the ones it uses.
	reg := repos.New(repos.Config{Store: store, DataDir: c.DataDir, Secrets: box})
	defer reg.Close() // last: the graph's workers read repositories until joined
	// In a cluster the streams of every node wake on every node's events.
	var wake events.Waker
	if pg, ok := store.(*db.Postgres); ok && c.NodeID != "" {
		if wake, err = pg.Waker(ctx, log); err != nil {
			return fmt.Errorf("listen for the cluster's events: %w", err)
		}
	}
	evs := events.New(store, wake)
	// The session graph observes every session; its overlap events go to
	// the event log.
	g := graph.New(graph.Config{Events: evs, Logger: log})
	defer g.Close() // after the engine's Close: its workers are joined last
	wd, err := newWorkdirs(c.DataDir, string(c.WorkdirMode), int64(c.WorkdirCacheBytes), c.WorkdirNoNS, c.execFlags, reg, log)
	if err != nil {
		return err
	}
	defer wd.Close()
	if c.AdminToken == "" {
		log.Warn("no admin token: the daemon listens on loopback only, and any local process can use its API")
	}
	// In a cluster the engine's writes of a session are fenced by this
	// node's lease of it (taken on first use, renewed with the heartbeat).
	var (
		sessStore session.Store = store
		owners    *cluster.Owners
		objects   *cluster.Filler // nil: not a cluster
		m         *session.Manager
		runner    *session.Executor
	)
	if pg, ok := store.(*db.Postgres); ok && c.NodeID != "" {
		owners = cluster.NewOwners(cluster.OwnersConfig{Store: pg, Node: c.NodeID, Lease: c.NodeLease, Renew: c.NodeHeartbeat, Logger: log,
			// A lost session's command and services are killed (what they
			// did is not recorded: the fence refuses it), then the session
			// is dropped once its command has let go of it.
			Lost: func(id uuid.UUID) {
				if runner != nil {
					runner.Abandon(id)
				}
				go func() {
					fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					for !m.Forget(fctx, id) && fctx.Err() == nil {
						time.Sleep(100 * time.Millisecond)
					}
				}()
			}})
		sessStore = clustersession.New(store, owners, reg)
		// The objects of sessions' writes are in the store too: a node
		// that takes a session over, or accepts it, brings them from there.
		objects = &cluster.Filler{Store: pg}
	}
	m = session.NewManager(session.Config{
		Store: sessStore, Repos: reg, Events: evs, Workdirs: wd,
		Limits:    session.Limits{MaxFileBytes: int64(c.MaxFileBytes), MaxEntries: c.MaxEntries, MaxOverlayBytes: int64(c.MaxOverlayBytes), MaxLifetime: c.MaxLifetime},
		Observers: []session.Observer{graphsession.Observer(g)}, IdleUnload: c.IdleUnload,
		Objects: filler(objects),
	})
	defer m.Close()
	// Changesets over the same store, acting on sessions through the engine.
	// The nodes of a cluster share each branch's lock through the store.
	var branchLocks changeset.BranchLocker
	if pg, ok := store.(*db.Postgres); ok && c.NodeID != "" {
		branchLocks = pg
	}
	cs := changeset.New(changeset.Config{Store: store.Changesets(), Sessions: m, Repos: reg, Events: evs, Summaries: g, BranchLocks: branchLocks, Objects: filler(objects)})
	// Every command run is kept for the checks of changesets.
	runner = session.NewExecutor(m, session.ExecConfig{MaxTimeout: c.ExecMaxTimeout, Limits: c.limits(), HostNetwork: c.AdminToken != "" || c.ExecHostNetwork,
		Ran: checkruns.Keeper(cs, log)})
	secretsKey, err := os.ReadFile(filepath.Join(c.DataDir, secret.KeyFile))
	if err != nil {
		return err
	}
	keys := []cluster.Key{{Name: "token.key", Key: tokenKey}, {Name: secret.KeyFile, Key: secretsKey}}
	node, err := joinCluster(ctx, c, store, keys, func() cluster.Stats {
		return cluster.Stats{Sessions: m.Loaded(), RunningCommands: runner.Running()}
	}, log)
	if err != nil {
		return err
	}
	var (
		router  *cluster.Router
		drainer api.Drainer
	)
	if node != nil {
		router = cluster.NewRouter(node, owners, store.(*db.Postgres), c.Placement)
		drainer = &clustersession.Drainer{Router: router, Manager: m, Exec: runner}
		defer func() {
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := node.Leave(lctx); err != nil {
				log.Warn("leave the cluster", "node", c.NodeID, "error", err)
			}
		}()
	}
	if err := registerRepos(ctx, reg, c.Repos, log); err != nil {
		return err
	}
	reconcile(ctx, cs, log)
	if n, err := runner.RemoveFinishedScratches(ctx); err != nil {
		log.Warn("remove the scratch of finished sessions", "err", err)
	} else if n > 0 {
		log.Info("removed the scratch of finished sessions", "count", n)
	}

	// MCP over streamable HTTP acts through the API's own handler, with
	// each request's token.
	// In a cluster, an MCP session's id names the node that holds it.
	var srvAPI *api.Server
	mcpOpts := mcpserver.Options{Logger: log}
	if node != nil {
		mcpOpts.NewSessionID = func() string { return cluster.MCPSessionID(c.NodeID) }
	}
	mcpHandler := mcpserver.NewHTTPHandler(func(token string) mcpserver.Backend {
		return client.NewInProcess(srvAPI, token)
	}, mcpOpts)
	localUser := c.LocalUser
	if c.AdminToken == "" && localUser == "" {
		localUser = defaultLocalUser(ctx)
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	srvAPI = api.New(api.Config{
		Manager: m, Repos: reg, Events: evs, Exec: runner, Changesets: cs, AdminToken: c.AdminToken, TokenSecret: tokenKey, LocalUser: localUser,
		AllowedHosts: daemonNames(c.Addr, c.AllowedHosts),
		MaxBodyBytes: int64(c.MaxBodyBytes), Heartbeat: c.Heartbeat, WriteTimeout: c.WriteTimeout, Logger: log, MCP: mcpHandler, Store: store,
		PreviewDomain: c.PreviewDomain, URL: "http://" + ln.Addr().String(), Cluster: node, Router: router, Drainer: drainer,
	})
	srv := &http.Server{
		// The browser rules (Host, Origin) hold for the page and the API;
		// in-process clients (MCP's backend) reach srvAPI directly.
		Handler:           srvAPI.Guard(ui.MountWith(srvAPI, ui.Config{CommitURL: c.CommitURL})),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       5 * time.Minute,
		WriteTimeout:      5 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(srvAPI.Shutdown)

	url := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "sessiond: listening on %s\n", url)
	log.Info("listening", "url", url, "data_dir", c.DataDir, "store", storeKind(c.DatabaseURL), "auth", c.AdminToken != "")
	if c.AdminToken == "" {
		log.Warn("no admin token: any process on this machine, of any user, can use the API as the admin (web pages cannot: Host, Origin and Content-Type are checked); reviews are by the one local identity; set --admin-token to require tokens",
			"local_user", localUser)
	}
	if ready != nil {
		ready(url)
	}

	// stopRun ends the background loops below when the node stops for a
	// reason of its own (its place in the cluster lost).
	ctx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	fctx, fcancel := context.WithCancel(ctx)
	fetched := make(chan struct{})
	go func() { defer close(fetched); fetchOrigins(fctx, reg, c.FetchInterval, log) }()
	defer func() { fcancel(); <-fetched }()
	done := make(chan struct{})
	go func() { // expire idle sessions
		defer close(done)
		every(ctx, 30*time.Second, func() {
			if n, err := m.ExpireDue(ctx); err != nil {
				log.Warn("expire sessions", "error", err)
			} else if n > 0 {
				log.Info("expired sessions", "count", n)
			}
		})
	}()

	if node != nil && c.ObjectSweep > 0 {
		go sweepObjects(ctx, store.(*db.Postgres), c.ObjectSweep, log)
	}

	// The graph learns the other nodes' sessions from the event log, so
	// overlap warnings span nodes.
	if node != nil {
		gctx, gcancel := context.WithCancel(ctx)
		learned := make(chan struct{})
		go func() {
			defer close(learned)
			clustergraph.Run(gctx, clustergraph.Config{Events: evs, Graph: g, Repos: reg, Logger: log,
				API:   client.NewInProcess(srvAPI, c.AdminToken),
				Local: func(id uuid.UUID) bool { _, ok := owners.Epoch(id); return ok }})
		}()
		defer func() { gcancel(); <-learned }()
	}

	// The node's heartbeat; a node whose id another process took (it
	// missed its heartbeats past the lease) stops.
	lost := make(chan error, 1)
	var stopErr error
	if node != nil {
		hctx, hcancel := context.WithCancel(ctx)
		beat := make(chan struct{})
		go func() {
			defer close(beat)
			if err := node.Run(hctx); err != nil {
				lost <- err
			}
		}()
		defer func() { hcancel(); <-beat }()
		leases := make(chan struct{})
		go func() { defer close(leases); owners.Run(hctx) }()
		defer func() {
			hcancel()
			<-leases
			// Hand the sessions over at once (after the requests ended).
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := owners.ReleaseAll(rctx); err != nil {
				log.Warn("release session leases", "error", err)
			}
		}()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		<-done
		return err
	case <-ctx.Done():
	case stopErr = <-lost:
		log.Error("stopping: this node lost its place in the cluster", "node", c.NodeID, "error", stopErr)
		stopRun()
	}
	log.Info("shutting down: finishing in-flight requests")
	// Running commands are killed (their whole process trees); their
	// requests then answer and nothing of them is recorded. Services
	// stop too; the next daemon reports them stopped by its restart.
	runner.StopAllServices()
	wd.Close()
	sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	<-done
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return stopErr
}

// joinCluster joins the cluster as c.NodeID when it is set (nil
// otherwise): a row in the store's nodes table, refused while another
// live process has the id.
func joinCluster(ctx context.Context, c serveConfig, store db.Store, keys []cluster.Key, stats func() cluster.Stats, log *slog.Logger) (*cluster.Cluster, error) {
	if c.NodeID == "" {
		return nil, nil
	}
	pg, ok := store.(*db.Postgres)
	if !ok {
		return nil, fmt.Errorf("--node-id %q: a cluster needs PostgreSQL (--database-url); the embedded store is one node's", c.NodeID)
	}
	node, err := cluster.Join(ctx, cluster.Config{Store: pg, ID: c.NodeID, AdvertiseURL: c.AdvertiseURL, Version: version(),
		Stats: stats, Heartbeat: c.NodeHeartbeat, Lease: c.NodeLease, Logger: log, Keys: keys})
	if err != nil {
		return nil, err
	}
	log.Info("joined the cluster", "node", c.NodeID, "advertise_url", c.AdvertiseURL, "lease", c.NodeLease)
	return node, nil
}

// version is the binary's version as the build recorded it: the module's
// version, else the commit it was built from, else "devel".
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return s.Value[:12]
		}
	}
	return "devel"
}

// daemonNames are the names requests may carry in Host beside those the
// API knows by itself (the address a request arrived at, localhost and
// loopback addresses): the --allowed-host names and the listen address
// when it is a name rather than an address.
func daemonNames(addr string, allowed []string) []string {
	names := slices.Clone(allowed)
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" && net.ParseIP(host) == nil {
		names = append(names, addr)
	}
	return names
}

// checkAllowedHost checks an --allowed-host value: NAME or NAME:PORT,
// with no scheme, path or user.
func checkAllowedHost(h string) error {
	name := h
	if host, port, err := net.SplitHostPort(h); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return fmt.Errorf("port %q: want 1 to 65535", port)
		}
		name = host
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	if name == "" || strings.ContainsAny(name, "/@ \t") || strings.Contains(name, "://") {
		return errors.New("want NAME or NAME:PORT (a host name or address, no scheme or path)")
	}
	return nil
}

// defaultLocalUser is the identity of a daemon without an admin token:
// git's user.name as this process's git sees it, else the OS user.
func defaultLocalUser(ctx context.Context) string {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(gctx, "git", "config", "--get", "user.name").Output(); err == nil {
		if name := strings.TrimSpace(string(out)); api.CheckIdentityName(name) == nil {
			return name
		}
	}
	if u, err := user.Current(); err == nil && api.CheckIdentityName(u.Username) == nil {
		return u.Username
	}
	if name := os.Getenv("USER"); api.CheckIdentityName(name) == nil {
		return name
	}
	return "local user"
}

// reconcile settles the accepts and undos a crash left in flight before
// the daemon serves (changeset.Service.Reconcile). A branch it cannot
// settle now is logged and settled at its next touch.
func reconcile(ctx context.Context, cs *changeset.Service, log *slog.Logger) {
	settled, err := cs.Reconcile(ctx)
	for _, st := range settled {
		for _, a := range st.Accepts {
			log.Warn("recorded an interrupted accept: the branch had moved", "repo", st.Repo, "branch", st.Branch,
				"changeset", a.Changeset.ID, "revision", a.Changeset.Revision, "commit", a.Commit)
		}
		if st.Undo != nil {
			log.Warn("recorded an interrupted undo: the branch had moved", "repo", st.Repo, "branch", st.Branch,
				"commit", st.Undo.Commit, "layers", len(st.Undo.Reverts))
		}
		for _, id := range st.Dropped {
			log.Warn("dropped an interrupted accept or undo: the branch had not moved", "repo", st.Repo, "branch", st.Branch, "changeset", id)
		}
	}
	if err != nil {
		log.Warn("settling interrupted accepts and undos (retried at the next touch of each branch)", "error", err)
	}
}

func storeKind(url string) string {
	if url == "" {
		return "sqlite"
	}
	return "postgres"
}

// registerRepos registers each NAME=PATH not registered yet. A name
// registered before keeps its path (registration is durable); a different
// path for it is an error.
func registerRepos(ctx context.Context, reg *repos.Registry, specs []string, log *slog.Logger) error {
	for _, spec := range specs {
		name, path, ok := strings.Cut(spec, "=")
		if !ok || name == "" || path == "" {
			return fmt.Errorf("--repo %q: want NAME=PATH", spec)
		}
		if gitstore.IsOriginURL(path) {
			if err := registerOrigin(ctx, reg, name, path, log); err != nil {
				return err
			}
			continue
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		if have, err := reg.Get(ctx, name); err == nil {
			if have.Origin != "" || filepath.Clean(have.Path) != abs {
				return fmt.Errorf("--repo %s: already registered at another path", name)
			}
			continue
		} else if !errors.Is(err, record.ErrNotFound) {
			return err
		}
		if _, err := reg.Register(ctx, name, abs); err != nil {
			return fmt.Errorf("--repo %s: %w", name, err)
		}
		log.Info("registered repository", "name", name)
	}
	return nil
}

// registerOrigin registers the repository at the git URL origin as name
// unless it is registered already, from that origin.
func registerOrigin(ctx context.Context, reg *repos.Registry, name, origin string, log *slog.Logger) error {
	if have, err := reg.Get(ctx, name); err == nil {
		if have.Origin != origin {
			return fmt.Errorf("--repo %s: already registered from another origin or path", name)
		}
		return nil
	} else if !errors.Is(err, record.ErrNotFound) {
		return err
	}
	if _, err := reg.RegisterOrigin(ctx, name, origin); err != nil {
		// Another node of the cluster, starting at the same time, may
		// have registered it first: the same origin is no error.
		if have, gerr := reg.Get(ctx, name); errors.Is(err, record.ErrDuplicate) && gerr == nil && have.Origin == origin {
			return nil
		}
		return fmt.Errorf("--repo %s: %w", name, err)
	}
	log.Info("registered repository", "name", name, "origin", gitstore.RedactURL(origin))
	return nil
}

// every calls fn every interval until ctx ends (never, for an interval
// of zero or less).
func every(ctx context.Context, interval time.Duration, fn func()) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// fetchOrigins fetches the origin of every repository that has one, every
// interval, until ctx ends.
func fetchOrigins(ctx context.Context, reg *repos.Registry, interval time.Duration, log *slog.Logger) {
	every(ctx, interval, func() {
		if err := reg.FetchAll(ctx); err != nil && ctx.Err() == nil {
			log.Warn("fetch origins", "error", err)
		}
	})
}

// sweepObjects deletes, every interval until ctx ends, the stored
// objects no live session or unsettled changeset needs.
func sweepObjects(ctx context.Context, p *db.Postgres, interval time.Duration, log *slog.Logger) {
	every(ctx, interval, func() {
		if n, err := p.SweepObjects(ctx); err != nil && ctx.Err() == nil {
			log.Warn("sweep stored objects", "error", err)
		} else if n > 0 {
			log.Info("deleted stored objects no session needs", "count", n)
		}
	})
}

// loadSecret reads the key of the session tokens, creating it on first
// start with a durable write, so a crash leaves the old key or the new
// one, never half of one.
func loadSecret(path string) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil && len(b) >= 32 {
		return b, nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := durable.WriteFile(path, key, 0o600); err != nil {
		return nil, err
	}
	return key, nil
}

// newWorkdirs opens the view directories under the data directory; the
// paths hidden from commands are the data directory and the registered
// repositories, asked of the registry before each command.
func newWorkdirs(dataDir, mode string, cacheBytes int64, noNamespaces bool, ex execFlags, reg *repos.Registry, log *slog.Logger) (*workdir.Manager, error) {
	md, err := workdir.ParseMode(mode)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	wd, err := workdir.New(workdir.Config{
		Dir: filepath.Join(abs, "workdir"), Mode: md, CacheBytes: cacheBytes,
		Hide:         func() []string { return append([]string{abs}, reg.Hidden(context.Background())...) },
		Logf:         func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) },
		NoNamespaces: noNamespaces, Limits: ex.limits(), Show: ex.ExecShow,
		ToolCacheBytes: int64(ex.CacheBytes), EnvironmentBytes: int64(ex.EnvironmentBytes),
	})
	if err != nil {
		return nil, fmt.Errorf("view directories: %w", err)
	}
	// The views' public objects of repositories no longer registered go.
	if rs, err := reg.List(context.Background()); err == nil {
		names := make([]string, len(rs))
		for i, r := range rs {
			names[i] = r.Name
		}
		if err := wd.PruneGitObjects(names); err != nil {
			log.Warn("view directories: public objects of removed repositories", "err", err)
		}
	}
	limits := wd.Cgroups()
	if limits == "" {
		limits = "rlimits (per process)"
	}
	log.Info("view directories", "mode", wd.Mode(), "isolated", wd.Isolated(), "limits", limits)
	return wd, nil
}

// filler is f, or no Filler at all (not a nil pointer in an interface)
// outside a cluster.
func filler(f *cluster.Filler) interface {
	Fill(ctx context.Context, repo string, r *gitstore.Repo, ids []gitstore.OID) error
} {
	if f == nil {
		return nil
	}
	return f
}
