//go:build linux

package workdir

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// sweepMaxDepth is the deepest a scratch's tree is walked. A deeper tree
// is no build's output; sweep counts it as over any bound (so the
// command that made it is killed and the scratch keeps only what the
// record holds) rather than holding a descriptor per level without end.
const sweepMaxDepth = 1024

// sweepTooDeep is what sweep returns for a tree deeper than
// sweepMaxDepth: more than any bound.
const sweepTooDeep = int64(1) << 62

// sweep walks the files below dir: it removes every setuid and setgid
// bit and file capability (the scratch never keeps them: a command could
// leave one for a later use outside), and returns the disk space the
// files take (blocks, as du counts them; a hard-linked file once).
//
// It runs while a command may still be changing the tree (the scratch
// watch), so it never resolves a path a command could have planted: each
// directory is opened relative to its parent's descriptor with
// O_NOFOLLOW, each entry is looked at with fstatat without following a
// link, and a file is changed only through an O_PATH descriptor of the
// very inode it checked (by /proc/self/fd), so a symlink or a directory
// swapped in meanwhile leads nowhere outside the scratch. A directory a
// command made unreadable (mode 0) is given back to its owner, the
// daemon's user, so nothing hides from the count.
func sweep(dir string) int64 {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	w := sweeper{seen: map[[2]uint64]bool{}, uid: uint32(os.Geteuid())}
	w.dir(fd, 0)
	if w.tooDeep {
		return sweepTooDeep
	}
	return w.total
}

type sweeper struct {
	total   int64
	seen    map[[2]uint64]bool
	uid     uint32
	tooDeep bool
}

// dir sweeps the directory open at fd, and closes it.
func (w *sweeper) dir(fd, depth int) {
	f := os.NewFile(uintptr(fd), "")
	defer f.Close()
	if depth > sweepMaxDepth {
		w.tooDeep = true
		return
	}
	names, _ := f.Readdirnames(-1)
	for _, name := range names {
		var st unix.Stat_t
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue // gone meanwhile
		}
		typ := st.Mode & unix.S_IFMT
		if st.Nlink > 1 && typ != unix.S_IFDIR {
			k := [2]uint64{st.Dev, st.Ino}
			if w.seen[k] {
				continue
			}
			w.seen[k] = true
		}
		w.total += st.Blocks * 512
		switch typ {
		case unix.S_IFDIR:
			if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
				w.strip(fd, name, unix.S_IFDIR, false)
			}
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == unix.EACCES && st.Uid == w.uid {
				w.chmodAt(fd, name, unix.S_IFDIR, (st.Mode&0o7777)|0o700)
				sub, err = unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
			if err != nil {
				continue
			}
			w.dir(sub, depth+1)
		case unix.S_IFREG:
			setid := st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0
			if setid || st.Mode&0o111 != 0 {
				w.strip(fd, name, unix.S_IFREG, st.Mode&0o111 != 0)
			}
		}
	}
}

// strip removes the setuid and setgid bits of the entry name of the
// directory at dirfd if it is still of type typ, and its file
// capabilities when caps is set.
func (w *sweeper) strip(dirfd int, name string, typ uint32, caps bool) {
	pfd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if unix.Fstat(pfd, &st) != nil || st.Mode&unix.S_IFMT != typ {
		return
	}
	self := "/proc/self/fd/" + strconv.Itoa(pfd)
	if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		_ = unix.Chmod(self, st.Mode&0o1777)
	}
	if caps {
		_ = unix.Removexattr(self, "security.capability")
	}
}

// chmodAt sets the mode of the entry name of the directory at dirfd, if
// it is still of type typ.
func (w *sweeper) chmodAt(dirfd int, name string, typ, mode uint32) {
	pfd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if unix.Fstat(pfd, &st) != nil || st.Mode&unix.S_IFMT != typ {
		return
	}
	_ = unix.Chmod("/proc/self/fd/"+strconv.Itoa(pfd), mode)
}

// hiddenBytes is the disk space held by files the processes of the tree
// below pid (the helper) unlinked but keep open or mapped: gone from the
// scratch's tree, they still fill its file system. Files on tmpfs mounts
// (the private temporary directories, memfd) are left out: their own
// size bounds them.
func hiddenBytes(pid int) int64 {
	var total int64
	seen := map[[2]uint64]bool{}
	for _, p := range processTree(pid) {
		dir := "/proc/" + strconv.Itoa(p)
		for _, sub := range []string{"/fd", "/map_files"} {
			ents, err := os.ReadDir(dir + sub)
			if err != nil {
				continue
			}
			for _, e := range ents {
				at := dir + sub + "/" + e.Name()
				var st unix.Stat_t
				if unix.Stat(at, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 0 {
					continue
				}
				k := [2]uint64{st.Dev, st.Ino}
				if seen[k] {
					continue
				}
				seen[k] = true
				var fs unix.Statfs_t
				if unix.Statfs(at, &fs) == nil && fs.Type == unix.TMPFS_MAGIC {
					continue
				}
				total += st.Blocks * 512
			}
		}
	}
	return total
}

// processTree lists pid and all its descendants, from /proc.
func processTree(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out) && i < 1<<16; i++ {
		out = append(out, children(strconv.Itoa(out[i]))...)
	}
	return out
}
