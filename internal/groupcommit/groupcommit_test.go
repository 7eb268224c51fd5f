package groupcommit

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAloneCommitsAtOnce(t *testing.T) {
	var got [][]int
	c := New(DefaultOptions, func(items []int, _ func()) []error {
		got = append(got, append([]int(nil), items...))
		return nil
	})
	require.NoError(t, c.Do(1))
	require.NoError(t, c.Do(2))
	assert.Equal(t, [][]int{{1}, {2}}, got)
	b, n := c.Stats()
	assert.Equal(t, int64(2), b)
	assert.Equal(t, int64(2), n)
}

// TestWritesDuringACommitShareTheNext holds the first batch's commit
// until the others are queued: they then commit together, in one batch.
func TestWritesDuringACommitShareTheNext(t *testing.T) {
	const others = 10
	release := make(chan struct{})
	var mu sync.Mutex
	var batches [][]int
	c := New(Options{MaxEntries: 64}, func(items []int, _ func()) []error {
		mu.Lock()
		batches = append(batches, append([]int(nil), items...))
		first := len(batches) == 1
		mu.Unlock()
		if first {
			<-release
		}
		return nil
	})
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, c.Do(0)) })
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(batches) == 1 })
	for i := 1; i <= others; i++ {
		wg.Go(func() { assert.NoError(t, c.Do(i)) })
	}
	waitFor(t, func() bool { return c.Queued() == others })
	close(release)
	wg.Wait()
	require.Len(t, batches, 2)
	assert.Equal(t, []int{0}, batches[0])
	assert.ElementsMatch(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, batches[1])
}

func TestFailedItemFailsOnlyItself(t *testing.T) {
	bad := errors.New("precondition failed")
	release := make(chan struct{})
	first := true
	c := New(Options{MaxEntries: 64}, func(items []int, _ func()) []error {
		if first {
			first = false
			<-release
		}
		errs := make([]error, len(items))
		for i, it := range items {
			if it%2 == 1 {
				errs[i] = fmt.Errorf("item %d: %w", it, bad)
			}
		}
		return errs
	})
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, c.Do(0)) })
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.leading && len(c.queue) == 0 })
	results := make([]error, 9)
	for i := 1; i < len(results); i++ {
		wg.Go(func() { results[i] = c.Do(i) })
	}
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.queue) == len(results)-1 })
	close(release)
	wg.Wait()
	for i := 1; i < len(results); i++ {
		if i%2 == 1 {
			assert.ErrorIs(t, results[i], bad, "item %d", i)
			assert.ErrorContains(t, results[i], fmt.Sprintf("item %d:", i))
		} else {
			assert.NoError(t, results[i], "item %d", i)
		}
	}
}

func TestMaxEntries(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	c := New(Options{MaxEntries: 3}, func(items []int, _ func()) []error {
		mu.Lock()
		sizes = append(sizes, len(items))
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			<-release
		}
		return nil
	})
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, c.Do(0)) })
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 1 })
	for i := 1; i <= 7; i++ {
		wg.Go(func() { assert.NoError(t, c.Do(i)) })
	}
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.queue) == 7 })
	close(release)
	wg.Wait()
	assert.Equal(t, []int{1, 3, 3, 1}, sizes)
	_, n := c.Stats()
	assert.Equal(t, int64(8), n)
}

// TestManyWriters runs many concurrent writers (under -race in make
// test): every item is committed exactly once and gets its own result.
func TestManyWriters(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	c := New(Options{MaxDelay: 100 * time.Microsecond, MaxEntries: 8}, func(items []int, _ func()) []error {
		mu.Lock()
		defer mu.Unlock()
		errs := make([]error, len(items))
		for i, it := range items {
			seen[it]++
			if it%7 == 0 {
				errs[i] = fmt.Errorf("item %d refused", it)
			}
		}
		return errs
	})
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for k := range 200 {
				it := w*1000 + k
				err := c.Do(it)
				if it%7 == 0 {
					assert.EqualError(t, err, fmt.Sprintf("item %d refused", it))
				} else {
					assert.NoError(t, err)
				}
			}
		})
	}
	wg.Wait()
	assert.Len(t, seen, 16*200)
	for it, n := range seen {
		assert.Equal(t, 1, n, "item %d", it)
	}
	b, n := c.Stats()
	assert.Equal(t, int64(16*200), n)
	assert.LessOrEqual(t, b, n)
}

func TestPanicFailsTheBatch(t *testing.T) {
	release := make(chan struct{})
	calls := 0
	c := New(Options{MaxEntries: 64}, func(items []int, _ func()) []error {
		calls++
		if calls == 1 {
			<-release
			return nil
		}
		panic("boom")
	})
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, c.Do(0)) })
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.leading && len(c.queue) == 0 })
	var errOther error
	var panicked any
	wg.Go(func() {
		defer func() { panicked = recover() }()
		_ = c.Do(1) // leads the second batch: the panic is raised here
	})
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.queue) == 1 })
	wg.Go(func() { errOther = c.Do(2) })
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.queue) == 2 })
	close(release)
	wg.Wait()
	assert.Equal(t, "boom", panicked)
	assert.ErrorContains(t, errOther, "commit panicked: boom")
}

// waitFor polls cond until it holds (the test's own deadline bounds it).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(50 * time.Microsecond)
	}
}

// TestPipeline: a commit that calls next lets the next batch start while
// it finishes; its later stage, under its own lock taken before next,
// still runs in batch order.
func TestPipeline(t *testing.T) {
	var stage sync.Mutex
	var mu sync.Mutex
	var order []int
	inFirst, release := make(chan struct{}), make(chan struct{})
	started := make(chan int, 16)
	c := New(Options{MaxEntries: 64}, func(items []int, next func()) []error {
		started <- items[0]
		stage.Lock()
		next()
		if items[0] == 0 {
			close(inFirst)
			<-release
		}
		mu.Lock()
		order = append(order, items...)
		mu.Unlock()
		stage.Unlock()
		return nil
	})
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, c.Do(0)) })
	<-inFirst
	wg.Go(func() { assert.NoError(t, c.Do(1)) })
	// The second batch started while the first is still in its stage.
	assert.Equal(t, 0, <-started)
	assert.Equal(t, 1, <-started)
	close(release)
	wg.Wait()
	assert.Equal(t, []int{0, 1}, order, "the later stage keeps batch order")
}
