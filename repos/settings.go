package repos

import (
	"sync"
	"time"
)

// settings keeps what a command of a repository reads of it on every
// call, its policy and its environment record, so a command whose
// environment layer exists asks the store for nothing. A write through
// this Registry (SetPolicy, SetEnvironment, a registration) drops the
// repository's entries at once; a write made by another node of a
// cluster is seen within settingsFresh.
type settings struct {
	policies freshCache[Policy]
	envs     freshCache[Environment]
}

// drop forgets repo's settings (it is being written).
func (s *settings) drop(repo string) {
	s.policies.drop(repo)
	s.envs.drop(repo)
}

// settingsFresh bounds how long a setting read from the store is used
// without reading it again (what another node of a cluster changed).
const settingsFresh = 5 * time.Second

// freshCache holds values by repository for settingsFresh after they
// were read. gen counts the drops, so a read that raced a write never
// stores what it read before it: get returns the generation to hand
// back to put.
type freshCache[T any] struct {
	mu  sync.Mutex
	gen uint64
	m   map[string]cached[T]
}

type cached[T any] struct {
	v  T
	at time.Time
}

// get returns repo's value if it was read within settingsFresh, and the
// generation a read from the store must pass to put.
func (c *freshCache[T]) get(repo string) (T, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[repo]
	if ok && time.Since(e.at) < settingsFresh {
		return e.v, c.gen, true
	}
	var zero T
	return zero, c.gen, false
}

// put keeps v, read from the store at at, unless a drop came since get
// returned gen.
func (c *freshCache[T]) put(repo string, gen uint64, v T, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.m == nil {
		c.m = map[string]cached[T]{}
	}
	c.m[repo] = cached[T]{v: v, at: at}
}

func (c *freshCache[T]) drop(repo string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.m, repo)
}
