package changeset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
)

// Event types of changesets; repository events with the session that made
// the changeset.
const (
	EventSubmitted = "changeset.submitted"
	EventUpdated   = "changeset.updated"
	EventReviewed  = "changeset.reviewed"
	EventAccepted  = "changeset.accepted"
	EventUndone    = "changeset.undone"
)

// Trailers written on the commits put on branches.
const (
	trailerSession   = "Sessiond-Session"
	trailerChangeset = "Sessiond-Changeset"
	trailerAgent     = "Sessiond-Agent"
	trailerRevision  = "Sessiond-Revision"
	trailerUndo      = "Sessiond-Undo"
)

// Config configures a Service.
type Config struct {
	Store    Store
	Sessions Sessions
	// Repos opens the repositories and holds their accept policies.
	Repos *repos.Registry
	// Events wakes the event streams after a changeset's events commit.
	Events *events.Log
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Summaries gives a view the symbols its changeset adds, modifies and
	// removes (the session graph); nil: views carry no symbols.
	Summaries Summarizer
	// BranchLocks serializes accepts and undos on one branch across the
	// processes sharing the store (the nodes of a cluster), beside this
	// process's own lock; nil: this process's lock only (a store served
	// by one daemon).
	BranchLocks BranchLocker
	// Objects brings a changeset's commits into this node's repository
	// when another node wrote them (a cluster's store of sessions'
	// objects); nil: they are in this node's repository.
	Objects Filler
}

// Filler makes objects ids, and everything they reach, present in r, the
// repository named repo.
type Filler interface {
	Fill(ctx context.Context, repo string, r *gitstore.Repo, ids []gitstore.OID) error
}

// BranchLocker is a lock of a branch shared by the processes that share a
// store: held, no other process's accept or undo of that branch runs, and
// what one left in flight is its own until it releases (or dies).
type BranchLocker interface {
	LockBranch(ctx context.Context, repo, branch string) (release func(), err error)
}

// Summarizer is the session graph as a view uses it: the files that
// differ between two trees, with their changed symbols.
type Summarizer interface {
	Summary(ctx context.Context, repo *gitstore.Repo, base, tree gitstore.OID) (graph.Summary, error)
}

// Service runs the changesets of every repository: submit, reviews,
// accept, layers and undo. It is safe for concurrent use.
type Service struct {
	store     Store
	sessions  Sessions
	repos     *repos.Registry
	events    *events.Log
	now       func() time.Time
	summaries Summarizer   // nil: no symbols in views
	shared    BranchLocker // nil: this process's branch locks only
	objects   Filler       // nil: not a cluster's

	mu       sync.Mutex // guards branches
	branches map[string]*branchLock

	merges mergeCache // Mergeability's answers
}

// New returns a Service over cfg.Store and cfg.Sessions.
func New(cfg Config) *Service {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Service{store: cfg.Store, sessions: cfg.Sessions, repos: cfg.Repos, events: cfg.Events, summaries: cfg.Summaries, shared: cfg.BranchLocks, objects: cfg.Objects,
		now: func() time.Time { return now().UTC().Truncate(time.Microsecond) }}
}

// openChangeset opens c's repository with c's commits in it: in a
// cluster, brought from the store when another node wrote them (one it
// cannot bring is left for the read to report).
func (s *Service) openChangeset(ctx context.Context, c Changeset) (*gitstore.Repo, error) {
	r, err := s.repos.Open(ctx, c.Repo)
	if err != nil {
		return nil, err
	}
	if err := s.fill(ctx, c, r); err != nil && !errors.Is(err, gitstore.ErrMissingObject) {
		return nil, fmt.Errorf("changeset %s: %w", c.ID, err)
	}
	return r, nil
}

// fill brings c's commits into r (see Config.Objects).
func (s *Service) fill(ctx context.Context, c Changeset, r *gitstore.Repo) error {
	if s.objects == nil {
		return nil
	}
	return s.objects.Fill(ctx, c.Repo, r, []gitstore.OID{c.HeadCommit, c.BaseCommit})
}

// branchLock serializes this process's accepts and undos on one branch.
type branchLock struct {
	mu   sync.Mutex
	refs int // holders and waiters; guarded by Service.mu
}

// lockBranch takes the lock of repo's branch and returns its release:
// this process's, then the one shared with the other processes of the
// store (Config.BranchLocks), whose error (ctx ended, the store
// unreachable) releases the first.
func (s *Service) lockBranch(ctx context.Context, repo, branch string) (func(), error) {
	key := repo + "\x00" + branch
	s.mu.Lock()
	if s.branches == nil {
		s.branches = map[string]*branchLock{}
	}
	l := s.branches[key]
	if l == nil {
		l = &branchLock{}
		s.branches[key] = l
	}
	l.refs++
	s.mu.Unlock()
	l.mu.Lock()
	local := func() {
		l.mu.Unlock()
		s.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(s.branches, key)
		}
		s.mu.Unlock()
	}
	if s.shared == nil {
		return local, nil
	}
	shared, err := s.shared.LockBranch(ctx, repo, branch)
	if err != nil {
		local()
		return nil, err
	}
	return func() { shared(); local() }, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func event(typ string, c Changeset, extra map[string]any, at time.Time) events.Event {
	p := map[string]any{"changeset": c.ID, "session": c.Session, "status": c.Status, "target_branch": c.TargetBranch}
	maps.Copy(p, extra)
	return events.Event{Repo: c.Repo, Session: c.Session, Type: typ, Payload: events.Payload(p), At: at}
}

// Layers returns the accepted changesets of a branch, newest first: the
// repository's HEAD branch when branch is empty.
func (s *Service) Layers(ctx context.Context, repo, branch string) ([]Layer, error) {
	r, err := s.repos.Open(ctx, repo)
	if err != nil {
		return nil, err
	}
	if branch == "" {
		if branch, _ = r.HeadBranch(); branch == "" {
			return nil, fmt.Errorf("%w: say which branch", record.ErrInvalid)
		}
	}
	return s.store.ListLayers(ctx, repo, strings.TrimPrefix(branch, "refs/heads/"))
}

// sanitizeIdent makes s safe inside a commit's author or committer line.
func sanitizeIdent(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r == '\n' || r == 0 {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
}

// actorSignature is the committer of accepts and undos.
func actorSignature(actor string, now time.Time) gitstore.Signature {
	name := sanitizeIdent(actor)
	if name == "" {
		name = "sessiond"
	}
	email := strings.ReplaceAll(name, " ", ".")
	return gitstore.Signature{Name: name, Email: email + "@sessiond", When: now}
}

// hasTrailer reports whether a commit message carries trailer key: value.
func hasTrailer(msg, key, value string) bool {
	return strings.Contains(msg, "\n"+key+": "+value+"\n") || strings.HasSuffix(msg, "\n"+key+": "+value)
}

// historyLimit bounds the first-parent walks down a branch.
const historyLimit = 1000

// findCommit walks the first-parent history of head back to stop (not
// included), at most historyLimit commits, for the first commit match
// accepts.
func findCommit(ctx context.Context, r *gitstore.Repo, head, stop gitstore.OID, match func(*gitstore.Commit) (bool, error)) (*gitstore.Commit, error) {
	id := head
	for i := 0; i < historyLimit && !id.IsZero() && id != stop; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := r.Commit(ctx, id)
		if err != nil {
			return nil, err
		}
		ok, err := match(c)
		if err != nil {
			return nil, err
		}
		if ok {
			return c, nil
		}
		if len(c.Parents) == 0 {
			break
		}
		id = c.Parents[0]
	}
	return nil, nil
}
