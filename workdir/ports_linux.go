//go:build linux

package workdir

import (
	"fmt"
	"io"
	"net"
	"strconv"

	"golang.org/x/sys/unix"
)

// openPorts opens the directories of the helper's port links and listens
// on the exposed sockets, while the host's paths are still there (before
// the command's root is built). start, once the loopback is up, listens
// on the reached ports and relays every connection.
func openPorts(specs []portSpec) (start func() error, err error) {
	type opened struct {
		spec portSpec
		dir  int
		ln   net.Listener
	}
	var all []opened
	for _, p := range specs {
		fd, err := unix.Open(p.Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("port %d: open %s: %w", p.Port, p.Dir, err)
		}
		o := opened{spec: p, dir: fd}
		if p.Listen {
			_ = unix.Unlink(fdPath(fd, p.Name))
			ln, err := net.Listen("unix", fdPath(fd, p.Name))
			if err != nil {
				return nil, fmt.Errorf("port %d: listen: %w", p.Port, err)
			}
			ln.(*net.UnixListener).SetUnlinkOnClose(false)
			o.ln = ln
		}
		all = append(all, o)
	}
	return func() error {
		for _, o := range all {
			target := "127.0.0.1:" + strconv.Itoa(o.spec.Port)
			if o.ln != nil {
				go relayAll(o.ln, func() (net.Conn, error) { return net.Dial("tcp", target) })
				continue
			}
			ln, err := net.Listen("tcp", target)
			if err != nil {
				return fmt.Errorf("port %d: %w", o.spec.Port, err)
			}
			sock := fdPath(o.dir, o.spec.Name)
			go relayAll(ln, func() (net.Conn, error) { return net.Dial("unix", sock) })
		}
		return nil
	}, nil
}

// relayAll relays every connection ln accepts to one dial opens.
func relayAll(ln net.Listener, dial func() (net.Conn, error)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			d, err := dial()
			if err != nil {
				c.Close()
				return
			}
			relay(c, d)
		}()
	}
}

// relay copies a to b and b to a until both directions ended, passing
// each side's end of writing on as a half close.
func relay(a, b net.Conn) {
	done := make(chan struct{}, 2)
	half := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			dst.Close()
		}
		done <- struct{}{}
	}
	go half(a, b)
	go half(b, a)
	<-done
	<-done
	a.Close()
	b.Close()
}
