package workdir

// CachesIdle waits until no trim or sweep of the tool caches runs (for
// tests).
func (m *Manager) CachesIdle() { m.tools.idle() }

// CachesDir is the directory of repo's shared tool caches (for tests).
func (m *Manager) CachesDir(repo string) string {
	d, _ := m.tools.repoDir(repo)
	return d
}
