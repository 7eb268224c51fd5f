package workdir

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/internal/durable"
)

// treeLister is what building a base checkout needs from a repository.
type treeLister interface {
	blobReader
	List(ctx context.Context, root gitstore.OID, prefix string, recursive bool, fn func(gitstore.Entry) error) error
}

// Cache holds the shared read-only base checkouts, one directory per tree
// id, under its directory. A checkout is built once, into a temporary
// directory that is synced and then renamed into place, so a directory
// named by a tree id is always complete; leftovers of a crash are named
// ".tmp-…" and removed when the cache opens. Beyond the byte budget the
// least recently used checkouts no one holds are removed.
//
// A Cache is safe for concurrent use; mu guards every field below it.
type Cache struct {
	dir string
	max int64

	mu       sync.Mutex
	bases    map[gitstore.OID]*baseDir
	building map[gitstore.OID]*buildCall
	total    int64
	// gone is told of each tree whose checkout was removed, or built
	// anew (what was derived from an earlier checkout is stale).
	gone func(gitstore.OID)
}

// onGone sets what is told of each tree whose checkout was evicted or
// built anew. Called before the cache is used.
func (c *Cache) onGone(f func(gitstore.OID)) { c.gone = f }

// has says whether tree has a checkout in the cache.
func (c *Cache) has(tree gitstore.OID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bases[tree] != nil || c.building[tree] != nil
}

type baseDir struct {
	path string
	size int64
	refs int
	used time.Time
}

type buildCall struct {
	done chan struct{}
	err  error
}

// OpenCache opens (creating) the cache in dir with a budget of maxBytes
// (0: no limit).
func OpenCache(dir string, maxBytes int64) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("base cache: %w", err)
	}
	c := &Cache{dir: dir, max: maxBytes, bases: map[gitstore.OID]*baseDir{}, building: map[gitstore.OID]*buildCall{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("base cache: %w", err)
	}
	for _, e := range ents {
		full := filepath.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), ".tmp-") {
			if err := removeAll(full); err != nil {
				return nil, fmt.Errorf("base cache: remove %s: %w", e.Name(), err)
			}
			continue
		}
		id, err := gitstore.ParseOID(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		size := dirSize(full)
		c.bases[id] = &baseDir{path: full, size: size, used: info.ModTime()}
		c.total += size
	}
	return c, nil
}

// Dir is the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// Bytes is the size of the checkouts the cache holds.
func (c *Cache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Acquire returns the directory of the checkout of tree, building it
// first if needed, and holds it until release is called: a held checkout
// is never evicted.
func (c *Cache) Acquire(ctx context.Context, r treeLister, tree gitstore.OID) (path string, release func(), err error) {
	for {
		c.mu.Lock()
		if b := c.bases[tree]; b != nil {
			b.refs++
			b.used = time.Now()
			path, used := b.path, b.used // b's fields are c.mu's
			c.mu.Unlock()
			// Remember the use across restarts (best effort).
			_ = os.Chtimes(path, used, used)
			var once sync.Once
			return path, func() { once.Do(func() { c.release(tree) }) }, nil
		}
		if call := c.building[tree]; call != nil {
			c.mu.Unlock()
			select {
			case <-call.done:
			case <-ctx.Done():
				return "", nil, ctx.Err()
			}
			if call.err != nil {
				return "", nil, call.err
			}
			continue
		}
		call := &buildCall{done: make(chan struct{})}
		c.building[tree] = call
		c.mu.Unlock()

		size, err := c.build(context.WithoutCancel(ctx), r, tree)
		if err == nil && c.gone != nil {
			c.gone(tree)
		}
		c.mu.Lock()
		delete(c.building, tree)
		if err == nil {
			c.bases[tree] = &baseDir{path: filepath.Join(c.dir, tree.String()), size: size, used: time.Now()}
			c.total += size
		}
		call.err = err
		close(call.done)
		c.mu.Unlock()
		if err != nil {
			return "", nil, err
		}
	}
}

func (c *Cache) release(tree gitstore.OID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := c.bases[tree]; b != nil {
		b.refs--
	}
	c.evictLocked()
}

// evictLocked removes least recently used checkouts nobody holds until
// the cache is within its budget. c.mu must be held.
func (c *Cache) evictLocked() {
	if c.max <= 0 || c.total <= c.max {
		return
	}
	type cand struct {
		id gitstore.OID
		b  *baseDir
	}
	var cs []cand
	for id, b := range c.bases {
		if b.refs == 0 {
			cs = append(cs, cand{id, b})
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].b.used.Before(cs[j].b.used) })
	for _, x := range cs {
		if c.total <= c.max {
			return
		}
		// Rename first, so a crash while removing leaves debris the next
		// open clears, never a partial checkout under a tree id.
		tmp := filepath.Join(c.dir, ".tmp-evict-"+x.id.String())
		if err := os.Rename(x.b.path, tmp); err != nil {
			continue
		}
		delete(c.bases, x.id)
		c.total -= x.b.size
		_ = removeAll(tmp)
		if c.gone != nil {
			c.gone(x.id)
		}
	}
}

// build checks tree out into the cache and returns its size in bytes.
func (c *Cache) build(ctx context.Context, r treeLister, tree gitstore.OID) (int64, error) {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(c.dir, ".tmp-"+tree.String()+"-"+hex.EncodeToString(rnd[:]))
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return 0, fmt.Errorf("base checkout: %w", err)
	}
	fail := func(err error) (int64, error) {
		_ = removeAll(tmp)
		return 0, fmt.Errorf("base checkout %s: %w", tree, err)
	}
	var entries []gitstore.Entry
	if err := r.List(ctx, tree, "", true, func(e gitstore.Entry) error {
		entries = append(entries, e)
		return nil
	}); err != nil {
		return fail(err)
	}
	size, err := writeEntries(ctx, r, hostTree(tmp), entries, nil)
	if err != nil {
		return fail(err)
	}
	dirs := 1
	for _, e := range entries {
		if e.Mode.IsDir() || e.Mode == gitstore.ModeGitlink {
			dirs++
		}
	}
	size += int64(dirs) * 4096
	// One syncfs instead of an fsync per file: the checkout is durable
	// before its name says it is complete.
	if err := syncFS(tmp); err != nil {
		return fail(err)
	}
	final := filepath.Join(c.dir, tree.String())
	if err := os.Rename(tmp, final); err != nil {
		return fail(err)
	}
	if err := durable.SyncDir(c.dir); err != nil {
		return 0, fmt.Errorf("base checkout %s: %w", tree, err)
	}
	c.mu.Lock()
	c.evictLocked()
	c.mu.Unlock()
	return size, nil
}

// dirSize is the bytes of the files below dir plus a block per directory.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			n += 4096
			return nil
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	return n
}
