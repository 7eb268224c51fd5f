package db

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessiond/sessiond/events"
)

// eventsChannel is the LISTEN/NOTIFY channel of the event log's wake-ups;
// the payload is the schema, so that clusters on other schemas of one
// database ignore each other's.
const eventsChannel = "sessiond_events"

// Waker is an events.Waker across the processes on one database: Notify
// wakes this process's streams at once and sends a NOTIFY (coalesced: at
// most one in flight, one more queued), and every NOTIFY of any process
// wakes the streams here. A wake-up carries no event, so a lost one costs
// nothing but latency: after its listening connection comes back the
// waker wakes its streams, which look again.
type Waker struct {
	p      *Postgres
	local  *events.Local
	send   chan struct{}
	schema string
	log    *slog.Logger
}

var _ events.Waker = (*Waker)(nil)

// Waker starts the wake-ups of the event log across processes until ctx
// ends.
func (p *Postgres) Waker(ctx context.Context, log *slog.Logger) (*Waker, error) {
	w := &Waker{p: p, local: events.NewLocal(), send: make(chan struct{}, 1), log: log}
	if err := p.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&w.schema); err != nil {
		return nil, pgError(ctx, err)
	}
	conn, err := w.listen(ctx)
	if err != nil {
		return nil, err
	}
	go w.sender(ctx)
	go w.listener(ctx, conn)
	return w, nil
}

// Notify implements events.Waker.
func (w *Waker) Notify() {
	w.local.Notify()
	select {
	case w.send <- struct{}{}:
	default: // one queued already covers this one
	}
}

// Wait implements events.Waker.
func (w *Waker) Wait() <-chan struct{} { return w.local.Wait() }

func (w *Waker) sender(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.send:
		}
		nctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := w.p.locks.Exec(nctx, `SELECT pg_notify($1, $2)`, eventsChannel, w.schema)
		cancel()
		if err != nil && ctx.Err() == nil {
			w.log.Warn("event wake-up to the other nodes", "error", err)
		}
	}
}

func (w *Waker) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, w.p.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, pgError(ctx, err)
	}
	if _, err := conn.Exec(ctx, `LISTEN `+eventsChannel); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, pgError(ctx, err)
	}
	return conn, nil
}

func (w *Waker) listener(ctx context.Context, conn *pgx.Conn) {
	defer func() {
		if conn != nil {
			_ = conn.Close(context.Background())
		}
	}()
	for ctx.Err() == nil {
		if conn == nil {
			var err error
			if conn, err = w.listen(ctx); err != nil {
				w.log.Warn("listen for the other nodes' events", "error", err)
				sleepCtx(ctx, time.Second)
				continue
			}
			w.local.Notify() // anything missed meanwhile: look again
		}
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("listen for the other nodes' events", "error", err)
			}
			_ = conn.Close(context.Background())
			conn = nil
			continue
		}
		if n.Payload == w.schema {
			w.local.Notify()
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
