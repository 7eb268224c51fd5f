package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sessiond/sessiond/api"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/session"
)

// serveConfig is the daemon's configuration: flags, each with an
// environment variable that sets its default.
type serveConfig struct {
	addr            string
	dataDir         string
	databaseURL     string
	repos           repoFlags
	adminToken      string
	maxBodyBytes    int64
	maxFileBytes    int64
	maxEntries      int
	maxOverlayBytes int64
	maxLifetime     time.Duration
	heartbeat       time.Duration
	shutdownTimeout time.Duration
	logLevel        string
	logFormat       string
}

// repoFlags collects --repo NAME=PATH.
type repoFlags []string

func (r *repoFlags) String() string     { return strings.Join(*r, ",") }
func (r *repoFlags) Set(v string) error { *r = append(*r, v); return nil }

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func envInt(name string, def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func serveFlags(fs *flag.FlagSet, c *serveConfig) {
	fs.StringVar(&c.addr, "addr", env("SESSIOND_ADDR", "127.0.0.1:7420"), "listen address `host:port` (port 0 picks one) [SESSIOND_ADDR]")
	fs.StringVar(&c.dataDir, "data-dir", env("SESSIOND_DATA_DIR", "sessiond-data"), "data directory: embedded store, created repositories, token key [SESSIOND_DATA_DIR]")
	fs.StringVar(&c.databaseURL, "database-url", env("SESSIOND_DATABASE_URL", ""), "Postgres URL; empty uses the embedded store in the data directory [SESSIOND_DATABASE_URL]")
	if v := os.Getenv("SESSIOND_REPOS"); v != "" {
		c.repos = strings.Split(v, ",")
	}
	fs.Var(&c.repos, "repo", "register the repository at PATH as NAME (`NAME=PATH`, repeatable) [SESSIOND_REPOS, comma-separated]")
	fs.StringVar(&c.adminToken, "admin-token", env("SESSIOND_ADMIN_TOKEN", ""), "admin bearer token; turns auth on and allows non-loopback addresses [SESSIOND_ADMIN_TOKEN]")
	fs.Int64Var(&c.maxBodyBytes, "max-body-bytes", envInt("SESSIOND_MAX_BODY_BYTES", 128<<20), "request body limit after decompression [SESSIOND_MAX_BODY_BYTES]")
	fs.Int64Var(&c.maxFileBytes, "max-file-bytes", envInt("SESSIOND_MAX_FILE_BYTES", 64<<20), "file size limit [SESSIOND_MAX_FILE_BYTES]")
	maxEntries := envInt("SESSIOND_MAX_OVERLAY_ENTRIES", 100_000)
	fs.IntVar(&c.maxEntries, "max-overlay-entries", int(maxEntries), "overlay entries per session [SESSIOND_MAX_OVERLAY_ENTRIES]")
	fs.Int64Var(&c.maxOverlayBytes, "max-overlay-bytes", envInt("SESSIOND_MAX_OVERLAY_BYTES", 2<<30), "overlay content per session [SESSIOND_MAX_OVERLAY_BYTES]")
	fs.DurationVar(&c.maxLifetime, "max-session-lifetime", envDuration("SESSIOND_MAX_SESSION_LIFETIME", 0), "absolute session lifetime, 0 for none [SESSIOND_MAX_SESSION_LIFETIME]")
	fs.DurationVar(&c.heartbeat, "heartbeat", envDuration("SESSIOND_HEARTBEAT", 15*time.Second), "interval of event-stream heartbeats [SESSIOND_HEARTBEAT]")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", envDuration("SESSIOND_SHUTDOWN_TIMEOUT", 30*time.Second), "how long shutdown waits for in-flight requests [SESSIOND_SHUTDOWN_TIMEOUT]")
	fs.StringVar(&c.logLevel, "log-level", env("SESSIOND_LOG_LEVEL", "info"), "debug, info, warn or error [SESSIOND_LOG_LEVEL]")
	fs.StringVar(&c.logFormat, "log-format", env("SESSIOND_LOG_FORMAT", "text"), "text or json [SESSIOND_LOG_FORMAT]")
}

// serveCmd runs the daemon until SIGINT or SIGTERM. ready, if not nil, is
// called with the base URL once it listens.
func serveCmd(args []string, stdout, stderr io.Writer, ready func(url string)) int {
	fs := flag.NewFlagSet("sessiond serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c serveConfig
	serveFlags(fs, &c)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sessiond serve: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	return serveWith(c, stdout, stderr, ready)
}

func serveWith(c serveConfig, stdout, stderr io.Writer, ready func(url string)) int {
	logger, err := newLogger(stderr, c.logLevel, c.logFormat)
	if err != nil {
		fmt.Fprintln(stderr, "sessiond serve:", err)
		return exitUsage
	}
	if c.adminToken == "" && !loopback(c.addr) {
		fmt.Fprintf(stderr, "sessiond serve: refusing to listen on %s without a token: set --admin-token or listen on a loopback address\n", c.addr)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, c, logger, stdout, ready); err != nil {
		logger.Error("sessiond stopped", "error", err)
		return exitError
	}
	return exitOK
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
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

// openStore opens Postgres for a URL, else the embedded store in dataDir.
func openStore(ctx context.Context, databaseURL, dataDir string) (session.Store, error) {
	if databaseURL != "" {
		return db.OpenPostgres(ctx, databaseURL)
	}
	return db.OpenSQLiteDir(ctx, dataDir)
}

func serve(ctx context.Context, c serveConfig, log *slog.Logger, stdout io.Writer, ready func(string)) error {
	if err := os.MkdirAll(c.dataDir, 0o755); err != nil {
		return err
	}
	secret, err := loadSecret(filepath.Join(c.dataDir, "token.key"))
	if err != nil {
		return err
	}
	store, err := openStore(ctx, c.databaseURL, c.dataDir)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer store.Close()
	// The session graph observes every session; its overlap events go to
	// the store and wake the engine's subscribers.
	var m *session.Manager
	g := graph.New(graph.Config{Events: store, Notify: func() { m.Notify() }, Logger: log})
	m = session.NewManager(session.Config{
		Store: store, DataDir: c.dataDir,
		Limits:    session.Limits{MaxFileBytes: c.maxFileBytes, MaxEntries: c.maxEntries, MaxOverlayBytes: c.maxOverlayBytes, MaxLifetime: c.maxLifetime},
		Observers: []session.Observer{g},
	})
	defer m.Close()
	if err := registerRepos(ctx, m, c.repos, log); err != nil {
		return err
	}

	srvAPI := api.New(api.Config{
		Manager: m, AdminToken: c.adminToken, TokenSecret: secret,
		MaxBodyBytes: c.maxBodyBytes, Heartbeat: c.heartbeat, Logger: log, Summaries: g,
	})
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           srvAPI,
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
	log.Info("listening", "url", url, "data_dir", c.dataDir, "store", storeKind(c.databaseURL), "auth", c.adminToken != "")
	if ready != nil {
		ready(url)
	}

	done := make(chan struct{})
	go func() { // expire idle sessions
		defer close(done)
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if n, err := m.ExpireDue(ctx); err != nil {
					log.Warn("expire sessions", "error", err)
				} else if n > 0 {
					log.Info("expired sessions", "count", n)
				}
			}
		}
	}()

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		<-done
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), c.shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	<-done
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
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
func registerRepos(ctx context.Context, m *session.Manager, specs []string, log *slog.Logger) error {
	for _, spec := range specs {
		name, path, ok := strings.Cut(spec, "=")
		if !ok || name == "" || path == "" {
			return fmt.Errorf("--repo %q: want NAME=PATH", spec)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		if have, err := m.GetRepo(ctx, name); err == nil {
			if filepath.Clean(have.Path) != abs {
				return fmt.Errorf("--repo %s: already registered at another path", name)
			}
			continue
		} else if !errors.Is(err, session.ErrNotFound) {
			return err
		}
		if _, err := m.RegisterRepo(ctx, name, abs); err != nil {
			return fmt.Errorf("--repo %s: %w", name, err)
		}
		log.Info("registered repository", "name", name)
	}
	return nil
}

// loadSecret reads the key of the session tokens, creating it on first
// start: written to a temporary file, fsynced and renamed, so a crash
// leaves the old key or the new one, never half of one.
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
	tmp, err := os.CreateTemp(filepath.Dir(path), ".token.key-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(key); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return key, nil
}
