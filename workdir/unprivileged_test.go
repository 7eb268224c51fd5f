package workdir_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// outsideEnv names, for a run as another user, a directory outside the
// view it may write (the package directory is not its own).
const outsideEnv = "SESSIOND_TEST_OUTSIDE"

// unprivilegedUID is the user the suite runs as again ("nobody").
const unprivilegedUID = 65534

// TestConformanceUnprivileged runs this package's tests again as a user
// without privilege, where the namespaces are the only way to mount (the
// daemon is not meant to run as root). Run as another user already, the
// whole suite is that run.
func TestConformanceUnprivileged(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("not root: the suite itself runs without privilege")
	}
	plainRunOnly(t, "the whole suite again as a user without privilege")
	// The test binary, a home and an outside directory the user can reach.
	dir, err := os.MkdirTemp("", "sessiond-unprivileged-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "workdir.test")
	copyFile(t, os.Args[0], bin)
	home := filepath.Join(dir, "home")
	require.NoError(t, os.Mkdir(home, 0o755))
	require.NoError(t, os.Chown(home, unprivilegedUID, unprivilegedUID))
	out, err := os.MkdirTemp(outsideRoot(), "unprivileged-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(out) })
	require.NoError(t, os.Chown(out, unprivilegedUID, unprivilegedUID))

	cmd := exec.Command(bin, "-test.count=1", "-test.v", "-test.run", "^Test", "-test.skip", "^TestConformanceUnprivileged$")
	cmd.Dir = home
	// Isolation is required there as here: a helper that fails for want
	// of privilege must fail the run, not skip it.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, outsideEnv + "=" + out,
		"SESSIOND_TEST_REQUIRE_ISOLATION=" + os.Getenv("SESSIOND_TEST_REQUIRE_ISOLATION")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: unprivilegedUID, Gid: unprivilegedUID}}
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "as uid %d:\n%s", unprivilegedUID, output)
	// Skips there are worth seeing here (a kernel that refuses
	// unprivileged user namespaces makes the isolated cases skip).
	for _, m := range regexp.MustCompile(`(?m)^\s*--- SKIP: .*$`).FindAll(output, -1) {
		t.Log(string(m))
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
}
