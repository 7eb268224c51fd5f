// Package durable owns writing files so that they survive a crash: the
// temporary-file-fsync-rename-fsync sequence, written once for the git
// store (loose objects, packs, config), the daemon's token key and the
// view directories' cache.
//
// Invariant: after WriteFile returns nil, path holds all of data even if
// the machine stops at once; before it returns, path holds its old
// content or all of the new, never a torn or empty file. A crash may
// leave a temporary file (named by the pattern given) beside it; callers
// that care sweep those.
package durable

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteTemp writes data to a new temporary file in dir named after
// pattern (as os.CreateTemp takes it), with mode perm, and fsyncs it. The
// caller renames it into place (and then syncs dir); on error nothing is
// left behind.
func WriteTemp(dir, pattern string, data []byte, perm fs.FileMode) (string, error) {
	return WriteTempFunc(dir, pattern, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteTempFunc is WriteTemp for content too large to hold: write writes
// it (buffered) to the temporary file.
func WriteTempFunc(dir, pattern string, perm fs.FileMode, write func(io.Writer) error) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// WriteFile writes data to path with mode perm: a synced temporary file
// beside it, renamed over it, then the directory synced.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := WriteTemp(dir, ".tmp-"+filepath.Base(path)+"-", data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(dir)
}

// MkdirAll creates dir and any missing parents, fsyncing the parent of
// each directory it creates, so a new directory entry survives a crash as
// the files written into it do.
func MkdirAll(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // made by someone else meanwhile
		}
		return err
	}
	return SyncDir(parent)
}

// SyncDir fsyncs a directory, making the entries created or renamed in it
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
