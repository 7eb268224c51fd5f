//go:build linux

package workdir

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// nsAttr starts the helper in new user, mount, PID, IPC, UTS and cgroup
// namespaces (and network, when asked), as the
// daemon's own user mapped to root inside, so that no privilege is needed
// where the kernel allows unprivileged user namespaces.
//
// Go starts a process in a new user namespace with a full fork, not the
// vfork it uses otherwise: the copy of the parent's page tables costs in
// proportion to the parent's memory (over 100 ms from a process with
// 400 MB of heap, against 5 ms for a plain start). So the daemon starts
// its commands' helper plainly and the helper, a small fresh process,
// starts itself again with these (helperOuter); only the probe uses
// them from the daemon directly.
func (m *Manager) nsAttr(newNet bool) *syscall.SysProcAttr { return nsAttr(newNet) }

func nsAttr(newNet bool) *syscall.SysProcAttr {
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
		syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | unix.CLONE_NEWCGROUP)
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

// plainAttr starts a command without namespaces (isolation unavailable):
// its own process group, killed if the daemon's thread dies.
func plainAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// namespaces says whether this platform has the namespaces commands are
// isolated in (the probe then says whether the kernel grants them).
func namespaces() error { return nil }

// syncFS syncs the file system that holds dir.
func syncFS(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Syncfs(fd)
}
