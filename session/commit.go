package session

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/failpoint"
	"github.com/sessiond/sessiond/internal/groupcommit"
)

// commit is one mutation handed to its repository's committer: its new
// objects, the move of its session's live ref, and its store
// transaction. The committer makes a batch of them durable in the
// package's durability order with shared waits for the disk: one pack
// (one fsync) for every batch's objects, the refs' fsyncs at once, one
// store transaction. Each keeps its own result.
type commit struct {
	ctx     context.Context
	objects *gitstore.Batch
	ref     gitstore.RefUpdate
	// tx records the mutation in the batch's transaction, under the
	// batch's context (not the request's: a request that leaves does not
	// abort the others' transaction); it may run more than once (a retried
	// transaction, or alone after a batch failed on another mutation's
	// record) and has no other side effects.
	tx func(context.Context, Tx) error
	// refMoved is set once the live ref names ref.New.
	refMoved bool
}

// committers holds one group committer per repository opened. An entry
// is small and outlives its repository only when the registry replaces
// an open repository (a re-registration), which is rare.
type committers struct {
	mu sync.Mutex
	m  map[*gitstore.Repo]*groupcommit.Committer[*commit]
}

// durable makes c durable through r's committer, batched with the
// concurrent mutations of other sessions of r.
func (m *recorder) durable(r *gitstore.Repo, c *commit) error {
	m.commits.mu.Lock()
	gc := m.commits.m[r]
	if gc == nil {
		if m.commits.m == nil {
			m.commits.m = map[*gitstore.Repo]*groupcommit.Committer[*commit]{}
		}
		// The store stage runs in batch order under its own lock, so the
		// next batch's objects and refs are written meanwhile.
		var storeStage sync.Mutex
		gc = groupcommit.New(groupcommit.DefaultOptions, func(cs []*commit, next func()) []error {
			return m.commitBatch(r, cs, &storeStage, next)
		})
		m.commits.m[r] = gc
	}
	m.commits.mu.Unlock()
	return gc.Do(c)
}

// commitBatch makes a batch of mutations of repository r durable:
// objects, refs, then the store, each step only for the mutations the
// steps before did not fail. A mutation whose record fails in the shared
// transaction is recorded alone and the others again without it, so that
// it fails only itself (as bbolt's Batch does).
//
// It is a pipeline of two stages: objects and refs, then the store. The
// store stage is taken (storeStage) before the next batch may start
// (next), so store transactions commit in batch order while the next
// batch writes its objects and refs. Batches hold different sessions'
// mutations (a session's lock is held until its mutation is
// acknowledged), so a later batch's ref never names a view whose
// predecessor is still unrecorded.
func (m *recorder) commitBatch(r *gitstore.Repo, cs []*commit, storeStage *sync.Mutex, next func()) []error {
	errs := make([]error, len(cs))
	// A request that left before its batch started is not written; one in
	// a batch being written is seen through.
	for i, c := range cs {
		errs[i] = c.ctx.Err()
	}
	ctx := context.WithoutCancel(cs[0].ctx)
	ok := func() []int {
		var out []int
		for i := range cs {
			if errs[i] == nil {
				out = append(out, i)
			}
		}
		return out
	}

	// Refs are prepared (locked, checked, written and fsynced in their
	// lock files) while the objects are written: the waits for the disk
	// overlap. They are installed once the objects are durable.
	idx := ok()
	ups := make([]gitstore.RefUpdate, len(idx))
	for j, i := range idx {
		ups[j] = cs[i].ref
	}
	prepared := make(chan *gitstore.PreparedRefs, 1)
	go func() { prepared <- r.PrepareRefs(ctx, ups) }()

	// Objects: one flush for all; should it fail, each alone, so a
	// mutation whose objects cannot be written fails only itself.
	all := r.NewBatch()
	for _, i := range idx {
		if err := all.Absorb(cs[i].objects); err != nil {
			errs[i] = err
		}
	}
	if err := all.Flush(ctx); err != nil {
		for _, i := range idx {
			if errs[i] != nil {
				continue
			}
			if err := cs[i].objects.Flush(ctx); err != nil {
				errs[i] = fmt.Errorf("write objects: %w", err)
			}
		}
	}

	// Refs: each its own compare-and-swap, installed together.
	refs := <-prepared
	defer refs.Release()
	include := make([]bool, len(idx))
	for j, i := range idx {
		include[j] = errs[i] == nil
	}
	for j, err := range refs.Commit(include) {
		i := idx[j]
		switch {
		case !include[j]:
		case err != nil:
			errs[i] = fmt.Errorf("pin overlay: %w", err)
		default:
			cs[i].refMoved = true
		}
	}
	if len(ups) > 0 {
		failpoint.Hit(failpoint.RefMoved)
	}

	storeStage.Lock()
	defer storeStage.Unlock()
	next()

	// The store: one transaction for all.
	todo := ok()
	for len(todo) > 0 {
		failed := -1
		err := m.store.InTx(ctx, func(tx Tx) error {
			failed = -1
			for _, i := range todo {
				if err := cs[i].tx(ctx, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if err == nil {
			break
		}
		if failed < 0 || len(todo) == 1 {
			// Not one mutation's failure (the commit itself): all of them.
			for _, i := range todo {
				errs[i] = fmt.Errorf("record mutation: %w", err)
			}
			break
		}
		if err := m.store.InTx(ctx, func(tx Tx) error { return cs[failed].tx(ctx, tx) }); err != nil {
			errs[failed] = fmt.Errorf("record mutation: %w", err)
		}
		todo = slices.DeleteFunc(todo, func(i int) bool { return i == failed })
	}
	if len(todo) > 0 {
		failpoint.Hit(failpoint.StoreCommitted)
	}
	return errs
}
