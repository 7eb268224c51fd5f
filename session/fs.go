package session

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"time"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/record"
)

// NewFS returns the current view of session id of m as an fs.FS
// (read-only): an adapter over the Manager's Stat, Read and ListFiles.
// Each call reads the view as it is then; ctx bounds every operation.
func NewFS(ctx context.Context, m *Manager, id uuid.UUID) fs.FS {
	return &sessionFS{m: m, id: id, ctx: ctx}
}

type sessionFS struct {
	m   *Manager
	id  uuid.UUID
	ctx context.Context
}

var (
	_ fs.ReadFileFS = (*sessionFS)(nil)
	_ fs.ReadDirFS  = (*sessionFS)(nil)
	_ fs.StatFS     = (*sessionFS)(nil)
)

func toPath(name string) string {
	if name == "." {
		return ""
	}
	return name
}

func fsErr(op, name string, err error) error {
	switch {
	case errors.Is(err, record.ErrNotFound):
		err = fs.ErrNotExist
	case errors.Is(err, record.ErrForbidden):
		err = fs.ErrPermission
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

func (f *sessionFS) stat(op, name string) (FileInfo, error) {
	if !fs.ValidPath(name) {
		return FileInfo{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return FileInfo{Type: "dir", Mode: gitstore.ModeDir}, nil
	}
	fi, err := f.m.Stat(f.ctx, f.id, name)
	if err != nil {
		return FileInfo{}, fsErr(op, name, err)
	}
	return fi, nil
}

func (f *sessionFS) Stat(name string) (fs.FileInfo, error) {
	fi, err := f.stat("stat", name)
	if err != nil {
		return nil, err
	}
	return fileInfo{fi}, nil
}

func (f *sessionFS) Open(name string) (fs.File, error) {
	fi, err := f.stat("open", name)
	if err != nil {
		return nil, err
	}
	if fi.Type == "dir" || fi.Type == "submodule" {
		entries, err := f.ReadDir(name)
		if err != nil {
			return nil, err
		}
		return &dirFile{info: fileInfo{fi}, entries: entries}, nil
	}
	data, err := f.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &file{info: fileInfo{fi}, r: bytes.NewReader(data)}, nil
}

func (f *sessionFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	data, _, err := f.m.Read(f.ctx, f.id, toPath(name), 0, -1)
	if err != nil {
		return nil, fsErr("read", name, err)
	}
	return bytes.Clone(data), nil
}

func (f *sessionFS) ReadDir(name string) ([]fs.DirEntry, error) {
	fi, err := f.stat("readdir", name)
	if err != nil {
		return nil, err
	}
	switch fi.Type {
	case "submodule":
		return []fs.DirEntry{}, nil // its content is another repository's
	case "dir":
	default:
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	infos, err := f.m.ListFiles(f.ctx, f.id, ListOptions{Prefix: toPath(name)})
	if err != nil {
		return nil, fsErr("readdir", name, err)
	}
	out := make([]fs.DirEntry, len(infos))
	for i, fi := range infos {
		out[i] = fs.FileInfoToDirEntry(fileInfo{fi})
	}
	// fs.ReadDir promises entries sorted by name; git order sorts a
	// directory as "name/", which can differ.
	sortDirEntries(out)
	return out, nil
}

func sortDirEntries(es []fs.DirEntry) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].Name() < es[j-1].Name(); j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

type fileInfo struct{ fi FileInfo }

func (i fileInfo) Name() string {
	if i.fi.Path == "" {
		return "."
	}
	return path.Base(i.fi.Path)
}
func (i fileInfo) Size() int64 { return i.fi.Size }
func (i fileInfo) Mode() fs.FileMode {
	switch i.fi.Mode {
	case gitstore.ModeDir, gitstore.ModeGitlink:
		return fs.ModeDir | 0o755
	case gitstore.ModeExec:
		return 0o755
	}
	return 0o644
}
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.Mode().IsDir() }
func (i fileInfo) Sys() any           { return i.fi }

type file struct {
	info fileInfo
	r    *bytes.Reader
}

func (f *file) Stat() (fs.FileInfo, error)              { return f.info, nil }
func (f *file) Read(p []byte) (int, error)              { return f.r.Read(p) }
func (f *file) ReadAt(p []byte, off int64) (int, error) { return f.r.ReadAt(p, off) }
func (f *file) Seek(off int64, whence int) (int64, error) {
	return f.r.Seek(off, whence)
}
func (f *file) Close() error { return nil }

type dirFile struct {
	info    fileInfo
	entries []fs.DirEntry
	off     int
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.Name(), Err: errors.New("is a directory")}
}
func (d *dirFile) Close() error { return nil }
func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.off:]
	if n <= 0 {
		d.off = len(d.entries)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(rest))
	d.off += n
	return rest[:n], nil
}
