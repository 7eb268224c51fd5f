package workdir

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// nsAttr starts the helper in new user, mount and PID namespaces, as the
// daemon's own user mapped to root inside, so that no privilege is needed
// where the kernel allows unprivileged user namespaces.
func (m *Manager) nsAttr(newNet bool) *syscall.SysProcAttr {
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID)
	if newNet {
		flags |= syscall.CLONE_NEWNET
	}
	return &syscall.SysProcAttr{
		Cloneflags:                 flags,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Setpgid:                    true,
		Pdeathsig:                  syscall.SIGKILL,
	}
}

func unixSignalName(s syscall.Signal) string { return unix.SignalName(s) }
