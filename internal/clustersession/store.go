package clustersession

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/cluster"
	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/session"
)

// Fencer is the store's check of a session's epoch inside a transaction
// (package db's CheckSessionEpoch), which every Tx of the wrapped store
// must have.
type Fencer interface {
	CheckSessionEpoch(ctx context.Context, session uuid.UUID, node string, epoch int64) error
}

// Store is a session.Store whose writes of a session's durable state are
// fenced by the node's ownership of the session, and carry the objects
// they name into the store.
type Store struct {
	session.Store
	owners  *cluster.Owners
	objects *objects
}

// New wraps store (whose transactions must be Fencers and
// cluster.ObjectTxs) with owners' fence; the objects of the sessions'
// writes are read from the repositories reg opens.
func New(store session.Store, owners *cluster.Owners, reg *repos.Registry) *Store {
	return &Store{Store: store, owners: owners, objects: &objects{repos: reg}}
}

// InTx implements session.Store: fn's Tx is fenced.
func (s *Store) InTx(ctx context.Context, fn func(session.Tx) error) error {
	return s.Store.InTx(ctx, func(tx session.Tx) error {
		return fn(&fencedTx{Tx: tx, owners: s.owners, objects: s.objects, epochs: map[uuid.UUID]int64{}})
	})
}

// Claim takes session id's lease for this node (or keeps the one it
// holds): a *cluster.OwnedError when another node's is live.
func (s *Store) Claim(ctx context.Context, id uuid.UUID) error {
	_, err := s.owners.Take(ctx, id)
	return err
}

// The writes called on the Store itself run in a fenced transaction of
// their own.

func (s *Store) CreateSession(ctx context.Context, x session.Session) error {
	return s.InTx(ctx, func(tx session.Tx) error { return tx.CreateSession(ctx, x) })
}

func (s *Store) SetSessionState(ctx context.Context, id uuid.UUID, from, to session.State, at time.Time) error {
	return s.InTx(ctx, func(tx session.Tx) error { return tx.SetSessionState(ctx, id, from, to, at) })
}

func (s *Store) SetSessionHead(ctx context.Context, id uuid.UUID, old, new gitstore.OID) error {
	return s.InTx(ctx, func(tx session.Tx) error { return tx.SetSessionHead(ctx, id, old, new) })
}

func (s *Store) SetSessionBase(ctx context.Context, id uuid.UUID, old, new gitstore.OID) error {
	return s.InTx(ctx, func(tx session.Tx) error { return tx.SetSessionBase(ctx, id, old, new) })
}

func (s *Store) TouchSession(ctx context.Context, id uuid.UUID, at, expiresAt time.Time) error {
	return s.InTx(ctx, func(tx session.Tx) error { return tx.TouchSession(ctx, id, at, expiresAt) })
}

func (s *Store) AppendMutation(ctx context.Context, m session.MutationRecord, changes []session.OverlayChange) (out session.MutationRecord, err error) {
	err = s.InTx(ctx, func(tx session.Tx) error { out, err = tx.AppendMutation(ctx, m, changes); return err })
	return out, err
}

func (s *Store) ReplaceOverlay(ctx context.Context, m session.MutationRecord, entries []session.OverlayEntry) (out session.MutationRecord, err error) {
	err = s.InTx(ctx, func(tx session.Tx) error { out, err = tx.ReplaceOverlay(ctx, m, entries); return err })
	return out, err
}

func (s *Store) RecordReads(ctx context.Context, id uuid.UUID, reads map[string]gitstore.OID) error {
	return s.InTx(ctx, func(tx session.Tx) error { return tx.RecordReads(ctx, id, reads) })
}

func (s *Store) CreateCheckpoint(ctx context.Context, c session.Checkpoint) (out session.Checkpoint, err error) {
	err = s.InTx(ctx, func(tx session.Tx) error { out, err = tx.CreateCheckpoint(ctx, c); return err })
	return out, err
}

// fencedTx checks the session's epoch before each write of its durable
// state, once per session per transaction.
type fencedTx struct {
	session.Tx
	owners  *cluster.Owners
	objects *objects
	epochs  map[uuid.UUID]int64 // checked in this transaction
}

func (t *fencedTx) fence(ctx context.Context, id uuid.UUID) error {
	if _, ok := t.epochs[id]; ok {
		return nil
	}
	f, ok := t.Tx.(Fencer)
	if !ok {
		return fmt.Errorf("session %s: the store cannot check its owner", id)
	}
	epoch, err := t.owners.Take(ctx, id)
	if err != nil {
		return err
	}
	if err := f.CheckSessionEpoch(ctx, id, t.owners.Node(), epoch); err != nil {
		return err
	}
	t.epochs[id] = epoch
	return nil
}

func (t *fencedTx) CreateSession(ctx context.Context, s session.Session) error {
	if err := t.fence(ctx, s.ID); err != nil {
		return err
	}
	return t.Tx.CreateSession(ctx, s)
}

func (t *fencedTx) SetSessionState(ctx context.Context, id uuid.UUID, from, to session.State, at time.Time) error {
	if err := t.fence(ctx, id); err != nil {
		return err
	}
	return t.Tx.SetSessionState(ctx, id, from, to, at)
}

func (t *fencedTx) SetSessionHead(ctx context.Context, id uuid.UUID, old, new gitstore.OID) error {
	if err := t.fence(ctx, id); err != nil {
		return err
	}
	return t.Tx.SetSessionHead(ctx, id, old, new)
}

func (t *fencedTx) SetSessionBase(ctx context.Context, id uuid.UUID, old, new gitstore.OID) error {
	if err := t.fence(ctx, id); err != nil {
		return err
	}
	return t.Tx.SetSessionBase(ctx, id, old, new)
}

func (t *fencedTx) TouchSession(ctx context.Context, id uuid.UUID, at, expiresAt time.Time) error {
	if err := t.fence(ctx, id); err != nil {
		return err
	}
	return t.Tx.TouchSession(ctx, id, at, expiresAt)
}

func (t *fencedTx) AppendMutation(ctx context.Context, m session.MutationRecord, changes []session.OverlayChange) (session.MutationRecord, error) {
	if err := t.fence(ctx, m.Session); err != nil {
		return session.MutationRecord{}, err
	}
	blobs := make([]gitstore.OID, 0, len(changes))
	for _, c := range changes {
		if !c.Remove {
			blobs = append(blobs, c.Entry.Blob)
		}
	}
	if err := t.objects.save(ctx, t.Tx, m.Session, blobs, false); err != nil {
		return session.MutationRecord{}, err
	}
	return t.Tx.AppendMutation(ctx, m, changes)
}

func (t *fencedTx) ReplaceOverlay(ctx context.Context, m session.MutationRecord, entries []session.OverlayEntry) (session.MutationRecord, error) {
	if err := t.fence(ctx, m.Session); err != nil {
		return session.MutationRecord{}, err
	}
	blobs := make([]gitstore.OID, len(entries))
	for i, e := range entries {
		blobs[i] = e.Blob
	}
	if err := t.objects.save(ctx, t.Tx, m.Session, blobs, true); err != nil {
		return session.MutationRecord{}, err
	}
	return t.Tx.ReplaceOverlay(ctx, m, entries)
}

func (t *fencedTx) RecordReads(ctx context.Context, id uuid.UUID, reads map[string]gitstore.OID) error {
	if err := t.fence(ctx, id); err != nil {
		return err
	}
	return t.Tx.RecordReads(ctx, id, reads)
}

func (t *fencedTx) CreateCheckpoint(ctx context.Context, c session.Checkpoint) (session.Checkpoint, error) {
	if err := t.fence(ctx, c.Session); err != nil {
		return session.Checkpoint{}, err
	}
	if err := t.objects.saveCheckpoint(ctx, t.Tx, c); err != nil {
		return session.Checkpoint{}, err
	}
	return t.Tx.CreateCheckpoint(ctx, c)
}

// FenceState is the fence of a transaction of another engine (the
// changeset service's accept) that moves the state of session id: tx
// must be the store's (a Fencer).
func (s *Store) FenceState(ctx context.Context, tx record.StateTx, id uuid.UUID) error {
	f, ok := tx.(Fencer)
	if !ok {
		return fmt.Errorf("session %s: the store cannot check its owner", id)
	}
	epoch, err := s.owners.Take(ctx, id)
	if err != nil {
		return err
	}
	return f.CheckSessionEpoch(ctx, id, s.owners.Node(), epoch)
}
