package tmpfs

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMount: the directory is a tmpfs of the size asked for, seen by the
// child only, and writing past its size fails with ENOSPC.
func TestMount(t *testing.T) {
	dir, ok := Mount(t, 1<<20)
	if !ok {
		return
	}
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &st))
	const tmpfsMagic = 0x01021994
	assert.EqualValues(t, tmpfsMagic, st.Type, "a tmpfs")
	assert.EqualValues(t, 1<<20, st.Blocks*uint64(st.Bsize), "of the size asked for")
	f, err := os.Create(filepath.Join(dir, "fill"))
	require.NoError(t, err)
	defer f.Close()
	written := 0
	for {
		n, err := f.Write(make([]byte, 64<<10))
		written += n
		if err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			break
		}
		require.Less(t, written, 2<<20, "never full")
	}
	assert.LessOrEqual(t, written, 1<<20)
}

// TestMountUnprivileged runs TestMount again as a user without privilege
// ("nobody"), where only a user namespace lets it mount.
func TestMountUnprivileged(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("not root: TestMount itself runs without privilege")
	}
	// Not t.TempDir: its parent is the test's own, closed to others.
	dir, err := os.MkdirTemp("", "sessiond-tmpfs-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "tmpfs.test")
	src, err := os.Open(os.Args[0])
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())

	const nobody = 65534
	cmd := exec.Command(bin, "-test.count=1", "-test.v", "-test.run", "^TestMount$")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + dir,
		"SESSIOND_TEST_REQUIRE_ISOLATION=" + os.Getenv("SESSIOND_TEST_REQUIRE_ISOLATION")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	require.NoError(t, os.Chmod(dir, 0o777))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "as uid %d:\n%s", nobody, out)
	if strings.Contains(string(out), "--- SKIP: TestMount ") {
		t.Skipf("as uid %d the kernel gives no user namespace:\n%s", nobody, out)
	}
	assert.Contains(t, string(out), "--- PASS: TestMount ", "%s", out)
}
