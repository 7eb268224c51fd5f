// Package tmpfs gives a test a small tmpfs of its own, to fill: the test
// runs again in a child process with a mount namespace of its own (and,
// when it is not root, a user namespace in which it may mount), where the
// tmpfs is mounted. Nothing of it is seen outside that process, and no
// privilege is needed where the kernel gives unprivileged user
// namespaces.
package tmpfs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// Environment of the child: the mount point, and the test that mounts it.
const (
	dirEnv  = "SESSIOND_TMPFS_DIR"
	testEnv = "SESSIOND_TMPFS_TEST"
)

// Mount gives t a directory with a tmpfs of size bytes on it. In the test
// binary's own process it runs t again in a child process in its own mount
// namespace, makes the child's result t's, and returns ok false: t then
// returns at once. In the child it mounts the tmpfs and returns its
// directory and ok true: t's body runs there. Where the kernel gives no
// mount namespace, t is skipped, or fails when
// SESSIOND_TEST_REQUIRE_ISOLATION=1 (as CI runs).
func Mount(t *testing.T, size int64) (dir string, ok bool) {
	t.Helper()
	if os.Getenv(testEnv) == t.Name() {
		dir := os.Getenv(dirEnv)
		opts := fmt.Sprintf("size=%d,mode=0700", size)
		if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
			t.Fatalf("mount a tmpfs of %d bytes on %s: %v", size, dir, err)
		}
		t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
		return dir, true
	}
	dir = t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run="+runPattern(t.Name()), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), dirEnv+"="+dir, testEnv+"="+t.Name())
	if os.Getuid() == 0 {
		// A mount namespace of its own; Go makes its mounts private, so
		// nothing propagates back.
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	} else {
		// A user namespace where the test's user is root, and a mount
		// namespace it owns: its mounts are slaves of the host's, so
		// nothing propagates back either.
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
			GidMappingsEnableSetgroups: false,
		}
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		// The child never ran: the kernel refused the namespaces.
		if os.Getenv("SESSIOND_TEST_REQUIRE_ISOLATION") == "1" {
			t.Fatalf("SESSIOND_TEST_REQUIRE_ISOLATION=1: no mount namespace for a tmpfs of its own (uid %d): %v", os.Getuid(), err)
		}
		t.Skipf("no mount namespace for a tmpfs of its own (uid %d; the kernel refused it: %v)", os.Getuid(), err)
	}
	if err != nil {
		t.Fatalf("in its own mount namespace: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" ") {
		t.Fatalf("in its own mount namespace, %s did not pass:\n%s", t.Name(), out)
	}
	t.Logf("ran on a tmpfs of %d bytes in its own mount namespace", size)
	if testing.Verbose() {
		t.Logf("its output:\n%s", out)
	}
	return "", false
}

// runPattern is the -test.run pattern of exactly the test named name
// (subtests included: one anchored pattern per level).
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}
