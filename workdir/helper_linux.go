//go:build linux

package workdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	if spec := os.Getenv(helperEnv); spec != "" {
		if os.Getenv(helperOuterEnv) != "" {
			os.Exit(helperOuter(spec))
		}
		os.Exit(helperMain(spec))
	}
}

// helperOuter is the helper's first stage: it starts the second in the
// namespaces, with the same standard streams and status pipe, and waits
// for it. The second stage stays in this process group, so killing the
// group kills both, and dies with this one (its parent-death signal is
// tied to this thread).
func helperOuter(specJSON string) int {
	status := os.NewFile(3, "status")
	var spec helperSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		_ = json.NewEncoder(status).Encode(helperStatus{Error: "spec: " + err.Error()})
		return 125
	}
	runtime.LockOSThread()
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = []string{helperEnv + "=" + specJSON}
	cmd.SysProcAttr = nsAttr(spec.NewNet)
	cmd.SysProcAttr.Setpgid = false
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{status}
	if err := cmd.Start(); err != nil {
		_ = json.NewEncoder(status).Encode(helperStatus{Error: "start in new namespaces: " + err.Error()})
		return 125
	}
	status.Close()
	_ = cmd.Wait()
	if cmd.ProcessState == nil {
		return 125
	}
	return cmd.ProcessState.ExitCode()
}

func helperMain(specJSON string) int {
	began := time.Now().UnixNano()
	// The command must not inherit the status pipe.
	unix.CloseOnExec(3)
	status := os.NewFile(3, "status")
	enc := json.NewEncoder(status)
	var spec helperSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		_ = enc.Encode(helperStatus{Error: "spec: " + err.Error()})
		return 125
	}
	if err := setupMounts(spec); err != nil {
		_ = enc.Encode(helperStatus{Error: err.Error()})
		return 125
	}
	if spec.Probe {
		_ = enc.Encode(helperStatus{Exited: true})
		return 0
	}
	for _, kv := range spec.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			os.Setenv("PATH", v)
		}
	}
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Dir, cmd.Env = spec.Cwd, spec.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	started := time.Now().UnixNano()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "sessiond: %s: %v\n", spec.Argv[0], unwrapExec(err))
		_ = enc.Encode(helperStatus{Started: started, Began: began})
		_ = enc.Encode(helperStatus{Exited: true, Code: 127})
		return 0
	}
	_ = enc.Encode(helperStatus{Started: started, Began: began})
	err := cmd.Wait()
	st := helperStatus{Exited: true}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		st.Code, st.Signal = 128+int(ws.Signal()), unix.SignalName(ws.Signal())
	} else if cmd.ProcessState != nil {
		st.Code = cmd.ProcessState.ExitCode()
	} else if err != nil {
		st.Code = 126
	}
	_ = enc.Encode(st)
	return 0
}

// scratchDirs are the directories a command may write beside the view
// and its home: private, empty and gone when it ends.
var scratchDirs = []string{"/tmp", "/var/tmp", "/dev/shm"}

// setupMounts runs inside the new namespaces: the view and the home
// directory are opened as detached mounts first (they are under the data
// directory, which is hidden next); then every mount of the file system
// is made read-only, so that a write that leaves the view (through a
// symlink to an outside directory, or by an absolute path) fails with
// EROFS instead of landing where nothing captures it or undoes it; then
// empty tmpfs mounts cover the data directory and the repositories
// (read-only too) and the scratch directories (writable), and the view
// and the home directory are attached at their paths inside them.
func setupMounts(spec helperSpec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	view, err := openView(spec.View)
	if err != nil {
		return err
	}
	home := -1
	if spec.Home != "" {
		if home, err = unix.OpenTree(unix.AT_FDCWD, spec.Home, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC); err != nil {
			return fmt.Errorf("open home: %w", err)
		}
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("make the file system read-only: %w", err)
	}
	type cover struct {
		path     string
		writable bool
	}
	var covers []cover
	for _, p := range scratchDirs {
		covers = append(covers, cover{p, true})
	}
	for _, p := range spec.Hide {
		covers = append(covers, cover{p, false})
	}
	sort.SliceStable(covers, func(i, j int) bool { return len(covers[i].path) < len(covers[j].path) })
	var readOnly []string
	for _, c := range covers {
		p := filepath.Clean(c.path)
		if p == "/" || !filepath.IsAbs(p) {
			continue
		}
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			if !errors.Is(err, os.ErrNotExist) {
				continue
			}
			// Hidden already by a shallower tmpfs: make room for the
			// mount (it only matters if something below is attached
			// later). Elsewhere the file system is read-only and a path
			// that does not exist needs no cover.
			if err := os.MkdirAll(p, 0o755); err != nil {
				continue
			}
		}
		opts := "mode=0755"
		if c.writable {
			opts = "mode=1777"
		}
		if err := unix.Mount("tmpfs", p, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("hide %s: %w", p, err)
		}
		if !c.writable {
			readOnly = append(readOnly, p)
		}
	}
	if err := attach(view, spec.Target); err != nil {
		return fmt.Errorf("mount view: %w", err)
	}
	if home >= 0 {
		if err := attach(home, spec.Home); err != nil {
			return fmt.Errorf("mount home: %w", err)
		}
	}
	// The covers were writable to make the mount points below them; the
	// mounts attached there stay writable.
	for _, p := range readOnly {
		if err := unix.MountSetattr(unix.AT_FDCWD, p, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	// A /proc of the new PID namespace; where the kernel refuses, the
	// old one stays (it only shows more).
	_ = unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	return nil
}

func openView(p presentation) (int, error) {
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
	for _, kv := range [][2]string{{"lowerdir", p.Lower}, {"upperdir", p.Upper}, {"workdir", p.Work}} {
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

func attach(fd int, target string) error {
	defer unix.Close(fd)
	if err := os.MkdirAll(target, 0o755); err != nil {
		return err
	}
	return unix.MoveMount(fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH)
}
