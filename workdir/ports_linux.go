//go:build linux

package workdir

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// openPorts opens the directories of the helper's port links and listens
// on the exposed sockets, while the host's paths are still there (before
// the command's root is built). start, once the loopback is up, listens
// on the reached ports and relays every connection; it returns the port
// of the egress proxy's link (0: none).
func openPorts(specs []portSpec) (start func() (proxy int, err error), err error) {
	type opened struct {
		spec      portSpec
		dir       int
		ln, probe net.Listener
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
			probe := ProbeSocket(p.Name)
			_ = unix.Unlink(fdPath(fd, probe))
			if o.probe, err = net.Listen("unix", fdPath(fd, probe)); err != nil {
				return nil, fmt.Errorf("port %d: listen: %w", p.Port, err)
			}
			o.probe.(*net.UnixListener).SetUnlinkOnClose(false)
		}
		all = append(all, o)
	}
	return func() (proxy int, err error) {
		for _, o := range all {
			target := "127.0.0.1:" + strconv.Itoa(o.spec.Port)
			if o.ln != nil {
				go relayAll(o.ln, func() (net.Conn, error) { return net.Dial("tcp", target) })
				go probeAll(o.probe, target)
				continue
			}
			ln, err := net.Listen("tcp", target)
			if err != nil {
				return 0, fmt.Errorf("port %d: %w", o.spec.Port, err)
			}
			if o.spec.Proxy {
				proxy = ln.Addr().(*net.TCPAddr).Port
			}
			sock := fdPath(o.dir, o.spec.Name)
			go relayAll(ln, func() (net.Conn, error) { return net.Dial("unix", sock) })
		}
		return proxy, nil
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
		copyQuick(dst, src)
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

// copyQuick copies src to dst. From a TCP connection it asks for quick
// acknowledgements before every read: a server that writes an answer in
// two parts with Nagle's algorithm on (most do, the headers then the
// body) would otherwise wait for the relay's delayed acknowledgement,
// some 40 ms, on every answer.
func copyQuick(dst, src net.Conn) {
	tc, ok := src.(*net.TCPConn)
	if !ok {
		_, _ = io.Copy(dst, src)
		return
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		_, _ = io.Copy(dst, src)
		return
	}
	buf := make([]byte, 32<<10)
	for {
		_ = raw.Control(func(fd uintptr) { _ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1) })
		n, err := tc.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// probeAll answers each connection to a port's probe socket with one
// byte: '1' when the port accepts a connection inside, '0' when not.
func probeAll(ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			answer := []byte{'0'}
			if d, err := net.DialTimeout("tcp", target, time.Second); err == nil {
				d.Close()
				answer[0] = '1'
			}
			_, _ = c.Write(answer)
		}()
	}
}
