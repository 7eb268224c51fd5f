//go:build linux

package workdir

import (
	"io/fs"
	"syscall"
	"time"
)

// accessTime is a file's last access time (zero where unknown).
func accessTime(info fs.FileInfo) time.Time {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Atim.Sec, st.Atim.Nsec)
	}
	return time.Time{}
}
