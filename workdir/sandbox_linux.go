//go:build linux

package workdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The command's root. The second stage of the helper, PID 1 of new user,
// mount, PID, network, IPC, UTS and cgroup namespaces, builds it in one
// pass, in the order bubblewrap uses:
//
//  1. Mounts are made private, and the view (an overlay mount, or a clone
//     of the copy) and the home directory are opened as detached mounts.
//  2. A tmpfs becomes the new root, on a directory of the scratch, and the
//     host's file system is bound into it read-only, directory by
//     directory: where a directory holds nothing hidden it is bound whole
//     (with what is mounted below it); where it does, it is made anew and
//     each of its entries bound except the hidden ones. So the data
//     directory, the repositories, /run and every other hidden path are
//     absent, not covered: there is nothing below to uncover. (A hidden
//     path in a directory too large to rebuild is covered instead, by an
//     empty read-only mount.)
//  3. The mounts of its own: a fresh /proc of the new PID namespace (its
//     sys, sysrq-trigger, irq and bus read-only), a
//     minimal /dev (null, zero, full, random, urandom, tty, a new devpts
//     instance, /dev/shm), private size-bounded tmpfs mounts on /tmp and
//     /var/tmp, the view at its path, the home directory, further binds.
//     Every mount is nosuid; every writable one nodev as well.
//  4. pivot_root onto the new root, and the old one is detached.
//  5. Privilege goes, on the one thread that starts the command: the
//     capability bounding set is emptied (the command, uid 0 of the user
//     namespace, then gets no capability at execve: the permitted,
//     effective, inheritable and ambient sets are all empty),
//     no_new_privs is set, Landlock (where the kernel has it) limits
//     writes to the view, the home, the private temporary directories and
//     /dev, and scopes signals and abstract Unix sockets to the sandbox;
//     descriptors above 2 close at exec; the helper itself becomes
//     undumpable, so nothing inside can ptrace it or read its /proc
//     entries.
//
// No process inside can ever hold CAP_SYS_ADMIN over the mount namespace
// (only PID 1 does, and it runs nothing the command sends it), so no
// mount can be undone or changed; a user namespace a command makes for
// itself gets copies of the mounts that the kernel locks (MNT_LOCKED),
// so unmounting there uncovers nothing either.

// largeDir is the number of entries beyond which a directory holding a
// hidden path is bound whole with the hidden entries covered, instead of
// being rebuilt entry by entry.
const largeDir = 256

// rootPlan says how the host's tree appears in the new root: hide paths
// are absent, own paths get mounts of their own (the host's content is
// not shown there), and show paths are bound even below a hidden one.
type rootPlan struct {
	hide, own, show map[string]bool
	// below holds every strict ancestor of a hide, own or show path;
	// showBelow every strict ancestor of a show path.
	below, showBelow map[string]bool
	// late: the new root is read-only already, so each bind is made
	// read-only as it is made (shown paths inside mounts of its own).
	late bool
}

func newRootPlan(hide, own, show []string) *rootPlan {
	p := &rootPlan{hide: map[string]bool{}, own: map[string]bool{}, show: map[string]bool{},
		below: map[string]bool{}, showBelow: map[string]bool{}}
	add := func(set map[string]bool, paths []string, show bool) {
		for _, x := range paths {
			x = filepath.Clean(x)
			if !filepath.IsAbs(x) || x == "/" {
				continue
			}
			set[x] = true
			for d := filepath.Dir(x); ; d = filepath.Dir(d) {
				p.below[d] = true
				if show {
					p.showBelow[d] = true
				}
				if d == "/" {
					break
				}
			}
		}
	}
	add(p.hide, hide, false)
	add(p.own, own, false)
	add(p.show, show, true)
	return p
}

// bindHost binds the host's tree at host (a directory) into newRoot at
// the same path. allow: an ancestor is hidden, so only show paths and
// their ancestors appear (and host is not listed: the daemon may not be
// able to, as with a home it has no right to read).
func (p *rootPlan) bindHost(newRoot, host string, allow bool) error {
	if allow {
		return p.bindShown(newRoot, host)
	}
	ents, err := os.ReadDir(host)
	if errors.Is(err, fs.ErrPermission) && p.below[host] {
		// Something below is hidden (or shown, or has a mount of its
		// own), and what else is there the daemon cannot tell: only the
		// shown paths appear. Bound whole, a hidden directory below it
		// (the data directory in a home of mode 0711) would be there for
		// a command that knows its name, as the daemon's user may
		// traverse what it cannot list.
		return p.bindShown(newRoot, host)
	}
	if errors.Is(err, fs.ErrPermission) {
		// What the daemon cannot list, a command (its user) cannot
		// either, and nothing below it is hidden.
		if err := unix.Mount(host, filepath.Join(newRoot, host), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", host, err)
		}
		return p.readOnly(filepath.Join(newRoot, host))
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", host, err)
	}
	if len(ents) > largeDir && p.coverable(host) {
		return p.bindCovered(newRoot, host)
	}
	for _, e := range ents {
		c := filepath.Join(host, e.Name())
		dst := filepath.Join(newRoot, c)
		switch {
		case p.own[c]:
			// Its mount comes later; a symlink there stays one.
			if e.Type()&fs.ModeSymlink != 0 {
				if err := copySymlink(c, dst); err != nil {
					return err
				}
			}
		case p.show[c] && !p.below[c]:
			if err := p.bindAt(c, dst, e.Type()); err != nil {
				return err
			}
		case p.hide[c] && !p.show[c]:
			if p.showBelow[c] && e.IsDir() {
				if err := mkdirLike(c, dst); err != nil {
					return err
				}
				if err := p.bindHost(newRoot, c, true); err != nil {
					return err
				}
			}
		case p.below[c] && e.IsDir():
			if err := mkdirLike(c, dst); err != nil {
				return err
			}
			if err := p.bindHost(newRoot, c, false); err != nil {
				return err
			}
		default:
			if err := p.bindAt(c, dst, e.Type()); err != nil {
				return err
			}
		}
	}
	return nil
}

// bindShown binds, below the hidden directory host, only the show paths
// and the directories on the way to them.
func (p *rootPlan) bindShown(newRoot, host string) error {
	var names []string
	for x := range p.show {
		if filepath.Dir(x) == host {
			names = append(names, x)
		}
	}
	for x := range p.showBelow {
		if filepath.Dir(x) == host && x != host {
			names = append(names, x)
		}
	}
	sort.Strings(names)
	for _, c := range slices.Compact(names) {
		st, err := os.Lstat(c)
		if err != nil {
			continue // nothing there, or nothing the daemon may see
		}
		dst := filepath.Join(newRoot, c)
		switch {
		case p.show[c]:
			if p.below[c] && st.IsDir() {
				if err := mkdirLike(c, dst); err != nil {
					return err
				}
				if err := p.bindHost(newRoot, c, false); err != nil {
					return err
				}
			} else if err := p.bindAt(c, dst, st.Mode().Type()); err != nil {
				return err
			}
		case st.IsDir():
			if err := mkdirLike(c, dst); err != nil {
				return err
			}
			if err := p.bindHost(newRoot, c, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// coverable: below host there are only hidden paths (no mounts of its own
// or shown paths), each of which exists, so binding host whole and
// covering them hides the same.
func (p *rootPlan) coverable(host string) bool {
	prefix := host + "/"
	for x := range p.own {
		if strings.HasPrefix(x, prefix) {
			return false
		}
	}
	for x := range p.show {
		if strings.HasPrefix(x, prefix) {
			return false
		}
	}
	return true
}

// bindCovered binds host whole and covers every hidden path below it.
func (p *rootPlan) bindCovered(newRoot, host string) error {
	dst := filepath.Join(newRoot, host)
	if err := mkdirLike(host, dst); err != nil {
		return err
	}
	if err := unix.Mount(host, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", host, err)
	}
	if err := p.readOnly(dst); err != nil {
		return err
	}
	var covers []string
	for x := range p.hide {
		if strings.HasPrefix(x, host+"/") {
			covers = append(covers, x)
		}
	}
	sort.Strings(covers)
	for _, x := range covers {
		st, err := os.Lstat(x)
		if err != nil {
			continue // nothing there to hide
		}
		at := filepath.Join(newRoot, x)
		if st.IsDir() {
			err = unix.Mount("tmpfs", at, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0555")
		} else {
			err = unix.Mount("/dev/null", at, "", unix.MS_BIND, "")
		}
		if err == nil {
			err = p.readOnly(at)
		}
		if err != nil {
			return fmt.Errorf("cover %s: %w", x, err)
		}
	}
	return nil
}

// bindAt binds the host entry src (of type t) at dst: a directory or file
// by a recursive bind, a symlink by a symlink of its own; special files
// (sockets, fifos, devices) are left out.
func (p *rootPlan) bindAt(src, dst string, t fs.FileMode) error {
	switch {
	case t&fs.ModeSymlink != 0:
		return copySymlink(src, dst)
	case t.IsDir():
		if err := os.Mkdir(dst, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	case t.IsRegular():
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		f.Close()
	default:
		return nil
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // gone meanwhile
		}
		return fmt.Errorf("bind %s: %w", src, err)
	}
	return p.readOnly(dst)
}

// readOnly makes the mount at dst read-only, nosuid and nodev when the
// new root's own pass that does so for all has run already.
func (p *rootPlan) readOnly(dst string) error {
	if !p.late {
		return nil
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, dst, unix.AT_RECURSIVE,
		&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}); err != nil {
		return fmt.Errorf("read-only %s: %w", dst, err)
	}
	return nil
}

func copySymlink(src, dst string) error {
	target, err := os.Readlink(src)
	if err != nil {
		return err
	}
	if err := os.Symlink(target, dst); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// mkdirLike makes dst a directory with src's permission bits.
func mkdirLike(src, dst string) error {
	mode := fs.FileMode(0o755)
	if st, err := os.Stat(src); err == nil {
		mode = st.Mode().Perm()
	}
	if err := os.Mkdir(dst, mode); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Chmod(dst, mode)
}

// scratchDirs are the private tmpfs mounts a command may write beside the
// view and its home.
var scratchDirs = []string{"/tmp", "/var/tmp"}

// devNodes are the host's devices a command's /dev has.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// buildRoot builds the command's root on spec.Stage and pivots into it.
// It returns the directories Landlock lets the command write.
func buildRoot(spec helperSpec) (writable []string, err error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("make mounts private: %w", err)
	}
	view, err := openView(spec.View)
	if err != nil {
		return nil, err
	}
	defer unix.Close(view)
	home := -1
	if spec.HomeSrc != "" {
		if home, err = unix.OpenTree(unix.AT_FDCWD, spec.HomeSrc, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC); err != nil {
			return nil, fmt.Errorf("open home: %w", err)
		}
		defer unix.Close(home)
	}
	root := spec.Stage
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=16m"); err != nil {
		return nil, fmt.Errorf("new root: %w", err)
	}

	own := append([]string{"/proc", "/dev", "/sys", spec.Target}, scratchDirs...)
	if spec.Home != "" {
		own = append(own, spec.Home)
	}
	for _, b := range spec.Binds {
		own = append(own, b.Dst)
	}
	plan := newRootPlan(spec.Hide, own, spec.Show)
	if err := plan.bindHost(root, "/", false); err != nil {
		return nil, err
	}
	// /sys read-only (with the new network namespace's view of it where
	// the kernel gives one), never hidden paths below it.
	if err := mountSys(root, spec.NewNet); err != nil {
		return nil, err
	}

	// Mount points of the mounts to come, while the new root is writable.
	points := []string{"/proc", "/dev", spec.Target}
	points = append(points, scratchDirs...)
	if spec.Home != "" {
		points = append(points, spec.Home)
	}
	for _, b := range spec.Binds {
		points = append(points, b.Dst)
	}
	for _, p := range points {
		full := filepath.Join(root, p)
		if fi, err := os.Lstat(full); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			continue
		}
		if err := os.MkdirAll(full, 0o755); err != nil {
			return nil, fmt.Errorf("mount point %s: %w", p, err)
		}
	}
	// Everything bound from the host so far, and the new root itself:
	// read-only, nosuid, nodev.
	if err := unix.MountSetattr(unix.AT_FDCWD, root, unix.AT_RECURSIVE,
		&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}); err != nil {
		return nil, fmt.Errorf("make the host read-only: %w", err)
	}

	if err := mountProc(root); err != nil {
		return nil, err
	}
	if err := mountDev(root, spec.TmpBytes); err != nil {
		return nil, err
	}
	tmpOpts := "mode=1777"
	if spec.TmpBytes > 0 {
		tmpOpts += fmt.Sprintf(",size=%d", spec.TmpBytes)
	}
	for _, d := range scratchDirs {
		full := filepath.Join(root, d)
		if fi, err := os.Lstat(full); err != nil || !fi.IsDir() {
			continue
		}
		if err := unix.Mount("tmpfs", full, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, tmpOpts); err != nil {
			return nil, fmt.Errorf("mount %s: %w", d, err)
		}
		writable = append(writable, d)
	}
	if err := attach(view, filepath.Join(root, spec.Target)); err != nil {
		return nil, fmt.Errorf("mount view: %w", err)
	}
	writable = append(writable, spec.Target)
	if home >= 0 {
		if err := attach(home, filepath.Join(root, spec.Home)); err != nil {
			return nil, fmt.Errorf("mount home: %w", err)
		}
		writable = append(writable, spec.Home)
	}
	for _, b := range spec.Binds {
		at := filepath.Join(root, b.Dst)
		if err := unix.Mount(b.Src, at, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return nil, fmt.Errorf("bind %s: %w", b.Dst, err)
		}
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if b.Writable {
			attr.Attr_clr = unix.MOUNT_ATTR_RDONLY
			writable = append(writable, b.Dst)
		} else {
			attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
		}
		if err := unix.MountSetattr(unix.AT_FDCWD, at, unix.AT_RECURSIVE, attr); err != nil {
			return nil, fmt.Errorf("bind %s: %w", b.Dst, err)
		}
	}
	for _, p := range append([]string{spec.Target}, homeOf(spec)...) {
		if err := unix.MountSetattr(unix.AT_FDCWD, filepath.Join(root, p), unix.AT_RECURSIVE,
			&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}); err != nil {
			return nil, fmt.Errorf("nosuid %s: %w", p, err)
		}
	}
	// Shown paths inside mounts of its own (a host directory below /tmp,
	// say), now that those are there: read-only, with what is hidden
	// below them still hidden.
	plan.late = true
	for _, x := range spec.Show {
		if !plan.inOwn(x) || isBelow(x, spec.Target) {
			continue
		}
		st, err := os.Lstat(x)
		if err != nil {
			continue
		}
		dst := filepath.Join(root, x)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, fmt.Errorf("show %s: %w", x, err)
		}
		if plan.below[x] && st.IsDir() {
			if err := mkdirLike(x, dst); err != nil {
				return nil, err
			}
			err = plan.bindHost(root, x, false)
		} else {
			err = plan.bindAt(x, dst, st.Mode().Type())
		}
		if err != nil {
			return nil, err
		}
	}

	// pivot_root(".", ".") stacks the old root on the new one; detaching
	// it leaves the new root alone, with nothing of the old reachable.
	if err := unix.Chdir(root); err != nil {
		return nil, err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return nil, fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return nil, fmt.Errorf("detach the old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return nil, err
	}
	return append(writable, "/dev"), nil
}

// inOwn: x is at or below a path that has a mount of its own, so the
// host's tree never reached it.
func (p *rootPlan) inOwn(x string) bool {
	for o := range p.own {
		if isBelow(x, o) {
			return true
		}
	}
	return false
}

// isBelow: p is d or below it.
func isBelow(p, d string) bool { return p == d || strings.HasPrefix(p, d+"/") }

func homeOf(spec helperSpec) []string {
	if spec.Home == "" || spec.HomeSrc == "" {
		return nil
	}
	return []string{spec.Home}
}

// procReadOnly are the parts of /proc a command may read but never
// write, as bubblewrap has them: the kernel's settings (a command of a
// daemon running as root is uid 0 of the host to the sysctl files'
// permission check, which asks no capability of most), sysrq, the
// interrupts and the buses.
var procReadOnly = []string{"sys", "sysrq-trigger", "irq", "bus"}

// mountProc mounts a fresh /proc of the new PID namespace, with
// procReadOnly bound read-only over themselves.
func mountProc(root string) error {
	proc := filepath.Join(root, "proc")
	if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	for _, d := range procReadOnly {
		at := filepath.Join(proc, d)
		if _, err := os.Lstat(at); err != nil {
			continue // not in this kernel
		}
		if err := unix.Mount(at, at, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind /proc/%s: %w", d, err)
		}
		if err := unix.MountSetattr(unix.AT_FDCWD, at, unix.AT_RECURSIVE,
			&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}); err != nil {
			return fmt.Errorf("read-only /proc/%s: %w", d, err)
		}
	}
	return nil
}

// mountSys binds the host's /sys read-only; in a network namespace of
// its own, a fresh sysfs instead where the kernel allows it, so that
// /sys/class/net shows that namespace.
func mountSys(root string, newNet bool) error {
	dst := filepath.Join(root, "sys")
	if err := os.MkdirAll(dst, 0o555); err != nil {
		return err
	}
	if newNet {
		if err := unix.Mount("sysfs", dst, "sysfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err == nil {
			return nil
		}
	}
	if err := unix.Mount("/sys", dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind /sys: %w", err)
	}
	return nil
}

// mountDev makes a minimal /dev: a tmpfs with the host's harmless
// devices bound in, a devpts instance of its own and a private /dev/shm;
// the tmpfs itself is read-only once made.
func mountDev(root string, tmpBytes int64) error {
	dev := filepath.Join(root, "dev")
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for _, n := range devNodes {
		at := filepath.Join(dev, n)
		f, err := os.OpenFile(at, os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return err
		}
		f.Close()
		if err := unix.Mount("/dev/"+n, at, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", n, err)
		}
	}
	for _, d := range []string{"pts", "shm"} {
		if err := os.Mkdir(filepath.Join(dev, d), 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("devpts", filepath.Join(dev, "pts"), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620"); err != nil {
		return fmt.Errorf("mount /dev/pts: %w", err)
	}
	shm := "mode=1777"
	if tmpBytes > 0 {
		shm += fmt.Sprintf(",size=%d", tmpBytes)
	}
	if err := unix.Mount("tmpfs", filepath.Join(dev, "shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, shm); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	for name, target := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, dev, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("make /dev read-only: %w", err)
	}
	return nil
}

func openView(p presentation) (int, error) {
	if p.Attach != "" {
		return receiveView(p.Attach)
	}
	if !p.Overlay {
		fd, err := unix.OpenTree(unix.AT_FDCWD, p.Src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return -1, fmt.Errorf("open view: %w", err)
		}
		return fd, nil
	}
	fs, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("overlayfs: %w: %w", ErrUnsupported, err)
	}
	defer unix.Close(fs)
	if err := setLowers(fs, p); err != nil {
		return -1, err
	}
	for _, kv := range [][2]string{{"upperdir", p.Upper}, {"workdir", p.Work}} {
		if err := unix.FsconfigSetString(fs, kv[0], kv[1]); err != nil {
			return -1, fmt.Errorf("overlayfs %s: %w: %w", kv[0], ErrUnsupported, err)
		}
	}
	if err := unix.FsconfigSetFlag(fs, "userxattr"); err != nil {
		return -1, fmt.Errorf("overlayfs userxattr: %w: %w", ErrUnsupported, err)
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, fmt.Errorf("overlayfs: %w: %w", ErrUnsupported, err)
	}
	fd, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("overlayfs mount: %w: %w", ErrUnsupported, err)
	}
	return fd, nil
}

// setLowers gives the overlay its lower directories: the environment
// layer (when there is one) over the base checkout. Each is appended on
// its own ("lowerdir+", Linux 6.8), so no path needs escaping; older
// kernels take the colon-separated list, escaped.
func setLowers(fs int, p presentation) error {
	if p.Env == "" {
		if err := unix.FsconfigSetString(fs, "lowerdir", p.Lower); err != nil {
			return fmt.Errorf("overlayfs lowerdir: %w: %w", ErrUnsupported, err)
		}
		return nil
	}
	if unix.FsconfigSetString(fs, "lowerdir+", p.Env) == nil {
		if err := unix.FsconfigSetString(fs, "lowerdir+", p.Lower); err != nil {
			return fmt.Errorf("overlayfs lowerdir+: %w: %w", ErrUnsupported, err)
		}
		return nil
	}
	esc := strings.NewReplacer(`\`, `\\`, `:`, `\:`, `,`, `\,`)
	if err := unix.FsconfigSetString(fs, "lowerdir", esc.Replace(p.Env)+":"+esc.Replace(p.Lower)); err != nil {
		return fmt.Errorf("overlayfs lowerdir: %w: %w", ErrUnsupported, err)
	}
	return nil
}

func attach(fd int, target string) error {
	return unix.MoveMount(fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH)
}

// loopbackUp brings up lo in a new network namespace, so that a command
// can serve and reach its own services there.
func loopbackUp() error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr)
}

// dropPrivileges runs on the locked thread that then starts the command,
// which inherits what it sets: no_new_privs, an empty capability
// bounding set and ambient set, and (where the kernel has Landlock)
// writes only below writable (unless landlock is false, for tests). It
// returns the Landlock ABI applied (0: none).
func dropPrivileges(writable []string, landlock bool) (int, error) {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, fmt.Errorf("no_new_privs: %w", err)
	}
	abi := 0
	if landlock {
		var err error
		if abi, err = landlockRestrict(writable); err != nil {
			return 0, fmt.Errorf("landlock: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return 0, fmt.Errorf("clear ambient capabilities: %w", err)
	}
	for c := 0; c <= lastCap(); c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return 0, fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	// The inheritable set is empty in a new user namespace; say so anyway.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0, fmt.Errorf("capget: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return 0, fmt.Errorf("capset: %w", err)
	}
	return abi, nil
}

func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 63
	}
	n := 0
	for _, c := range strings.TrimSpace(string(b)) {
		if c < '0' || c > '9' {
			return 63
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// closeExtraFiles marks every descriptor from first up close-on-exec, so
// that nothing the daemon inherited reaches the command.
func closeExtraFiles(first int) {
	if _, _, e := syscall.Syscall(unix.SYS_CLOSE_RANGE, uintptr(first), ^uintptr(0), unix.CLOSE_RANGE_CLOEXEC); e == 0 {
		return
	}
	// Older kernels: one at a time, as far as the limit goes.
	var lim unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
	for fd := first; fd < int(min(lim.Cur, 1<<16)); fd++ {
		unix.CloseOnExec(fd)
	}
}
