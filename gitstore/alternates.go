package gitstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Alternates: object directories a repository borrows from through
// objects/info/alternates, as `git clone --shared`, `--reference`, object
// pools and fork networks use them. They are read the way git reads them
// (object-file.c, link_alt_odb_entries): one directory per line, blank
// lines and lines starting with '#' skipped, a line starting with '"'
// C-unquoted, relative paths taken from the objects directory that holds
// the file, trailing slashes dropped, each directory's own alternates
// followed in turn down to git's depth of 5, and the repository itself
// and directories seen before left out, so cycles end. Alternates are
// only read: objects are written into the repository itself, and an
// object an alternate already has is not written again.

// maxAlternateDepth is git's limit on nested alternates.
const maxAlternateDepth = 5

// parseAlternates returns the object directories named by the alternates
// file content data of objects directory objDir, cleaned and absolute.
func parseAlternates(objDir string, data []byte) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '"' {
			u, err := strconv.Unquote(line)
			if err != nil {
				return nil, fmt.Errorf("alternates of %q: bad quoted path %s", objDir, line)
			}
			line = u
		}
		line = strings.TrimRight(line, "/")
		if line == "" {
			continue
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(objDir, line)
		}
		out = append(out, filepath.Clean(line))
	}
	return out, sc.Err()
}

// openAlternates opens, read-only, the alternates of the repository whose
// git directory is gitDir, depth levels down; seen holds the object
// directories already reached (the repository's own first).
func openAlternates(gitDir string, opts Options, seen map[string]bool, depth int) ([]*Repo, error) {
	objDir := filepath.Join(gitDir, "objects")
	data, err := os.ReadFile(filepath.Join(objDir, "info", "alternates"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read alternates: %w", err)
	}
	if depth >= maxAlternateDepth {
		return nil, nil // as git: nested too deep, ignored
	}
	dirs, err := parseAlternates(objDir, data)
	if err != nil {
		return nil, err
	}
	var alts []*Repo
	for _, dir := range dirs {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		if seen[dir] {
			continue
		}
		seen[dir] = true
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			// git warns and goes on without it.
			continue
		}
		if filepath.Base(dir) != "objects" {
			closeAll(alts)
			return nil, fmt.Errorf("alternate %q: only object directories named \"objects\" are supported", dir)
		}
		alt, err := openRepo(filepath.Dir(dir), "", opts, seen, depth+1)
		if err != nil {
			closeAll(alts)
			return nil, fmt.Errorf("alternate %q: %w", dir, err)
		}
		alts = append(alts, alt)
	}
	return alts, nil
}

// alternateSet is a repository's alternates: the object directories of
// objects/info/alternates, each opened read-only as a repository, in the
// order the file lists them.
type alternateSet []*Repo

func closeAll(rs []*Repo) {
	for _, r := range rs {
		r.Close()
	}
}

// read looks for object id in the alternates when the
// repository itself does not have it (err is its not-found error, which is
// returned when no alternate has it either).
func (a alternateSet) read(ctx context.Context, id OID, err error) (rawObject, error) {
	for _, alt := range a {
		obj, aerr := alt.readObject(ctx, id)
		if aerr == nil {
			return obj, nil
		}
		if !absent(aerr) {
			return rawObject{}, aerr
		}
	}
	return rawObject{}, err
}

// absent reports whether err says an object is not there (as opposed to
// damaged or unreadable).
func absent(err error) bool {
	return errors.Is(err, ErrMissingObject) || errors.Is(err, ErrNotFound)
}

// has reports whether an alternate holds object id.
func (a alternateSet) has(ctx context.Context, id OID) (bool, error) {
	for _, alt := range a {
		if ok, err := alt.HasObject(ctx, id); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// withPrefix adds to found the ids in the alternates that start with
// prefix.
func (a alternateSet) withPrefix(ctx context.Context, prefix string, found map[OID]bool) error {
	for _, alt := range a {
		if err := (revParser{Repo: alt}).withPrefix(ctx, prefix, found); err != nil {
			return err
		}
	}
	return nil
}
