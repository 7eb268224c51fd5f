package events

import (
	"context"
	"sync"
)

// Appender records an event: a store, or one of its transactions, which
// is how a change appends its events in its own transaction. It assigns
// the next id. In a transaction, append events last: the id counter stays
// locked until commit.
type Appender interface {
	AppendEvent(ctx context.Context, e Event) (Event, error)
}

// Store is where the log lives (package db implements it).
type Store interface {
	Appender
	// ListEvents returns up to f.Limit events with ID > f.After, oldest
	// first, for one session (f.Session) or one repository (f.Repo).
	ListEvents(ctx context.Context, f Filter) ([]Event, error)
	// LastEventID returns the id of the newest event of any repository
	// (0 when there is none): a stream that starts after it sees only
	// what comes next.
	LastEventID(ctx context.Context) (int64, error)
}

// Waker is the seam of the wake-ups: Notify says events were committed,
// Wait returns a channel closed at the first Notify after the call. Local
// is the one-process implementation.
type Waker interface {
	Notify()
	Wait() <-chan struct{}
}

// Log is the event log: streams over the store, woken by a Waker.
type Log struct {
	store Store
	wake  Waker
}

// New returns the log over store, woken by wake (Local when nil).
func New(store Store, wake Waker) *Log {
	if wake == nil {
		wake = NewLocal()
	}
	return &Log{store: store, wake: wake}
}

// Notify wakes the streams after events were committed.
func (l *Log) Notify() { l.wake.Notify() }

// Append records e outside any other change and wakes the streams.
func (l *Log) Append(ctx context.Context, e Event) error {
	if _, err := l.store.AppendEvent(ctx, e); err != nil {
		return err
	}
	l.Notify()
	return nil
}

// List returns up to f.Limit events after f.After, without waiting.
func (l *Log) List(ctx context.Context, f Filter) ([]Event, error) {
	return l.store.ListEvents(ctx, f)
}

// Latest returns the id of the newest event (0: none), for a stream that
// starts now instead of replaying the log.
func (l *Log) Latest(ctx context.Context) (int64, error) {
	return l.store.LastEventID(ctx)
}

// Subscribe streams events matching f (one session, or one repository with
// all its sessions) with ids after f.After, in order, until ctx ends. The
// channel is closed when ctx ends or the store fails.
func (l *Log) Subscribe(ctx context.Context, f Filter) <-chan Event {
	out := make(chan Event)
	go func() {
		defer close(out)
		after := f.After
		for {
			wake := l.wake.Wait()
			q := f
			q.After = after
			q.Limit = 256
			evs, err := l.store.ListEvents(ctx, q)
			if err != nil {
				return
			}
			for _, e := range evs {
				select {
				case out <- e:
					after = e.ID
				case <-ctx.Done():
					return
				}
			}
			if len(evs) == q.Limit {
				continue
			}
			select {
			case <-wake:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// Local wakes the streams of one process: every Notify closes the channel
// Wait handed out and makes a new one.
type Local struct {
	mu   sync.Mutex    // guards wake
	wake chan struct{} // closed and replaced on every Notify
}

// NewLocal returns a Waker for one process.
func NewLocal() *Local { return &Local{wake: make(chan struct{})} }

// Notify wakes every waiter.
func (b *Local) Notify() {
	b.mu.Lock()
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}

// Wait returns a channel closed at the next Notify.
func (b *Local) Wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.wake
}
