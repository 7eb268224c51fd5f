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

	"golang.org/x/sys/unix"

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

// writeEntries writes entries (paths relative to t's top, directories
// before their children, as a recursive tree listing yields them) below
// t, straight from the objects and in parallel. Directories and gitlinks
// become directories. It returns the bytes of content written; onFile,
// when set, is called with each file written and its stat (from several
// goroutines).
func writeEntries(ctx context.Context, r blobReader, t tree, entries []gitstore.Entry, onFile func(e gitstore.Entry, st *unix.Stat_t)) (int64, error) {
	// Work is handed out a directory at a time: writers in one directory
	// contend for its lock, writers in different ones do not, and each
	// opens its directory once.
	var jobs [][]gitstore.Entry
	dirIndex := map[string]int{}
	for _, e := range entries {
		if e.Mode.IsDir() || e.Mode == gitstore.ModeGitlink {
			if err := t.mkdirAll(e.Path); err != nil {
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
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		failed.Store(true)
		mu.Unlock()
	}
	next := make(chan []gitstore.Entry)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int64
			for job := range next {
				if failed.Load() {
					continue
				}
				size, err := writeDir(ctx, r, t, job, onFile)
				n += size
				if err != nil {
					fail(err)
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

// writeDir writes the files of one directory (job, all of one parent).
func writeDir(ctx context.Context, r blobReader, t tree, job []gitstore.Entry, onFile func(e gitstore.Entry, st *unix.Stat_t)) (int64, error) {
	d, err := t.dir(parentOf(job[0].Path), true)
	if err != nil {
		return 0, err
	}
	defer d.close()
	var n int64
	for _, e := range job {
		var st *unix.Stat_t
		if onFile != nil {
			st = new(unix.Stat_t)
		}
		size, err := writeEntry(ctx, r, d, e, st)
		if err != nil {
			return n, err
		}
		n += size
		if onFile != nil {
			onFile(e, st)
		}
	}
	return n, nil
}

// writeEntry writes one file or symlink into d, its parent directory; st,
// when set, receives its stat.
func writeEntry(ctx context.Context, r blobReader, d *dirAt, e gitstore.Entry, st *unix.Stat_t) (int64, error) {
	data, err := r.ReadBlob(ctx, e.OID)
	if err != nil {
		return 0, fmt.Errorf("read %q: %w", e.Path, err)
	}
	if err := d.create(baseOf(e.Path), e.Mode, data, st); err != nil {
		return 0, err
	}
	return int64(len(data)), nil
}

// removeAll removes path and everything below it, making read-only
// directories writable first. It works beneath path's parent, so a
// process that changes the tree meanwhile (a service in its home or
// tool caches) cannot lead it elsewhere.
func removeAll(path string) error {
	path = filepath.Clean(path)
	r, err := os.OpenRoot(filepath.Dir(path))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer r.Close()
	return rootTree{r: r}.removeAll(filepath.Base(path))
}
