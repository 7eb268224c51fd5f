package api

import (
	"context"
	"errors"
	"sort"
	"sync"

	"github.com/sessiond/sessiond/record"
)

// StoreSpace is the store as /readyz probes it after a write found it full
// (db.Store implements it): CheckSpace writes a little and reports a
// *record.NoSpaceError while the store has no room.
type StoreSpace interface {
	CheckSpace(ctx context.Context) error
}

// spaceKey is one thing a write can find full: the store, or a
// repository's objects or refs.
type spaceKey struct{ what, repo string }

// space remembers what writes found full (a *record.NoSpaceError answered
// as 507), for /readyz: each stays reported until a probe of it finds room
// again, so the daemon is ready again once space is freed, whether or not
// anything wrote in between.
type space struct {
	mu   sync.Mutex // guards full
	full map[spaceKey]bool
}

// note remembers what err found full, if it is the lack of space.
func (sp *space) note(err error) {
	var ns *record.NoSpaceError
	if !errors.As(err, &ns) {
		return
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.full == nil {
		sp.full = map[spaceKey]bool{}
	}
	sp.full[spaceKey{ns.What, ns.Repo}] = true
}

// noted lists what is remembered full, in a stable order.
func (sp *space) noted() []spaceKey {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	out := make([]spaceKey, 0, len(sp.full))
	for k := range sp.full {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].repo != out[j].repo {
			return out[i].repo < out[j].repo
		}
		return out[i].what < out[j].what
	})
	return out
}

// forget drops k once a probe found room.
func (sp *space) forget(k spaceKey) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	delete(sp.full, k)
}

// checkSpace probes each thing remembered full and reports, in h's
// checks, those still full: "store": "full", "repo:<name>": "objects
// full" (or "refs full"). It reports whether everything has room.
func (s *Server) checkSpace(ctx context.Context, checks map[string]string) bool {
	ok := true
	for _, k := range s.space.noted() {
		var err error
		switch {
		case k.what == record.SpaceStore && s.storeSpace != nil:
			err = s.storeSpace.CheckSpace(ctx)
		case k.what == record.SpaceStore:
			err = nil // nothing to probe: the next write tells
		default:
			r, oerr := s.repos.Open(ctx, k.repo)
			if oerr != nil {
				err = oerr
			} else {
				err = r.CheckSpace()
			}
		}
		if err == nil {
			s.space.forget(k)
			continue
		}
		if !errors.Is(err, record.ErrNoSpace) {
			s.log.Warn("readyz: space probe", "what", k.what, "repo", k.repo, "error", err)
		}
		ok = false
		if k.what == record.SpaceStore {
			checks["store"] = "full"
		} else {
			checks["repo:"+k.repo] = k.what + " full"
		}
	}
	return ok
}
