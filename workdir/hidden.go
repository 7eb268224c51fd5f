package workdir

import (
	"context"
	"errors"
	"strings"

	"github.com/sessiond/sessiond/overlay"
)

// A view may hide paths: those a session's policy does not let it read
// are not in its directory at all. View.Readable says which files show;
// a directory shows when a file below it does. The layers leave hidden
// files out (copy) or cover them with whiteouts (overlay), and capture
// compares the directory with the view as shown: a hidden file is
// neither deleted when the command cannot see it nor kept when the
// command writes over it.

// hides reports whether the view hides the file p.
func (v View) hides(p string) bool { return v.Readable != nil && !v.Readable(p) }

// hiddenRoots lists the shallowest paths at or below r whose whole
// subtree the view hides: an unreadable file, or a directory without a
// readable file below it (r itself when that is all of it; never the
// root). Nil when the view hides nothing.
func hiddenRoots(ctx context.Context, v View, r string) ([]string, error) {
	if v.Readable == nil {
		return nil, nil
	}
	n, err := v.Overlay.Stat(ctx, r)
	if err != nil {
		if errors.Is(err, overlay.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	if !n.IsDir() {
		if v.hides(r) {
			return []string{r}, nil
		}
		return nil, nil
	}
	// shown holds the directories (r included) with a readable file
	// below them.
	shown := map[string]bool{}
	var unreadable []string
	err = v.Overlay.List(ctx, overlay.ListOptions{Prefix: r, Recursive: true}, func(n overlay.Node) error {
		if n.IsDir() {
			return nil
		}
		if v.hides(n.Path) {
			unreadable = append(unreadable, n.Path)
			return nil
		}
		for d := parentOf(n.Path); ; d = parentOf(d) {
			if shown[d] {
				break
			}
			shown[d] = true
			if d == r || d == "" {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(unreadable) == 0 {
		return nil, nil
	}
	if r != "" && !shown[r] {
		return []string{r}, nil
	}
	var out []string
	for _, f := range unreadable {
		root := f
		// The shallowest directory below r on the way to f that shows
		// nothing, if any.
		rest := f
		if r != "" {
			rest = strings.TrimPrefix(f, r+"/")
		}
		parts := strings.Split(rest, "/")
		d := r
		for _, c := range parts[:len(parts)-1] {
			d = join(d, c)
			if !shown[d] {
				root = d
				break
			}
		}
		if n := len(out); n == 0 || out[n-1] != root {
			out = append(out, root)
		}
	}
	return roots(out), nil
}

// pathSet answers whether a path is at or below one of a set of paths.
type pathSet map[string]bool

func newPathSet(ps []string) pathSet {
	s := make(pathSet, len(ps))
	for _, p := range ps {
		s[p] = true
	}
	return s
}

func (s pathSet) covers(p string) bool {
	if len(s) == 0 {
		return false
	}
	for q := p; ; q = parentOf(q) {
		if s[q] {
			return true
		}
		if q == "" {
			return false
		}
	}
}
