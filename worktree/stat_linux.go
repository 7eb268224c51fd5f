package worktree

import (
	"io/fs"
	"syscall"
	"time"

	"github.com/sessiond/sessiond/gitstore"
)

// statOf is the stat data git keeps of fi in an index entry.
func statOf(fi fs.FileInfo) gitstore.IndexStat {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return gitstore.IndexStat{MTime: fi.ModTime(), Size: uint32(fi.Size())}
	}
	return gitstore.IndexStat{
		CTime: time.Unix(st.Ctim.Sec, st.Ctim.Nsec), MTime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec),
		Dev: uint32(st.Dev), Ino: uint32(st.Ino), UID: st.Uid, GID: st.Gid, Size: uint32(st.Size),
	}
}
