package workdir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// A view in overlay mode is one overlayfs mount per command, over the
// scratch's upper directory. A service outlives the commands, and two
// live mounts of one upper directory are what the kernel calls undefined
// (each caches what it saw; a write through one may never show through
// the other). So while a session has services, its view is mounted once,
// by a holder (share_linux.go: the helper, with no command, in a mount
// namespace of its own), and every service and command of the session
// attaches a clone of that one mount (open_tree, passed over a socket in
// the scratch). The daemon's own edits of the view (syncing what the API
// wrote, settling refused paths, a reset) go through a clone too, as
// writes to the mounted view, never to the upper directory beneath it.
// Capture still reads the upper directory: reading it is safe, and it is
// where every write through the mount lands.
//
// The holder starts with the session's first service and ends once the
// last one ended and no command or edit is between Prepare and Settle.
// While it lives the view stays on its base and environment layer: a
// Prepare for another is refused (ErrViewHeld), as the services see the
// old base through the mount.

// viewShare is the mount a scratch's services and commands share.
type viewShare struct {
	// sock is where the holder hands out clones of the mount.
	sock string
	stop func()
	// ended is closed once the holder ended.
	ended <-chan struct{}
	// mount is the daemon's clone, dir the path through which the
	// daemon reaches it (/proc/self/fd/N).
	mount *os.File
	dir   string
	// refs counts the services on the mount.
	refs int
}

// holdShared returns the scratch's shared mount of the view p, starting
// its holder on the first call, and counts one more service on it. The
// scratch is between Prepare and Settle.
func (s *Scratch) holdShared(p presentation) (*viewShare, error) {
	s.shareMu.Lock()
	defer s.shareMu.Unlock()
	if s.share == nil {
		sock := filepath.Join(s.dir, "view.sock")
		stop, ended, err := s.m.startHolder(s, p, sock)
		if err != nil {
			return nil, err
		}
		mount, err := cloneShared(sock)
		if err != nil {
			stop()
			return nil, err
		}
		s.share = &viewShare{sock: sock, stop: stop, ended: ended, mount: mount, dir: fmt.Sprintf("/proc/self/fd/%d", mount.Fd())}
		if l, ok := s.layer.(*overlayLayer); ok {
			l.shared = s.share
		}
	}
	if err := s.share.lost(); err != nil {
		return nil, err
	}
	s.share.refs++
	return s.share, nil
}

// lost says why no command or service can attach the shared mount any
// more: its holder ended (killed from outside, say). The services keep
// their clones, and so the view, and a second mount of the upper
// directory beside those is what the share exists to prevent; so the
// session's commands are refused until its services are stopped.
func (sh *viewShare) lost() error {
	select {
	case <-sh.ended:
		return fmt.Errorf("%w, but the mount's holder ended: stop them to run commands again", ErrViewHeld)
	default:
		return nil
	}
}

// unholdShared counts one service less on the shared mount; the last
// one out ends the holder, unless a command or edit is under way (then
// releaseBase does).
func (s *Scratch) unholdShared() {
	s.shareMu.Lock()
	defer s.shareMu.Unlock()
	if s.share == nil {
		return
	}
	s.share.refs--
	if s.share.refs <= 0 && !s.inUse {
		s.endSharedLocked()
	}
}

// endSharedLocked ends the holder and lets go of the daemon's clone: once
// nothing holds the mount any more, the next command mounts its own.
func (s *Scratch) endSharedLocked() {
	s.share.mount.Close()
	s.share.stop()
	_ = os.Remove(s.share.sock)
	s.share = nil
}

// using marks the scratch between Prepare and Settle (in true) and, on
// the way out, ends a shared mount no service holds any more. It
// returns the shared mount, if there is one.
func (s *Scratch) using(in bool) *viewShare {
	s.shareMu.Lock()
	defer s.shareMu.Unlock()
	s.inUse = in
	if !in && s.share != nil && s.share.refs <= 0 {
		s.endSharedLocked()
	}
	return s.share
}

// syncShared brings paths in step with v through the shared mount: the
// copy layer's edits, made on the mounted view (overlayfs writes the
// upper directory, whiteouts included), then the stat cache taken from
// the upper directory, where capture looks.
func (l *overlayLayer) syncShared(ctx context.Context, v View, paths []string) error {
	rs := roots(paths)
	if slices.Contains(rs, "") {
		return l.resetShared(ctx, v)
	}
	through := newCopyLayer(l.shared.dir, "")
	if err := through.sync(ctx, v, rs); err != nil {
		return err
	}
	for _, r := range rs {
		delete(l.cache, r)
		dropUnder(l.cache, r)
	}
	t, err := openLayerRoot(l.upper)
	if err != nil {
		return err
	}
	defer t.close()
	for p, e := range through.cache {
		var st unix.Stat_t
		d, err := t.dir(parentOf(p), false)
		if err == nil {
			err = d.lstat(baseOf(p), &st)
			d.close()
		}
		if err != nil {
			continue // not there: capture hashes it again
		}
		se := statEntryOf(&st, e.Seen)
		se.Git, se.OID = e.Git, e.OID
		l.cache[p] = se
	}
	return nil
}

// resetShared makes the shared mount show v alone: every path the upper
// directory holds something at, and every path of the overlay, synced
// through the mount (the base's other files are v's already).
func (l *overlayLayer) resetShared(ctx context.Context, v View) error {
	var paths []string
	for _, e := range v.Overlay.Entries() {
		paths = append(paths, e.Path)
	}
	t, err := openLayerRoot(l.upper)
	if err != nil {
		return err
	}
	top, err := t.dir("", false)
	if err != nil {
		t.close()
		return err
	}
	// Below the root, a directory that is not opaque holds the paths
	// to sync; anything else is one. Read beneath the upper directory's
	// root: services change it meanwhile.
	var walk func(d *dirAt, dir string) error
	walk = func(d *dirAt, dir string) error {
		names, err := d.names()
		if err != nil {
			return err
		}
		for _, name := range names {
			p := join(dir, name)
			if p == ".git" {
				continue // the view's .git, never the view's content
			}
			var st unix.Stat_t
			if err := d.lstat(name, &st); errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return err
			}
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				sub, err := d.sub(name)
				if errors.Is(err, fs.ErrNotExist) {
					continue
				} else if err != nil {
					return err
				}
				if !sub.opaque() {
					err := walk(sub, p)
					sub.close()
					if err != nil {
						return err
					}
					continue
				}
				sub.close()
			}
			paths = append(paths, p)
		}
		return nil
	}
	err = walk(top, "")
	top.close()
	t.close()
	if err != nil {
		return err
	}
	clear(l.cache)
	rs := roots(paths)
	if len(rs) == 0 {
		return nil
	}
	return l.syncShared(ctx, v, rs)
}
