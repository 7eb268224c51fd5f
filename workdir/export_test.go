package workdir

import (
	"os"
	"path/filepath"
)

// CommandCgroups lists the command cgroups left below the Manager's
// cgroup directories (every one is removed when its command ends).
func (m *Manager) CommandCgroups() []string {
	var out []string
	for _, base := range m.cgroups.bases() {
		ents, _ := os.ReadDir(base)
		for _, e := range ents {
			if e.IsDir() {
				out = append(out, filepath.Join(base, e.Name()))
			}
		}
	}
	return out
}
