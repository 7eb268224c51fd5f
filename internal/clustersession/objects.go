package clustersession

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/cluster"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
)

// objects carries the objects a transaction's records name into the
// store, in that transaction: a mutation's blobs, an overlay's blobs, a
// checkpoint's commit with the trees and blobs it has beyond its base.
// The trees of a session's live view are not stored: a node that loads
// the session builds them from its base and overlay.
type objects struct {
	repos *repos.Registry

	mu     sync.Mutex
	repoOf map[uuid.UUID]string // a session's repository never changes
}

// maxRepoOf bounds the cache of sessions' repositories.
const maxRepoOf = 1 << 16

// repo returns the name and the repository of session id.
func (o *objects) repo(ctx context.Context, tx session.Tx, id uuid.UUID) (string, *gitstore.Repo, error) {
	o.mu.Lock()
	name, ok := o.repoOf[id]
	o.mu.Unlock()
	if !ok {
		s, err := tx.GetSession(ctx, id)
		if err != nil {
			return "", nil, err
		}
		name = s.Repo
		o.mu.Lock()
		if o.repoOf == nil || len(o.repoOf) >= maxRepoOf {
			o.repoOf = map[uuid.UUID]string{}
		}
		o.repoOf[id] = name
		o.mu.Unlock()
	}
	r, err := o.repos.Open(ctx, name)
	return name, r, err
}

func objectTx(tx session.Tx, id uuid.UUID) (cluster.ObjectTx, error) {
	ot, ok := tx.(cluster.ObjectTx)
	if !ok {
		return nil, fmt.Errorf("session %s: the store cannot keep its objects", id)
	}
	return ot, nil
}

// save stores ids, objects of session id's repository, in tx; check
// first asks the store which it lacks.
func (o *objects) save(ctx context.Context, tx session.Tx, id uuid.UUID, ids []gitstore.OID, check bool) error {
	ot, err := objectTx(tx, id)
	if err != nil {
		return err
	}
	name, r, err := o.repo(ctx, tx, id)
	if err != nil {
		return err
	}
	return cluster.SaveObjects(ctx, ot, name, r, ids, check)
}

// saveCheckpoint stores checkpoint c's commit and the trees and blobs its
// tree has beyond its session's base tree.
func (o *objects) saveCheckpoint(ctx context.Context, tx session.Tx, c session.Checkpoint) error {
	ot, err := objectTx(tx, c.Session)
	if err != nil {
		return err
	}
	s, err := tx.GetSession(ctx, c.Session)
	if err != nil {
		return err
	}
	r, err := o.repos.Open(ctx, s.Repo)
	if err != nil {
		return err
	}
	baseTree, err := r.TreeOf(ctx, s.BaseCommit)
	if err != nil {
		return fmt.Errorf("session %s: base: %w", c.Session, err)
	}
	ids := []gitstore.OID{c.Commit}
	if ids, err = newObjects(ctx, r, c.Tree, baseTree, ids); err != nil {
		return fmt.Errorf("session %s: checkpoint's objects: %w", c.Session, err)
	}
	return cluster.SaveObjects(ctx, ot, s.Repo, r, ids, true)
}

// newObjects appends to ids tree and the trees and blobs under it that
// are not at the same path in base (zero: none).
func newObjects(ctx context.Context, r *gitstore.Repo, tree, base gitstore.OID, ids []gitstore.OID) ([]gitstore.OID, error) {
	if tree == base {
		return ids, nil
	}
	ids = append(ids, tree)
	t, err := r.Tree(ctx, tree)
	if err != nil {
		return nil, err
	}
	old := map[string]gitstore.TreeEntry{}
	if !base.IsZero() {
		bt, err := r.Tree(ctx, base)
		if err != nil {
			return nil, err
		}
		for _, e := range bt.Entries {
			old[e.Name] = e
		}
	}
	for _, e := range t.Entries {
		b, ok := old[e.Name]
		if ok && b.OID == e.OID {
			continue
		}
		switch {
		case e.Mode == gitstore.ModeDir:
			var sub gitstore.OID
			if ok && b.Mode == gitstore.ModeDir {
				sub = b.OID
			}
			if ids, err = newObjects(ctx, r, e.OID, sub, ids); err != nil {
				return nil, err
			}
		case e.Mode == gitstore.ModeGitlink:
		default:
			ids = append(ids, e.OID)
		}
	}
	return ids, nil
}
