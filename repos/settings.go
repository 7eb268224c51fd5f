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
// cluster is seen within settingsFresh. gen counts the drops, so a read
// that raced a write never stores what it read before it.
type settings struct {
	mu       sync.Mutex
	gen      uint64
	policies map[string]cached[Policy]
	envs     map[string]cached[Environment]
}

type cached[T any] struct {
	v  T
	at time.Time
}

// settingsFresh bounds how long a setting read from the store is used
// without reading it again (what another node of a cluster changed).
const settingsFresh = 5 * time.Second

func (s *settings) policy(repo string) (Policy, uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.policies[repo]
	if ok && time.Since(c.at) < settingsFresh {
		return c.v, s.gen, true
	}
	return Policy{}, s.gen, false
}

func (s *settings) putPolicy(repo string, gen uint64, p Policy, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen != s.gen {
		return
	}
	if s.policies == nil {
		s.policies = map[string]cached[Policy]{}
	}
	s.policies[repo] = cached[Policy]{v: p, at: at}
}

func (s *settings) environment(repo string) (Environment, uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.envs[repo]
	if ok && time.Since(c.at) < settingsFresh {
		return c.v, s.gen, true
	}
	return Environment{}, s.gen, false
}

func (s *settings) putEnvironment(repo string, gen uint64, e Environment, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen != s.gen {
		return
	}
	if s.envs == nil {
		s.envs = map[string]cached[Environment]{}
	}
	s.envs[repo] = cached[Environment]{v: e, at: at}
}

// drop forgets repo's settings (it is being written).
func (s *settings) drop(repo string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	delete(s.policies, repo)
	delete(s.envs, repo)
}
