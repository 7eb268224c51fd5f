package events_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/db"
	"github.com/sessiond/sessiond/events"
)

// TestSubscribeResumesAndWakes: a stream replays the stored events after
// its id, then waits, and an Append (or a Notify after a commit) wakes it
// with the new event; nothing is delivered twice or out of order.
func TestSubscribeResumesAndWakes(t *testing.T) {
	ctx := t.Context()
	st, err := db.OpenSQLite(ctx, filepath.Join(t.TempDir(), "sessiond.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	log := events.New(st, nil)
	sess := uuid.New()
	at := time.Now().UTC().Truncate(time.Microsecond)
	first, err := st.AppendEvent(ctx, events.Event{Repo: "r", Session: sess, Type: "a", At: at})
	require.NoError(t, err)
	_, err = st.AppendEvent(ctx, events.Event{Repo: "r", Session: sess, Type: "b", At: at})
	require.NoError(t, err)

	sub := log.Subscribe(ctx, events.Filter{Session: sess, After: first.ID})
	next := func() events.Event {
		t.Helper()
		select {
		case e := <-sub:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
			return events.Event{}
		}
	}
	assert.Equal(t, "b", next().Type, "the stored event after the id")
	require.NoError(t, log.Append(ctx, events.Event{Repo: "r", Session: sess, Type: "c", At: at}))
	assert.Equal(t, "c", next().Type, "Append wakes the stream")
	// An event appended by a writer's transaction shows after its Notify.
	_, err = st.AppendEvent(ctx, events.Event{Repo: "r", Session: sess, Type: "d", At: at})
	require.NoError(t, err)
	log.Notify()
	assert.Equal(t, "d", next().Type)

	got, err := log.List(ctx, events.Filter{Session: sess})
	require.NoError(t, err)
	var types []string
	for _, e := range got {
		types = append(types, e.Type)
	}
	assert.Equal(t, []string{"a", "b", "c", "d"}, types)
}

// TestLocalWakesEveryWaiter: one Notify closes the channel every waiter
// holds, and a Wait after it waits for the next one.
func TestLocalWakesEveryWaiter(t *testing.T) {
	w := events.NewLocal()
	a, b := w.Wait(), w.Wait()
	w.Notify()
	for _, c := range []<-chan struct{}{a, b} {
		select {
		case <-c:
		default:
			t.Fatal("a waiter was not woken")
		}
	}
	select {
	case <-w.Wait():
		t.Fatal("a Wait after Notify is already woken")
	default:
	}
}
