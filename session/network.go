package session

import (
	"context"
	"fmt"

	"github.com/sessiond/sessiond/egress"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/repos"
	"github.com/sessiond/sessiond/workdir"
)

// Network is what a command of a repository that asks for the network
// gets, under the repository's exec policy and the daemon's flags: the
// host's network (Host), or the allowlist's destinations through an
// egress proxy of its own (Proxy), which remembers what it refused.
// The zero value is the command's own loopback only.
type Network struct {
	Host  bool
	Proxy *egress.Proxy
}

// Apply sets the command's network.
func (n Network) Apply(c *workdir.Command) {
	c.Network = n.Host
	if n.Proxy != nil {
		c.Egress = n.Proxy
	}
}

// Refused lists the destinations the proxy refused (the command has
// run): host names or addresses as the command asked for them.
func (n Network) Refused() []string {
	if n.Proxy == nil {
		return nil
	}
	return n.Proxy.Refused()
}

// NetworkFor is the network a command of repo gets when it asks for one
// (want; without it, its own loopback): record.ErrForbidden when neither
// the policy nor the daemon allows any. Environment setup asks it too,
// so a setup reaches what the repository's commands may and no more.
// Each call makes a new proxy: one per command, so its refusals are the
// command's.
func (m *Executor) NetworkFor(ctx context.Context, repo string, want bool) (Network, error) {
	if !want {
		return Network{}, nil
	}
	p, err := m.repos.Policy(ctx, repo)
	if err != nil {
		return Network{}, err
	}
	return m.networkOf(p.Exec, repo, want)
}

// networkOf is NetworkFor with the repository's exec policy at hand.
func (m *Executor) networkOf(p repos.ExecPolicy, repo string, want bool) (Network, error) {
	if !want {
		return Network{}, nil
	}
	mode, allow, err := p.NetworkFor()
	if err != nil {
		return Network{}, err
	}
	switch {
	case mode == repos.NetworkAllowlist:
		return Network{Proxy: egress.New(allow, nil)}, nil
	case !m.exec.HostNetwork:
		return Network{}, fmt.Errorf("%w: network: this daemon does not let commands share the host's network (without an admin token, any process there could drive its API; start it with --exec-host-network to allow it, or give the repository's policy an allowlist, exec.network {\"allow\": [...]})", record.ErrForbidden)
	case mode == repos.NetworkHost:
		return Network{Host: true}, nil
	}
	return Network{}, fmt.Errorf("%w: network: the policy of repository %q gives commands no network (an admin sets exec.network to true, the host's, or {\"allow\": [...]}, an allowlist, in PUT /v1/repos/%s/policy)", record.ErrForbidden, repo, repo)
}
