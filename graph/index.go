package graph

import (
	"context"
	"errors"
	"fmt"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/sessiond/sessiond/gitstore"
)

// files caches the symbols of blobs by blob id. Blobs are immutable, so an
// entry is never invalidated and is shared by every base, commit and
// session that holds the blob; only the LRU bound evicts.
type files struct {
	lru *lru.Cache[gitstore.OID, *File]
}

func newFiles(size int) *files {
	c, err := lru.New[gitstore.OID, *File](size)
	if err != nil {
		panic(err) // size > 0 is checked by Config.fill
	}
	return &files{lru: c}
}

// get returns the symbols of blob id at path p, parsing it on first need.
// A file in a language without a parser costs nothing: its blob is not
// read. Only a blob that cannot be read is an error.
func (c *files) get(ctx context.Context, repo *gitstore.Repo, p string, id gitstore.OID) (*File, error) {
	if id.IsZero() {
		return nil, nil
	}
	lang := langOf(p)
	if lang == "" {
		return &File{Blob: id}, nil
	}
	if f, ok := c.lru.Get(id); ok {
		return f, nil
	}
	data, err := repo.ReadBlob(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", p, err)
	}
	f := parseFile(id, lang, data)
	c.lru.Add(id, f)
	return f, nil
}

// Index is the base index of one tree (a base commit's): the symbols of
// each of its files, resolved lazily, a directory at a time. Every session
// on that base shares one Index. What an Index has resolved never changes,
// because the tree does not; the symbols themselves live in the graph's
// blob cache, so an Index costs a few words per file it resolved.
//
// An Index is safe for concurrent use.
type Index struct {
	repo  *gitstore.Repo
	tree  gitstore.OID
	files *files

	mu   sync.Mutex // guards dirs
	dirs map[string]*dirIndex
}

// dirIndex is one directory of an Index, built once.
type dirIndex struct {
	once  sync.Once
	err   error
	files []IndexedFile
}

// IndexedFile is one file of a directory of an Index.
type IndexedFile struct {
	Path string
	*File
}

// Tree returns the tree the index describes.
func (x *Index) Tree() gitstore.OID { return x.tree }

// File returns the symbols of the file at path p of the tree, nil when
// there is no file there. Only the file's blob is read, the first time any
// index meets it.
func (x *Index) File(ctx context.Context, p string) (*File, error) {
	e, err := x.repo.Lookup(ctx, x.tree, p)
	if errors.Is(err, gitstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !e.Mode.IsBlob() || e.Mode == gitstore.ModeSymlink {
		return nil, nil
	}
	return x.files.get(ctx, x.repo, p, e.OID)
}

// Dir returns the files directly in directory dir ("" for the root) with
// their symbols, parsing them the first time the index is asked. Files of
// other languages are listed without symbols.
func (x *Index) Dir(ctx context.Context, dir string) ([]IndexedFile, error) {
	x.mu.Lock()
	d := x.dirs[dir]
	if d == nil {
		d = &dirIndex{}
		x.dirs[dir] = d
	}
	x.mu.Unlock()
	d.once.Do(func() { d.files, d.err = x.buildDir(ctx, dir) })
	if d.err != nil {
		// A failed build (a cancelled context) is tried again next time.
		x.mu.Lock()
		if x.dirs[dir] == d {
			delete(x.dirs, dir)
		}
		x.mu.Unlock()
	}
	return d.files, d.err
}

func (x *Index) buildDir(ctx context.Context, dir string) ([]IndexedFile, error) {
	var out []IndexedFile
	err := x.repo.List(ctx, x.tree, dir, false, func(e gitstore.Entry) error {
		if !e.Mode.IsBlob() || e.Mode == gitstore.ModeSymlink {
			return nil
		}
		f, err := x.files.get(ctx, x.repo, e.Path, e.OID)
		if err != nil {
			return err
		}
		out = append(out, IndexedFile{Path: e.Path, File: f})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index %q: %w", dir, err)
	}
	return out, nil
}

// Build indexes the whole tree, directory by directory, and returns the
// files it could not parse with the reason. Directories already built are
// not built again.
func (x *Index) Build(ctx context.Context) (unparsed []IndexedFile, err error) {
	dirs := []string{""}
	err = x.repo.List(ctx, x.tree, "", true, func(e gitstore.Entry) error {
		if e.Mode.IsDir() {
			dirs = append(dirs, e.Path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fs, err := x.Dir(ctx, d)
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			if f.Err != "" {
				unparsed = append(unparsed, f)
			}
		}
	}
	return unparsed, nil
}
