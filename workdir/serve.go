package workdir

import (
	"context"
	"sync"
	"time"
)

// Service is a command that outlives the request that started it (a
// development server, say): it runs on the scratch's view, in a
// sandbox of its own, while the session's commands come and go.
type Service struct {
	cancel   context.CancelFunc
	termOnce sync.Once
	term     chan struct{}
	done     chan struct{}
	res      Result
	err      error
}

// Serve starts c as a service on the view the scratch was prepared for
// (between Prepare and Settle). It holds the base checkout itself until
// the service ends. The service ends by Stop, by its own exit, or when
// the Manager closes.
func (s *Scratch) Serve(c Command) (*Service, error) {
	lower, release, err := s.m.cache.Acquire(context.Background(), s.repo, s.st.BaseTree)
	if err != nil {
		return nil, err
	}
	// The environment layer the view stacks is held as long too.
	releaseEnv := s.m.envs.hold(s.st.Env)
	release = func(base func()) func() { return func() { releaseEnv(); base() } }(release)
	c.service = true
	c.pres = s.newLayer(s.st.Mode, lower, s.st.Env).present()
	unhold := func() {}
	if c.pres.Overlay {
		// One mount of the view for the session's services and
		// commands while services run (share.go).
		sh, err := s.holdShared(c.pres)
		if err != nil {
			release()
			return nil, err
		}
		c.pres.Attach = sh.sock
		unhold = s.unholdShared
	}
	c.Timeout = 0
	ctx, cancel := context.WithCancel(context.Background())
	sv := &Service{cancel: cancel, term: make(chan struct{}), done: make(chan struct{})}
	c.Term = sv.term
	go func() {
		defer close(sv.done)
		defer release()
		defer unhold()
		sv.res, sv.err = s.m.run(ctx, s, c)
	}()
	return sv, nil
}

// Stop asks the service to end (SIGTERM to its process group), and after
// grace kills its whole tree; it returns once the service ended.
func (sv *Service) Stop(grace time.Duration) {
	sv.termOnce.Do(func() { close(sv.term) })
	select {
	case <-sv.done:
	case <-time.After(grace):
		sv.cancel()
		<-sv.done
	}
	sv.cancel()
}

// Kill ends the service's whole tree at once.
func (sv *Service) Kill() {
	sv.cancel()
	<-sv.done
}

// Done is closed once the service ended.
func (sv *Service) Done() <-chan struct{} { return sv.done }

// Result is how the service ended (after Done).
func (sv *Service) Result() (Result, error) {
	<-sv.done
	return sv.res, sv.err
}

// CaptureNow lists what changed in the view against v, trusting no file
// stat data newer than now: processes that outlive the commands
// (services) may have written at any time.
func (s *Scratch) CaptureNow(ctx context.Context, v View, maxFile int64) ([]Change, error) {
	return s.layer.capture(ctx, v, time.Now().UnixNano(), maxFile)
}
