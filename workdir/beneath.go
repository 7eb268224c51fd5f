package workdir

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/gitstore"
)

// A layer's directory is shared with the sandboxed processes that outlive
// the commands (services): while the daemon syncs, settles and captures,
// one of them may swap any directory or file of the view for a link out
// of it. So the daemon reaches a layer only through an os.Root of its
// directory (rootTree), whose resolution never leaves it, and below that
// through directory descriptors (dirAt) on which every call names a
// single entry and follows no link. The base checkouts and the
// environment layers, which only the daemon writes, are reached the same
// way by plain path (hostTree), which costs the kernel's own resolution
// and nothing more.

// tree is a directory the daemon writes and reads below.
type tree interface {
	// dir opens the directory p of the tree ("" for its top); with
	// create it makes it, and its missing parents, first.
	dir(p string, create bool) (*dirAt, error)
	// mkdirAll makes the directory p and its missing parents.
	mkdirAll(p string) error
}

// hostTree is a directory that only the daemon changes, reached by path.
type hostTree string

func (t hostTree) mkdirAll(p string) error { return os.MkdirAll(filepath.Join(string(t), p), 0o755) }

func (t hostTree) dir(p string, create bool) (*dirAt, error) {
	full := filepath.Join(string(t), p)
	open := func() (int, error) {
		return unix.Open(full, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	fd, err := open()
	if err == unix.ENOENT && create {
		if err := t.mkdirAll(p); err != nil {
			return nil, err
		}
		fd, err = open()
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	return &dirAt{fd: fd, name: full}, nil
}

// rootTree is a layer's directory, reached only beneath its root.
type rootTree struct{ r *os.Root }

// openLayerRoot opens the layer directory dir as a root, making it first
// when it is missing (a layer's first use). A directory a command made
// unreadable is made readable again.
func openLayerRoot(dir string) (rootTree, error) {
	r, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return rootTree{}, err
		}
		r, err = os.OpenRoot(dir)
	} else if errors.Is(err, fs.ErrPermission) {
		if err := os.Chmod(dir, 0o755); err != nil {
			return rootTree{}, err
		}
		r, err = os.OpenRoot(dir)
	}
	if err != nil {
		return rootTree{}, err
	}
	return rootTree{r: r}, nil
}

func (t rootTree) close() { t.r.Close() }

func (t rootTree) mkdirAll(p string) error {
	if p == "" {
		return nil
	}
	return t.r.MkdirAll(p, 0o755)
}

func (t rootTree) dir(p string, create bool) (*dirAt, error) {
	name := p
	if name == "" {
		name = "."
	}
	open := func() (*os.File, error) { return t.r.OpenFile(name, os.O_RDONLY|unix.O_DIRECTORY, 0) }
	f, err := open()
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := t.mkdirAll(p); err != nil {
			return nil, err
		}
		f, err = open()
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "dup", Path: f.Name(), Err: err}
	}
	return &dirAt{fd: fd, name: f.Name()}, nil
}

// removeAll removes name (and what is below it) beneath the root,
// making directories a command made read-only writable first.
func (t rootTree) removeAll(name string) error {
	err := t.r.RemoveAll(name)
	if err == nil {
		return nil
	}
	_ = fs.WalkDir(t.r.FS(), name, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = t.r.Chmod(p, 0o755)
		}
		return nil
	})
	return t.r.RemoveAll(name)
}

// clear removes everything below the root, keeping the directory itself
// (a live service's mount holds it).
func (t rootTree) clear() error {
	_ = t.r.Chmod(".", 0o755)
	d, err := t.dir("", false)
	if err != nil {
		return err
	}
	names, err := d.names()
	d.close()
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := t.removeAll(n); err != nil {
			return err
		}
	}
	return nil
}

// dirAt is an open directory: each of its calls names one entry of it
// and follows no link there, so nothing it does reaches outside it,
// however the tree around it changes meanwhile. Close it.
type dirAt struct {
	fd int
	// name is for errors.
	name string
}

func (d *dirAt) close() { unix.Close(d.fd) }

func (d *dirAt) err(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: d.name + "/" + name, Err: err}
}

// sub opens the directory name, which must not be a link.
func (d *dirAt) sub(name string) (*dirAt, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, d.err("openat", name, err)
	}
	return &dirAt{fd: fd, name: d.name + "/" + name}, nil
}

// names lists the directory's entries.
func (d *dirAt) names() ([]string, error) {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, d.err("openat", ".", err)
	}
	f := os.NewFile(uintptr(fd), d.name)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if errors.Is(err, fs.ErrNotExist) {
		// Removed since it was opened (by a service): it holds nothing.
		return nil, nil
	}
	return names, err
}

func (d *dirAt) lstat(name string, st *unix.Stat_t) error {
	if err := unix.Fstatat(d.fd, name, st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return d.err("fstatat", name, err)
	}
	return nil
}

// errNotRegular: a file read as a regular one was something else by the
// time it was opened (a link there fails the open itself).
var errNotRegular = errors.New("not a regular file")

// readFile reads the regular file name. It never follows a link and
// never waits on a FIFO or a device put there meanwhile.
func (d *dirAt) readFile(name string) ([]byte, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, d.err("openat", name, err)
	}
	f := os.NewFile(uintptr(fd), d.name+"/"+name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, d.err("fstat", name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, d.err("read", name, errNotRegular)
	}
	// As os.ReadFile: sized by the stat, grown if the file grew.
	b := make([]byte, 0, st.Size+1)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

func (d *dirAt) readlink(name string) (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(d.fd, name, buf)
		if err != nil {
			return "", d.err("readlinkat", name, err)
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

func (d *dirAt) mkdir(name string, perm uint32) error {
	if err := unix.Mkdirat(d.fd, name, perm); err != nil {
		return d.err("mkdirat", name, err)
	}
	return nil
}

// remove removes the entry name, not a directory.
func (d *dirAt) remove(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return d.err("unlinkat", name, err)
	}
	return nil
}

// rmdir removes the empty directory name.
func (d *dirAt) rmdir(name string) error {
	if err := unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR); err != nil {
		return d.err("unlinkat", name, err)
	}
	return nil
}

// create makes name (which must not exist) a file or symlink of git
// mode m holding data; st, when set, receives its stat.
func (d *dirAt) create(name string, m gitstore.Mode, data []byte, st *unix.Stat_t) error {
	if m == gitstore.ModeSymlink {
		if err := unix.Symlinkat(string(data), d.fd, name); err != nil {
			return d.err("symlinkat", name, err)
		}
		if st != nil {
			return d.lstat(name, st)
		}
		return nil
	}
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(fileMode(m)))
	if err != nil {
		return d.err("openat", name, err)
	}
	f := os.NewFile(uintptr(fd), d.name+"/"+name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	// The umask may have cut the execute bits.
	if m == gitstore.ModeExec {
		if err := f.Chmod(0o755); err != nil {
			f.Close()
			return err
		}
	}
	if st != nil {
		if err := unix.Fstat(fd, st); err != nil {
			f.Close()
			return d.err("fstat", name, err)
		}
	}
	return f.Close()
}

// whiteout makes name overlayfs's whiteout (a 0/0 character device).
func (d *dirAt) whiteout(name string) error {
	if err := unix.Mknodat(d.fd, name, unix.S_IFCHR, 0); err != nil {
		return d.err("mknodat", name, err)
	}
	return nil
}

// opaque reports whether the directory is marked opaque.
func (d *dirAt) opaque() bool {
	var buf [4]byte
	n, err := unix.Fgetxattr(d.fd, opaqueXattr, buf[:])
	return err == nil && n == 1 && buf[0] == 'y'
}

func (d *dirAt) setOpaque() error {
	if err := unix.Fsetxattr(d.fd, opaqueXattr, []byte("y"), 0); err != nil {
		return &fs.PathError{Op: "fsetxattr", Path: d.name, Err: err}
	}
	return nil
}

// isOpaque reports whether the directory p of t is marked opaque (false
// for anything else there, a link included).
func isOpaque(t tree, p string) bool {
	d, err := t.dir(parentOf(p), false)
	if err != nil {
		return false
	}
	defer d.close()
	s, err := d.sub(baseOf(p))
	if err != nil {
		return false
	}
	defer s.close()
	return s.opaque()
}

// readIgnoreFile reads dir's .gitignore when it is a regular file.
func readIgnoreFile(t tree, dir string) []byte {
	d, err := t.dir(dir, false)
	if err != nil {
		return nil
	}
	defer d.close()
	b, err := d.readFile(".gitignore")
	if err != nil {
		return nil
	}
	return b
}

// ensureDirs makes every ancestor of p in t a directory, removing files
// that stand in the way.
func ensureDirs(t tree, p string) error {
	dir := parentOf(p)
	if dir == "" {
		return nil
	}
	d, err := t.dir("", false)
	if err != nil {
		return err
	}
	for _, c := range strings.Split(dir, "/") {
		var st unix.Stat_t
		err := d.lstat(c, &st)
		if err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if err = d.remove(c); err != nil {
				d.close()
				return err
			}
			err = unix.ENOENT
		}
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				d.close()
				return err
			}
			if err := d.mkdir(c, 0o755); err != nil {
				d.close()
				return err
			}
		}
		next, err := d.sub(c)
		d.close()
		if err != nil {
			return err
		}
		d = next
	}
	d.close()
	return nil
}

// pruneDirs removes the empty directories below t on the way to each of
// paths (left by a refused write such as .git/config, or one below a
// hidden directory), deepest first. An empty directory is not part of
// the view: one that has a file shown has it on disk (copy) or in the
// upper directory, unless keep says the directory covers the base's.
func pruneDirs(t tree, paths []string, keep func(dir string) bool) {
	for _, p := range paths {
		for d := parentOf(p); d != ""; d = parentOf(d) {
			if keep != nil && keep(d) {
				break
			}
			parent, err := t.dir(parentOf(d), false)
			if err != nil {
				break
			}
			// Fails, and stops, where the directory is not empty.
			err = parent.rmdir(baseOf(d))
			parent.close()
			if err != nil {
				break
			}
		}
	}
}

func baseOf(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }
