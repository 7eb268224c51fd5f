package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// prepareDataDir creates the data directory, or takes an existing one,
// as the daemon's alone (0700): it holds the token key, the store and
// every session's scratch.
func prepareDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// lockDataDir takes the data directory for this process: an exclusive
// flock on DIR/sessiond.lock, which holds the process id. The lock goes
// with the process, so a crash never leaves it held. A second process is
// refused with a message naming the holder.
func lockDataDir(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, "sessiond.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := "another process"
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = "process " + strconv.Itoa(pid)
			}
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data directory %s is in use by %s (a sessiond serve or sessiond mcp); "+
				"stop it, or run one daemon (sessiond serve --data-dir %s) and point every agent at it", dir, holder, dir)
		}
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		_ = f.Truncate(0)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
