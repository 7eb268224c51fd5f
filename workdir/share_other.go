//go:build !linux

package workdir

import "os"

// Overlay mode is Linux's: elsewhere there is no mount to share.

func cloneShared(string) (*os.File, error) { return nil, ErrUnsupported }

func (m *Manager) startHolder(*Scratch, presentation, string) (func(), <-chan struct{}, error) {
	return nil, nil, ErrUnsupported
}
