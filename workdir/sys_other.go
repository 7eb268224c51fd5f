//go:build !linux

package workdir

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// sweep walks the files below dir (elsewhere than Linux commands run
// unisolated, as the daemon's user, so a walk by path is all it needs): it removes every setuid and setgid
// bit and file capability (the scratch never keeps them: a command could
// leave one for a later use outside), and returns the disk space the
// files take (blocks, as du counts them; a hard-linked file once).
func sweep(dir string) int64 {
	var total int64
	seen := map[[2]uint64]bool{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		m := fi.Mode()
		if m&(fs.ModeSetuid|fs.ModeSetgid) != 0 && (m.IsRegular() || m.IsDir()) {
			_ = os.Chmod(p, m.Perm()|(m&fs.ModeSticky))
		}
		if m.IsRegular() && m&0o111 != 0 {
			dropFileCaps(p)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			total += fi.Size()
			return nil
		}
		if st.Nlink > 1 && !d.IsDir() {
			k := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
			if seen[k] {
				return nil
			}
			seen[k] = true
		}
		total += int64(st.Blocks) * 512
		return nil
	})
	return total
}

// hiddenBytes: elsewhere than Linux no /proc tells what a process holds
// open; the scratch's tree is all that is counted.
func hiddenBytes(int) int64 { return 0 }
