package workdir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sessiond/sessiond/gitstore"
)

// blobReader is what writing files from objects needs.
type blobReader interface {
	ReadBlob(ctx context.Context, id gitstore.OID) ([]byte, error)
}

// fileMode is the permission a checked-out file of git mode m gets.
func fileMode(m gitstore.Mode) os.FileMode {
	if m == gitstore.ModeExec {
		return 0o755
	}
	return 0o644
}

// writeEntries writes entries (paths relative to root, directories before
// their children, as a recursive tree listing yields them) below root,
// straight from the objects and in parallel. Directories and gitlinks
// become directories. It returns the bytes of content written; onFile,
// when set, is called for each file written (from several goroutines).
func writeEntries(ctx context.Context, r blobReader, root string, entries []gitstore.Entry, onFile func(e gitstore.Entry, full string)) (int64, error) {
	// Work is handed out a directory at a time: writers in one directory
	// contend for its lock, writers in different ones do not.
	var jobs [][]gitstore.Entry
	dirIndex := map[string]int{}
	for _, e := range entries {
		if e.Mode.IsDir() || e.Mode == gitstore.ModeGitlink {
			if err := os.MkdirAll(filepath.Join(root, e.Path), 0o755); err != nil {
				return 0, err
			}
			continue
		}
		d := parentOf(e.Path)
		i, ok := dirIndex[d]
		if !ok {
			i = len(jobs)
			dirIndex[d] = i
			jobs = append(jobs, nil)
		}
		jobs[i] = append(jobs[i], e)
	}
	workers := min(max(2*runtime.NumCPU(), 4), 8, len(jobs))
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		total  int64
		first  error
		failed atomic.Bool
	)
	next := make(chan []gitstore.Entry)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int64
			for job := range next {
				for _, e := range job {
					if failed.Load() {
						break
					}
					size, err := writeEntry(ctx, r, root, e)
					if err != nil {
						mu.Lock()
						if first == nil {
							first = err
						}
						failed.Store(true)
						mu.Unlock()
						break
					}
					n += size
					if onFile != nil {
						onFile(e, filepath.Join(root, e.Path))
					}
				}
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	for _, job := range jobs {
		if ctx.Err() != nil || failed.Load() {
			break
		}
		next <- job
	}
	close(next)
	wg.Wait()
	if first != nil {
		return 0, first
	}
	return total, ctx.Err()
}

// writeEntry writes one file or symlink, creating its parent directories.
func writeEntry(ctx context.Context, r blobReader, root string, e gitstore.Entry) (int64, error) {
	data, err := r.ReadBlob(ctx, e.OID)
	if err != nil {
		return 0, fmt.Errorf("read %q: %w", e.Path, err)
	}
	full := filepath.Join(root, e.Path)
	if err := writeFile(full, e.Mode, data); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return 0, err
		}
		err = writeFile(full, e.Mode, data)
		if err != nil {
			return 0, err
		}
	} else if err != nil {
		return 0, err
	}
	return int64(len(data)), nil
}

// writeFile creates full (which must not exist) as a file or symlink of
// git mode m.
func writeFile(full string, m gitstore.Mode, data []byte) error {
	if m == gitstore.ModeSymlink {
		return os.Symlink(string(data), full)
	}
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode(m))
	if err != nil {
		return err
	}
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
	return f.Close()
}

// removeAll removes path and everything below it, making read-only
// directories writable first.
func removeAll(path string) error {
	err := os.RemoveAll(path)
	if err == nil || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	_ = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	return os.RemoveAll(path)
}
