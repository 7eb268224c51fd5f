//go:build linux

package workdir

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock is the sandbox's second wall, behind the mounts: the command
// may read and execute anything its root shows, but write (create,
// remove, rename, truncate) only below the view, its home, the private
// temporary directories and the writable binds, and use devices only in
// /dev; where the kernel's ABI has them, it may neither signal processes
// outside the sandbox nor connect to abstract Unix sockets made outside
// it (the host's, when it shares the host's network), nor to Unix
// sockets by path outside the directories it may write.

// landlockFS is the file system access each ABI version handles.
func landlockFS(abi int) uint64 {
	switch {
	case abi >= 9:
		return unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX<<1 - 1
	case abi >= 5:
		return unix.LANDLOCK_ACCESS_FS_IOCTL_DEV<<1 - 1
	case abi >= 3:
		return unix.LANDLOCK_ACCESS_FS_TRUNCATE<<1 - 1
	case abi == 2:
		return unix.LANDLOCK_ACCESS_FS_REFER<<1 - 1
	case abi == 1:
		return unix.LANDLOCK_ACCESS_FS_MAKE_SYM<<1 - 1
	}
	return 0
}

func landlockABI() int {
	v, _, e := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0
	}
	return int(v)
}

// landlockRestrict restricts the calling thread (and what it starts) to
// write only below writable. Where the kernel has no Landlock it returns
// 0 and restricts nothing (the mounts are the wall).
func landlockRestrict(writable []string) (int, error) {
	abi := landlockABI()
	if abi < 1 {
		return 0, nil
	}
	handled := landlockFS(abi)
	// An older kernel takes the larger struct as long as what it does
	// not know is zero.
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	r, _, e := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return 0, fmt.Errorf("create ruleset: %w", e)
	}
	rs := int(r)
	defer unix.Close(rs)
	read := uint64(unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR)
	dev := read | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	type rule struct {
		path   string
		access uint64
	}
	rules := []rule{{"/", read}, {"/dev", dev}}
	for _, w := range writable {
		if w != "/dev" {
			rules = append(rules, rule{w, handled})
		}
	}
	for _, ru := range rules {
		fd, err := unix.Open(ru.path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return 0, fmt.Errorf("open %s: %w", ru.path, err)
		}
		pb := unix.LandlockPathBeneathAttr{Allowed_access: ru.access & handled, Parent_fd: int32(fd)}
		_, _, e := syscall.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rs), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&pb)), 0, 0, 0)
		unix.Close(fd)
		if e != 0 {
			return 0, fmt.Errorf("rule for %s: %w", ru.path, e)
		}
	}
	if _, _, e := syscall.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rs), 0, 0); e != 0 {
		return 0, fmt.Errorf("restrict: %w", e)
	}
	return abi, nil
}
