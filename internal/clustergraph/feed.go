package clustergraph

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/client"
	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
)

// Config configures Run.
type Config struct {
	Events *events.Log
	Graph  *graph.Graph
	Repos  *repos.Registry
	// API is an admin client of this node's own API (in process): reads
	// of another node's session are forwarded to its owner.
	API *client.Client
	// Local reports whether this node serves session id (its engine's
	// observer feeds the graph then).
	Local  func(id uuid.UUID) bool
	Logger *slog.Logger
}

// Run follows the repositories' events from now until ctx ends, looking
// for new repositories every 10 s; it returns when its followers did.
func Run(ctx context.Context, cfg Config) {
	var wg sync.WaitGroup
	defer wg.Wait()
	followed := map[string]bool{}
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		rs, err := cfg.Repos.List(ctx)
		if err != nil && ctx.Err() == nil {
			cfg.Logger.Warn("cluster graph: list repositories", "error", err)
		}
		for _, r := range rs {
			if !followed[r.Name] {
				followed[r.Name] = true
				f := &follower{cfg: cfg, repo: r.Name, sessions: map[uuid.UUID]*remote{}}
				wg.Add(1)
				go func() { defer wg.Done(); f.run(ctx) }()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

type follower struct {
	cfg      Config
	repo     string
	sessions map[uuid.UUID]*remote
}

// remote is what the follower knows of another node's session.
type remote struct {
	agent      string
	baseCommit gitstore.OID
	baseTree   gitstore.OID
	tree       gitstore.OID
	git        *gitstore.Repo
}

func (f *follower) run(ctx context.Context) {
	after, err := f.cfg.Events.Latest(ctx)
	if err != nil {
		return
	}
	evs := f.cfg.Events.Subscribe(ctx, events.Filter{Repo: f.repo, After: after,
		Types: []string{session.EventFileWritten, session.EventFileDeleted, session.EventSessionState}})
	for e := range evs {
		if e.Session == uuid.Nil || f.cfg.Local(e.Session) {
			delete(f.sessions, e.Session) // served here: the engine's observer feeds the graph
			continue
		}
		if err := f.apply(ctx, e); err != nil && ctx.Err() == nil {
			f.cfg.Logger.Warn("cluster graph: learn another node's change", "session", e.Session, "type", e.Type, "error", err)
			delete(f.sessions, e.Session) // met again at its next change
		}
	}
}

func (f *follower) apply(ctx context.Context, e events.Event) error {
	var p struct {
		Path  string `json:"path"`
		Seq   int64  `json:"seq"`
		State string `json:"state"`
	}
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		return err
	}
	if e.Type == session.EventSessionState {
		if session.State(p.State).Terminal() {
			delete(f.sessions, e.Session)
			f.cfg.Graph.Closed(ctx, f.repo, e.Session)
		}
		return nil
	}
	st := f.sessions[e.Session]
	if st == nil {
		return f.meet(ctx, e.Session, p.Seq)
	}
	ch, old, err := f.change(ctx, st, e.Session, p.Path)
	if err != nil {
		return err
	}
	tree, err := st.git.BuildTree(ctx, st.tree, []gitstore.Change{ch})
	if err != nil {
		return err
	}
	st.tree = tree
	f.cfg.Graph.Mutated(ctx, graph.Mutation{Session: e.Session, Repo: f.repo, AgentID: st.agent, BaseCommit: st.baseCommit,
		Seq: p.Seq, Git: st.git, BaseTree: st.baseTree, Tree: tree,
		Changes: []graph.FileChange{{Path: p.Path, Old: old, New: ch.OID}}})
	return nil
}

// meet reads a session first met whole: its base, and each file it
// changed.
func (f *follower) meet(ctx context.Context, id uuid.UUID, seq int64) error {
	s, err := f.cfg.API.GetSession(ctx, id.String())
	if err != nil {
		return err
	}
	if session.State(s.State).Terminal() {
		return nil
	}
	git, err := f.cfg.Repos.Open(ctx, f.repo)
	if err != nil {
		return err
	}
	base, err := gitstore.ParseOID(s.BaseCommit)
	if err != nil {
		return err
	}
	baseTree, err := git.TreeOf(ctx, base)
	if err != nil { // a base this clone has not fetched yet
		if ferr := f.cfg.Repos.Fetch(ctx, f.repo); ferr != nil {
			return errors.Join(err, ferr)
		}
		if baseTree, err = git.TreeOf(ctx, base); err != nil {
			return err
		}
	}
	st := &remote{agent: s.AgentID, baseCommit: base, baseTree: baseTree, tree: baseTree, git: git}
	files, err := f.cfg.API.Tree(ctx, id.String(), client.TreeOptions{Recursive: true, OnlyModified: true})
	if err != nil {
		return err
	}
	var chs []gitstore.Change
	for _, fi := range files {
		if fi.Type == "dir" {
			continue
		}
		ch, _, err := f.change(ctx, st, id, fi.Path)
		if err != nil {
			return err
		}
		chs = append(chs, ch)
	}
	if st.tree, err = git.BuildTree(ctx, baseTree, chs); err != nil {
		return err
	}
	f.sessions[id] = st
	f.cfg.Graph.Mutated(ctx, graph.Mutation{Session: id, Repo: f.repo, AgentID: st.agent, BaseCommit: base,
		Seq: seq, Git: git, BaseTree: baseTree, Tree: st.tree})
	return nil
}

// change reads path's version in session id now (through the owner),
// stores its blob here, and returns the change and the blob path had in
// st's tree.
func (f *follower) change(ctx context.Context, st *remote, id uuid.UUID, path string) (gitstore.Change, gitstore.OID, error) {
	var old gitstore.OID
	if ent, err := st.git.Lookup(ctx, st.tree, path); err == nil && ent.Mode.IsBlob() {
		old = ent.OID
	}
	data, meta, err := f.cfg.API.ReadFile(ctx, id.String(), path)
	var ae *client.Error
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return gitstore.Change{Path: path, Delete: true}, old, nil
	}
	if err != nil {
		return gitstore.Change{}, old, err
	}
	oid, err := st.git.WriteBlob(ctx, data)
	if err != nil {
		return gitstore.Change{}, old, err
	}
	mode, err := gitstore.ParseMode(meta.Mode)
	if err != nil {
		mode, _ = gitstore.ParseMode("100644")
	}
	return gitstore.Change{Path: path, Mode: mode, OID: oid}, old, nil
}
