package changeset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/events"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/graph"
	"github.com/sessiond/sessiond/merge"
	"github.com/sessiond/sessiond/record"
)

// View is a changeset as a reviewer sees it: with the stats of its diff,
// its reviews, oldest first, and its symbol summary.
type View struct {
	Changeset
	Stats   merge.Stats
	Reviews []Review
	// Symbols are the changed files the Service's Summarizer parses (a
	// language it knows), each with the symbols it adds, modifies and
	// removes, in path order; nil without a Summarizer.
	Symbols []graph.FileSummary
}

// Get returns a changeset.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (Changeset, error) {
	return s.store.GetChangeset(ctx, id) // the store's error names the changeset
}

// View returns a changeset with its stats, reviews and symbols. The stats were
// kept when the revision was submitted, so a view renders no patch
// (changesets stored before the stats were kept compute them).
func (s *Service) View(ctx context.Context, id uuid.UUID) (View, error) {
	c, err := s.Get(ctx, id)
	if err != nil {
		return View{}, err
	}
	return s.view(ctx, c)
}

func (s *Service) view(ctx context.Context, c Changeset) (View, error) {
	v := View{Changeset: c}
	if c.Stats != nil {
		v.Stats = *c.Stats
	} else {
		r, err := s.openChangeset(ctx, c)
		if err != nil {
			return View{}, err
		}
		st, err := stats(ctx, r, c.BaseCommit, c.HeadCommit)
		if err != nil {
			return View{}, fmt.Errorf("changeset %s: %w", c.ID, err)
		}
		v.Stats = *st
	}
	reviews, err := s.store.ListReviews(ctx, c.ID)
	if err != nil {
		return View{}, err
	}
	v.Reviews = reviews
	if v.Symbols, err = s.symbols(ctx, c); err != nil {
		return View{}, fmt.Errorf("changeset %s: symbols: %w", c.ID, err)
	}
	return v, nil
}

// symbols is the changeset's symbol summary: the files of its diff the
// Summarizer parses, with what changed in them.
func (s *Service) symbols(ctx context.Context, c Changeset) ([]graph.FileSummary, error) {
	if s.summaries == nil {
		return nil, nil
	}
	repo, err := s.openChangeset(ctx, c)
	if err != nil {
		return nil, err
	}
	sum, err := s.summaries.Summary(ctx, repo, c.BaseCommit, c.HeadCommit)
	if err != nil {
		return nil, err
	}
	out := []graph.FileSummary{}
	for _, f := range sum.Files {
		if f.Lang != "" {
			out = append(out, f)
		}
	}
	return out, nil
}

// List returns the changesets matching f, oldest first.
func (s *Service) List(ctx context.Context, f Filter) ([]Changeset, error) {
	return s.store.ListChangesets(ctx, f)
}

// Listing is a changeset in a list, with how many approvals the reviews
// of its current revision give it.
type Listing struct {
	Changeset
	Approvals int
	// Checks sums up the checks of its current revision (Checks.State).
	Checks CheckState
}

// Listings is List with each changeset's approvals; a repository in f
// that is not registered is ErrInvalid.
func (s *Service) Listings(ctx context.Context, f Filter) ([]Listing, error) {
	if f.Repo != "" {
		if _, err := s.repos.Open(ctx, f.Repo); errors.Is(err, record.ErrNotFound) {
			return nil, record.UnknownRepoFilter(f.Repo)
		} else if err != nil {
			return nil, err
		}
	}
	cs, err := s.store.ListChangesets(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]Listing, len(cs))
	required := map[string][][]string{}
	for i, c := range cs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		reviews, err := s.store.ListReviews(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		req, ok := required[c.Repo]
		if !ok {
			pol, err := s.repos.Policy(ctx, c.Repo)
			if err != nil {
				return nil, err
			}
			req, required[c.Repo] = pol.RequiredChecks, pol.RequiredChecks
		}
		checks, err := s.checks(ctx, c, req)
		if err != nil {
			return nil, err
		}
		out[i] = Listing{Changeset: c, Approvals: Approvals(votes(reviews, c.Revision)), Checks: checks.State()}
	}
	return out, nil
}

// Revisions returns a changeset's revisions, oldest first, from its
// submitted and updated events (the current one from the changeset
// itself, so it is there even when its event is not).
func (s *Service) Revisions(ctx context.Context, id uuid.UUID) ([]Revision, error) {
	c, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.revisions(ctx, c)
}

func (s *Service) revisions(ctx context.Context, c Changeset) ([]Revision, error) {
	evs, err := s.store.ListEvents(ctx, events.Filter{Repo: c.Repo, Session: c.Session})
	if err != nil {
		return nil, fmt.Errorf("changeset %s revisions: %w", c.ID, err)
	}
	byN := map[int]Revision{}
	for _, e := range evs {
		if e.Type != EventSubmitted && e.Type != EventUpdated {
			continue
		}
		var p struct {
			Changeset uuid.UUID `json:"changeset"`
			Revision  int       `json:"revision"`
			Head      string    `json:"head"`
			Base      string    `json:"base"`
		}
		if json.Unmarshal(e.Payload, &p) != nil || p.Changeset != c.ID || p.Revision < 1 || p.Revision > c.Revision {
			continue
		}
		rev := Revision{N: p.Revision, Base: c.BaseCommit, At: e.At}
		if rev.Head, err = gitstore.ParseOID(p.Head); err != nil {
			continue
		}
		if b, err := gitstore.ParseOID(p.Base); err == nil {
			rev.Base = b
		}
		byN[rev.N] = rev
	}
	cur, ok := byN[c.Revision]
	if !ok {
		cur.At = c.UpdatedAt
	}
	cur.N, cur.Base, cur.Head = c.Revision, c.BaseCommit, c.HeadCommit
	byN[c.Revision] = cur
	out := make([]Revision, 0, len(byN))
	for n := 1; n <= c.Revision; n++ {
		if r, ok := byN[n]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// Diff is the patch a changeset puts under review: its head against its
// base.
func (s *Service) Diff(ctx context.Context, id uuid.UUID) (Changeset, *merge.Patch, error) {
	return s.RevisionDiff(ctx, id, 0)
}

// RevisionDiff is the patch revision n of a changeset put under review; 0
// is the current revision (Diff). The changeset comes back with that
// revision's base, head and number.
func (s *Service) RevisionDiff(ctx context.Context, id uuid.UUID, n int) (Changeset, *merge.Patch, error) {
	c, err := s.revision(ctx, id, n)
	if err != nil {
		return Changeset{}, nil, err
	}
	r, err := s.openChangeset(ctx, c)
	if err != nil {
		return Changeset{}, nil, err
	}
	p, err := diff(ctx, r, c.BaseCommit, c.HeadCommit)
	if err != nil {
		if n != 0 {
			return Changeset{}, nil, fmt.Errorf("changeset %s revision %d: %w", id, n, err)
		}
		return Changeset{}, nil, fmt.Errorf("changeset %s: %w", id, err)
	}
	return c, p, nil
}

// Reviews returns a changeset's reviews, oldest first.
func (s *Service) Reviews(ctx context.Context, id uuid.UUID) ([]Review, error) {
	if _, err := s.Get(ctx, id); err != nil {
		return nil, err
	}
	return s.store.ListReviews(ctx, id)
}

// revision is the changeset with the base, head and number of its
// revision n (0: the current one).
func (s *Service) revision(ctx context.Context, id uuid.UUID, n int) (Changeset, error) {
	c, err := s.Get(ctx, id)
	if err != nil {
		return Changeset{}, err
	}
	if n != 0 && n != c.Revision {
		revs, err := s.revisions(ctx, c)
		if err != nil {
			return Changeset{}, err
		}
		found := false
		for _, r := range revs {
			if r.N == n {
				c.BaseCommit, c.HeadCommit, c.Revision, found = r.Base, r.Head, r.N, true
			}
		}
		if !found {
			return Changeset{}, fmt.Errorf("changeset %s has no revision %d: %w", id, n, record.ErrNotFound)
		}
	}
	return c, nil
}
