package groupcommit

import (
	"fmt"
	"sync"
	"time"
)

// Options bound a batch.
type Options struct {
	// MaxDelay is how long a batch waits for more items after a batch of
	// several; zero: never wait (batches form only of the items that
	// arrived while the previous batch committed).
	MaxDelay time.Duration
	// MaxEntries caps a batch's items; zero or less: 64.
	MaxEntries int
}

// DefaultOptions: wait at most a millisecond, at most 64 items a batch.
var DefaultOptions = Options{MaxDelay: time.Millisecond, MaxEntries: 64}

// CommitFunc makes a batch durable and returns one error per item, nil
// for an item that is durable (a nil slice: all are). Until it calls next
// (at most once; not at all is fine) no other batch starts; after, the
// next batch may start its commit while this one finishes, so a commit
// made of stages can overlap one stage of a batch with another stage of
// the next (a pipeline). Keeping the later stages in batch order is then
// the CommitFunc's: it takes its own lock for them before it calls next.
type CommitFunc[T any] func(items []T, next func()) []error

// Committer gathers the items of concurrent Do calls into batches and
// commits each batch with one call of its CommitFunc.
type Committer[T any] struct {
	commit CommitFunc[T]
	opts   Options

	mu      sync.Mutex
	queue   []*call[T]
	leading bool // a caller is running or about to run a batch
	last    int  // size of the previous batch
	full    chan struct{}

	batches, items int64 // totals, for Stats
}

type call[T any] struct {
	item T
	err  error
	// wake receives false when the item's batch committed (err is set),
	// true when the caller is to lead the next batch.
	wake chan bool
}

// New returns a Committer that commits batches with commit.
func New[T any](opts Options, commit CommitFunc[T]) *Committer[T] {
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = 64
	}
	return &Committer[T]{commit: commit, opts: opts, last: 1, full: make(chan struct{}, 1)}
}

// Do adds item to the next batch and returns its result once that batch
// committed. It does not give up early: an item in a batch being
// committed has an outcome its caller must learn.
func (c *Committer[T]) Do(item T) error {
	cl := &call[T]{item: item, wake: make(chan bool, 1)}
	c.mu.Lock()
	c.queue = append(c.queue, cl)
	if c.leading {
		if len(c.queue) >= c.target() {
			select {
			case c.full <- struct{}{}:
			default:
			}
		}
		c.mu.Unlock()
		if lead := <-cl.wake; !lead {
			return cl.err
		}
	} else {
		c.leading = true
		c.mu.Unlock()
	}
	c.lead()
	return cl.err
}

// target is how many items the next batch waits for. c.mu must be held.
func (c *Committer[T]) target() int { return min(c.last, c.opts.MaxEntries) }

// lead gathers and commits one batch (which holds the caller's item: it
// is first in the queue), then hands the lead to the next batch's first
// item, or leaves the Committer idle.
func (c *Committer[T]) lead() {
	c.mu.Lock()
	if len(c.queue) < c.target() && c.opts.MaxDelay > 0 {
		select { // a signal left from an earlier batch
		case <-c.full:
		default:
		}
		c.mu.Unlock()
		t := time.NewTimer(c.opts.MaxDelay)
		select {
		case <-c.full:
		case <-t.C:
		}
		t.Stop()
		c.mu.Lock()
	}
	n := min(len(c.queue), c.opts.MaxEntries)
	batch := c.queue[:n:n]
	c.queue = append([]*call[T](nil), c.queue[n:]...)
	c.mu.Unlock()

	items := make([]T, len(batch))
	for i, cl := range batch {
		items[i] = cl.item
	}
	var handed sync.Once
	handoff := func() {
		handed.Do(func() {
			c.mu.Lock()
			c.last = len(batch)
			c.batches++
			c.items += int64(len(batch))
			var next *call[T]
			if len(c.queue) > 0 {
				next = c.queue[0]
			} else {
				c.leading = false
			}
			c.mu.Unlock()
			if next != nil {
				next.wake <- true
			}
		})
	}
	errs, panicked := c.run(items, handoff)
	handoff()
	for i, cl := range batch {
		if i < len(errs) {
			cl.err = errs[i]
		}
		if i > 0 { // the first is the caller's own
			cl.wake <- false
		}
	}
	if panicked != nil {
		panic(panicked) // in the leader, once the others have their error
	}
}

// run calls the commit function; a panic fails every item of the batch
// and is returned, to be raised again once the waiters are released.
func (c *Committer[T]) run(items []T, next func()) (errs []error, panicked any) {
	defer func() {
		if p := recover(); p != nil {
			panicked = p
			errs = make([]error, len(items))
			for i := range errs {
				errs[i] = fmt.Errorf("groupcommit: commit panicked: %v", p)
			}
		}
	}()
	return c.commit(items, next), nil
}

// Queued is how many items are not yet in a batch being committed.
func (c *Committer[T]) Queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// Stats are a Committer's totals so far: batches committed and the items
// in them.
func (c *Committer[T]) Stats() (batches, items int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.batches, c.items
}
