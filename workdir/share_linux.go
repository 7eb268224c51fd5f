//go:build linux

package workdir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// holdView is the helper's second stage for a shared view (spec.Hold):
// it mounts the view's overlay once, in its own mount namespace, and
// answers each connection to the socket spec.Hold with a clone of that
// mount (open_tree), passed as a descriptor, until its standard input
// ends. It runs nothing else.
func holdView(spec helperSpec, enc *json.Encoder) int {
	fail := func(err error) int {
		_ = enc.Encode(helperStatus{Error: err.Error()})
		return 125
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail(fmt.Errorf("make mounts private: %w", err))
	}
	view, err := openView(spec.View)
	if err != nil {
		return fail(err)
	}
	// Attached in this namespace (on the scratch's stage, a directory
	// only this namespace mounts on), the mount can be cloned by any
	// kernel with open_tree; a detached one only by newer ones.
	if err := attach(view, spec.Stage); err != nil {
		return fail(fmt.Errorf("mount view: %w", err))
	}
	unix.Close(view)
	_ = os.Remove(spec.Hold)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: spec.Hold, Net: "unix"})
	if err != nil {
		return fail(err)
	}
	_ = enc.Encode(helperStatus{Started: time.Now().UnixNano()})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			return 0
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, spec.Stage, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			_, _ = c.Write([]byte("clone the view's mount: " + err.Error()))
		} else {
			_, _, _ = c.WriteMsgUnix([]byte{0}, unix.UnixRights(fd), nil)
			unix.Close(fd)
		}
		c.Close()
	}
}

// receiveView connects to a holder's socket and returns the clone of
// the view's mount it hands out (a descriptor the caller owns).
func receiveView(sock string) (int, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return -1, fmt.Errorf("shared view: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 512)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return -1, fmt.Errorf("shared view: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err == nil && len(msgs) == 1 {
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err == nil && len(fds) == 1 {
			unix.CloseOnExec(fds[0])
			return fds[0], nil
		}
	}
	if n > 1 {
		return -1, fmt.Errorf("shared view: %s", buf[:n])
	}
	return -1, errors.New("shared view: the holder sent no mount")
}

// cloneShared is the daemon's own clone of a holder's mount.
func cloneShared(sock string) (*os.File, error) {
	fd, err := receiveView(sock)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "shared view"), nil
}

// startHolder starts the helper that holds the view p mounted for the
// services and commands that share it, with its socket at sock; it
// returns once the socket accepts, and stop ends the holder (its mount
// goes with its namespace once nothing else holds a clone); ended is
// closed once the holder ended, stopped or not.
func (m *Manager) startHolder(s *Scratch, p presentation, sock string) (stop func(), ended <-chan struct{}, err error) {
	stage := filepath.Join(s.dir, "hold")
	if err := os.MkdirAll(stage, 0o700); err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(helperSpec{View: p, Stage: stage, Hold: sock})
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(m.exe)
	cmd.Env = []string{helperEnv + "=" + string(b), helperOuterEnv + "=1"}
	cmd.SysProcAttr = plainAttr()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	defer statusR.Close()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		statusW.Close()
		return nil, nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.ExtraFiles = []*os.File{statusW}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		statusW.Close()
		return nil, nil, fmt.Errorf("workdir: %w: shutting down", ErrUnsupported)
	}
	exited, err := startPinned(cmd)
	if err != nil {
		statusW.Close()
		return nil, nil, fmt.Errorf("%w: start the view's holder: %w", ErrHelper, err)
	}
	statusW.Close()
	m.track(cmd, true)
	waited := make(chan struct{})
	go func() {
		<-exited
		m.track(cmd, false)
		close(waited)
	}()
	stop = func() {
		stdin.Close()
		select {
		case <-waited:
		case <-time.After(5 * time.Second):
			_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
			<-waited
		}
	}
	var st helperStatus
	line, err := bufio.NewReader(statusR).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &st)
	}
	if err != nil || st.Error != "" || st.Started == 0 {
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		<-waited
		why := st.Error
		if why == "" {
			why = fmt.Sprintf("%v %s", err, stderr.String())
		}
		return nil, nil, fmt.Errorf("%w: the view's holder: %s", ErrHelper, why)
	}
	return stop, waited, nil
}
