package record

import (
	"context"

	"github.com/google/uuid"
)

// Reach is how much of a repository a caller may name in a revision
// (SPEC section 2.8): a session token reaches the repository's branches
// and tags, its own session's refs, and the commits reachable from them,
// and nothing of another session. The API puts a limited caller's reach
// into each request's context (WithReach); the engines resolve every
// revision a caller gives within the reach they find there. A context
// without one is the admin's or the engine's own, which reach
// everything.
type Reach struct {
	// Session is the session whose token the caller holds; uuid.Nil: no
	// session's refs, only the branches and tags.
	Session uuid.UUID
}

type reachKey struct{}

// WithReach returns ctx for a caller limited to reach.
func WithReach(ctx context.Context, reach Reach) context.Context {
	return context.WithValue(ctx, reachKey{}, reach)
}

// ReachFrom returns the reach of the caller of ctx, and false when it is
// not limited.
func ReachFrom(ctx context.Context) (Reach, bool) {
	reach, ok := ctx.Value(reachKey{}).(Reach)
	return reach, ok
}
