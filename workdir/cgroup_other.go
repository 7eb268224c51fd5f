//go:build !linux

package workdir

// Outside Linux there are no cgroups: commands get rlimits.

type cgroups struct{ via, why string }

type cgroup struct{}

func detectCgroups(string) *cgroups  { return &cgroups{why: "no cgroups on this platform"} }
func (c *cgroups) available() bool   { return false }
func (g *cgroup) kill()              {}
func (g *cgroup) remove() bool       { return true }
func (c *cgroups) release(*cgroup)   {}
func (g *cgroup) exceeded() []string { return nil }

func (m *Manager) limit(*Scratch, *helperSpec, Limits) (*cgroup, []AppliedLimit, error) {
	return nil, nil, nil
}

func (c *cgroups) bases() map[string]string { return nil }
