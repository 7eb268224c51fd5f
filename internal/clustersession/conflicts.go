package clustersession

import (
	"context"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/session"
)

// A session's kept conflicts are its durable state: their writes are
// fenced as the overlay's are. Remembered resolutions belong to the
// repository, not to a session, and are not.

func (s *Store) PutConflicts(ctx context.Context, id uuid.UUID, cs []session.KeptConflict) error {
	return s.InTx(ctx, func(tx session.Tx) error { return tx.PutConflicts(ctx, id, cs) })
}

func (s *Store) DeleteConflicts(ctx context.Context, id uuid.UUID, paths []string) error {
	return s.InTx(ctx, func(tx session.Tx) error { return tx.DeleteConflicts(ctx, id, paths) })
}

func (t *fencedTx) PutConflicts(ctx context.Context, id uuid.UUID, cs []session.KeptConflict) error {
	if err := t.fence(ctx, id); err != nil {
		return err
	}
	return t.Tx.PutConflicts(ctx, id, cs)
}

func (t *fencedTx) DeleteConflicts(ctx context.Context, id uuid.UUID, paths []string) error {
	if err := t.fence(ctx, id); err != nil {
		return err
	}
	return t.Tx.DeleteConflicts(ctx, id, paths)
}
