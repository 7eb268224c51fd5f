package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/record"
)

// This file is the one place where a revision a caller gives (a base, a
// rebase's onto, a diff's against, an accept's expected head) is
// resolved: within the caller's reach (record.Reach, which the API puts
// in the request's context), so a session token names only its own
// session's refs, the repository's branches and tags, and the commits
// reachable from them (gitstore.Scope). What is out of reach answers as
// what does not exist.

// scopeOf is the part of a repository the caller of ctx may name: nil
// (all of it) for the admin and the engine's own calls; for a session
// token, the shared refs, that session's refs under refs/sessions/<id>/,
// and what they reach.
func scopeOf(ctx context.Context) *gitstore.Scope {
	reach, limited := record.ReachFrom(ctx)
	if !limited {
		return nil
	}
	sc := &gitstore.Scope{}
	if reach.Session != uuid.Nil {
		sc.Own = sessionRefs(reach.Session) + "/"
	}
	return sc
}

// ResolveRevision resolves rev, which the caller of ctx gave as field
// ("base", "onto", "expected_head"), to a commit of repository r, within
// the caller's reach. A revision that names nothing the caller may see
// is not found (record.ErrNotFound naming rev), whether it exists or
// not; one that names a tree or blob, or an abbreviated id several
// objects the caller sees start with, is record.ErrInvalid.
func (m *Manager) ResolveRevision(ctx context.Context, r *gitstore.Repo, field, rev string) (gitstore.OID, error) {
	return resolveRevision(ctx, r, field, rev, gitstore.KindCommit)
}

// resolveRevision is ResolveRevision to a commit, or with want
// KindTree to a tree (a commit gives its tree).
func resolveRevision(ctx context.Context, r *gitstore.Repo, field, rev string, want gitstore.Kind) (gitstore.OID, error) {
	sc := scopeOf(ctx)
	var id gitstore.OID
	var err error
	if want == gitstore.KindTree {
		id, err = r.ResolveTreeIn(ctx, sc, rev)
	} else {
		id, err = r.ResolveRevisionIn(ctx, sc, rev)
	}
	switch {
	case err == nil:
		return id, nil
	case errors.Is(err, gitstore.ErrNotFound):
		return gitstore.OID{}, &revisionNotFound{field: field, err: err}
	case errors.Is(err, gitstore.ErrWrongKind), errors.Is(err, gitstore.ErrAmbiguous):
		return gitstore.OID{}, fmt.Errorf("%w: %s: %v", record.ErrInvalid, field, err)
	}
	return gitstore.OID{}, fmt.Errorf("%s: %w", field, err)
}

// revisionNotFound is a revision that names nothing the caller may see:
// record.ErrNotFound, with gitstore's account of the revision.
type revisionNotFound struct {
	field string
	err   error
}

func (e *revisionNotFound) Error() string { return e.field + ": " + e.err.Error() }

func (e *revisionNotFound) Unwrap() []error { return []error{record.ErrNotFound, e.err} }
