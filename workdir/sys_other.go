//go:build !linux

package workdir

import (
	"fmt"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Outside Linux there are no user and mount namespaces nor overlayfs:
// view directories are copies and commands run unisolated.

func (m *Manager) nsAttr(bool) *syscall.SysProcAttr { return plainAttr() }

func plainAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func namespaces() error {
	return fmt.Errorf("%w: no user and mount namespaces on %s", ErrUnsupported, runtime.GOOS)
}

// syncFS syncs every file system (there is no syncfs here).
func syncFS(string) error {
	unix.Sync()
	return nil
}

func dropFileCaps(string) {}
