// Package testengine wires the engines over one store as the daemon does
// (cmd/sessiond), for the tests of the packages that drive them: the
// registry of repositories, the event log, the session engine and the
// changeset service, each handed what it uses.
package testengine

import (
	"path/filepath"
	"time"

	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/internal/checkruns"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/secret"
	"github.com/sessiond/sessiond/session"
)

// Engine is one daemon's parts over one store.
type Engine struct {
	Store    db.Store
	Repos    *repos.Registry
	Events   *events.Log
	Sessions *session.Manager
	// Exec runs commands, where cfg had view directories; else nil.
	Exec       *session.Executor
	Changesets *changeset.Service

	now func() time.Time // the clock the parts were given
}

// New wires the parts over st, with repositories created under dataDir.
// cfg configures the session engine; its Store and Repos are set here,
// and its Events unless given (an observer built first may need the log).
// exec bounds commands, when cfg has view directories.
func New(st db.Store, dataDir string, cfg session.Config, exec ...session.ExecConfig) *Engine {
	e := &Engine{Store: st, Events: cfg.Events}
	// Secrets are sealed with a key in the data directory, as the daemon's.
	var box *secret.Box
	if dataDir != "" {
		b, err := secret.LoadBox(filepath.Join(dataDir, secret.KeyFile))
		if err != nil {
			panic(err)
		}
		box = b
	}
	e.Repos = repos.New(repos.Config{Store: st, DataDir: dataDir, Now: cfg.Now, Secrets: box})
	if e.Events == nil {
		e.Events = events.New(st, nil)
	}
	cfg.Store, cfg.Repos, cfg.Events = st, e.Repos, e.Events
	e.Sessions = session.NewManager(cfg)
	e.now = cfg.Now
	e.Changesets = changeset.New(changeset.Config{Store: st.Changesets(), Sessions: e.Sessions, Repos: e.Repos, Events: e.Events, Now: cfg.Now})
	if cfg.Workdirs != nil {
		var xc session.ExecConfig
		if len(exec) > 0 {
			xc = exec[0]
		}
		if xc.Ran == nil {
			xc.Ran = checkruns.Keeper(e.Changesets, nil)
		}
		e.Exec = session.NewExecutor(e.Sessions, xc)
	}
	return e
}

// WithSummaries gives the changeset service's views the symbol summaries
// of s (the session graph), as the daemon wires it, and returns e.
func (e *Engine) WithSummaries(s changeset.Summarizer) *Engine {
	e.Changesets = changeset.New(changeset.Config{Store: e.Store.Changesets(), Sessions: e.Sessions, Repos: e.Repos, Events: e.Events, Now: e.now, Summaries: s})
	return e
}

// Close stops the session engine and releases the repositories (the
// store is the caller's).
func (e *Engine) Close() error {
	err := e.Sessions.Close()
	if rerr := e.Repos.Close(); err == nil {
		err = rerr
	}
	return err
}
