package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sessiond/sessiond/gitstore"
)

// ObjectTx is the store's copy of the objects sessions write in a
// cluster (package db's repo_objects): content-addressed, kept once per
// repository. Its methods run in the transaction they were obtained from,
// or alone on the store.
type ObjectTx interface {
	// MissingObjects returns the ids of ids the store does not hold for
	// repo, each once.
	MissingObjects(ctx context.Context, repo string, ids []gitstore.OID) ([]gitstore.OID, error)
	// PutObjects stores objs for repo; one held already stays as it is.
	PutObjects(ctx context.Context, repo string, objs []gitstore.RawObject) error
	// GetObjects returns the objects of ids the store holds for repo,
	// each checked against its id; the others are left out.
	GetObjects(ctx context.Context, repo string, ids []gitstore.OID) ([]gitstore.RawObject, error)
}

// SaveObjects stores in tx, for repo, those of ids the store lacks, read
// from r (where they are durable already). With check false every one is
// sent and the store keeps what it held (fewer round trips for objects
// that are new, as a mutation's are).
func SaveObjects(ctx context.Context, tx ObjectTx, repo string, r *gitstore.Repo, ids []gitstore.OID, check bool) error {
	ids = slices.DeleteFunc(slices.Clone(ids), func(id gitstore.OID) bool { return id.IsZero() })
	if len(ids) == 0 {
		return nil
	}
	if check {
		var err error
		if ids, err = tx.MissingObjects(ctx, repo, ids); err != nil || len(ids) == 0 {
			return err
		}
	}
	objs := make([]gitstore.RawObject, 0, len(ids))
	seen := make(map[gitstore.OID]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		o, err := r.ReadRaw(ctx, id)
		if err != nil {
			return fmt.Errorf("repository %q: object %s for the store: %w", repo, id, err)
		}
		objs = append(objs, o)
	}
	return tx.PutObjects(ctx, repo, objs)
}

// FillObjects makes roots, and everything they reach, present in r: what
// r lacks is read from the store and written into r in one durable step;
// the walk stops at objects r holds (a repository's objects are whole).
// It returns how many objects it wrote. An object neither holds is
// gitstore.ErrMissingObject, naming it, and nothing is written.
func FillObjects(ctx context.Context, store ObjectTx, repo string, r *gitstore.Repo, roots []gitstore.OID) (int, error) {
	seen := map[gitstore.OID]bool{}
	batch := r.NewBatch()
	level := roots
	for len(level) > 0 {
		var lack []gitstore.OID
		for _, id := range level {
			if id.IsZero() || seen[id] {
				continue
			}
			seen[id] = true
			has, err := r.HasObject(ctx, id)
			if err != nil {
				return 0, err
			}
			if !has {
				lack = append(lack, id)
			}
		}
		if len(lack) == 0 {
			break
		}
		objs, err := store.GetObjects(ctx, repo, lack)
		if err != nil {
			return 0, err
		}
		if len(objs) < len(lack) {
			got := make(map[gitstore.OID]bool, len(objs))
			for _, o := range objs {
				got[o.ID] = true
			}
			for _, id := range lack {
				if !got[id] {
					return 0, fmt.Errorf("repository %q: object %s: %w: in neither this node's clone nor the cluster's store", repo, id, gitstore.ErrMissingObject)
				}
			}
		}
		level = nil
		for _, o := range objs {
			batch.Add(o.Kind, o.Data)
			links, err := o.Links()
			if err != nil {
				return 0, err
			}
			level = append(level, links...)
		}
	}
	n := batch.Len()
	if err := batch.Flush(ctx); err != nil {
		return 0, fmt.Errorf("repository %q: write objects from the store: %w", repo, err)
	}
	return n, nil
}

// Filler brings the objects of sessions written on other nodes into this
// node's clones: from the cluster's store, and the commits the store
// does not hold (a session's base) from the repository's origin.
type Filler struct {
	Store ObjectTx
}

// Fill makes ids and what they reach present in r (repository repo),
// fetching r's origin once when the store lacks one of them.
func (f *Filler) Fill(ctx context.Context, repo string, r *gitstore.Repo, ids []gitstore.OID) error {
	_, err := FillObjects(ctx, f.Store, repo, r, ids)
	if errors.Is(err, gitstore.ErrMissingObject) && r.Origin() != "" {
		if ferr := r.Fetch(ctx); ferr != nil {
			return fmt.Errorf("%w (and fetching the origin failed: %w)", err, ferr)
		}
		_, err = FillObjects(ctx, f.Store, repo, r, ids)
	}
	return err
}
