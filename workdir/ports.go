package workdir

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Ports between the daemon and a command's network namespace, the one
// way bytes cross between them. A command without the host's network has
// only its own loopback, which nothing outside reaches; the helper (PID
// 1 of the namespace) joins ports of that loopback to Unix sockets of
// the host, relaying bytes both ways:
//
//   - Expose: the helper listens on a Unix socket of the host and relays
//     each connection to a port of the command's loopback (the daemon
//     reaching a service's port).
//   - Reach: the helper listens on a port of the command's loopback and
//     relays each connection to a Unix socket of the host (a command
//     reaching another sandbox's exposed port, or the daemon's egress
//     proxy, egress.go, on a port the kernel picks).
//
// The socket's directory is opened before the command's root is built,
// and the socket named through /proc/self/fd, so neither the host's
// path nor its length (a Unix socket's name holds 107 bytes) matters
// inside.

// PortLink joins Port of a command's loopback (127.0.0.1) to the Unix
// socket at Socket, a path of the host.
type PortLink struct {
	Port   int
	Socket string
}

// portSpec is a PortLink as the helper is told it.
type portSpec struct {
	Port   int    `json:"port"`
	Dir    string `json:"dir"`
	Name   string `json:"name"`
	Listen bool   `json:"listen,omitempty"` // Expose: listen on the socket
	// Proxy: the link to the egress proxy; the command's environment
	// names its port (Port 0: one the kernel picks).
	Proxy bool `json:"proxy,omitempty"`
}

func portSpecs(expose, reach []PortLink) []portSpec {
	var out []portSpec
	for _, l := range expose {
		out = append(out, portSpec{Port: l.Port, Dir: filepath.Dir(l.Socket), Name: filepath.Base(l.Socket), Listen: true})
	}
	for _, l := range reach {
		out = append(out, portSpec{Port: l.Port, Dir: filepath.Dir(l.Socket), Name: filepath.Base(l.Socket)})
	}
	return out
}

// fdPath names entry name of the directory open at fd, whatever the
// directory's own path.
func fdPath(fd int, name string) string {
	return "/proc/self/fd/" + strconv.Itoa(fd) + "/" + name
}

// ProbeSocket is the name, beside an exposed port's socket called name,
// of the socket that says whether the port accepts connections inside:
// a connection there reads one byte, '1' or '0'. (A connection to the
// port's own socket is accepted before the port is tried.)
func ProbeSocket(name string) string { return name + ".probe" }

// ListenSocket listens on a Unix socket at path, of any length.
func ListenSocket(path string) (net.Listener, error) {
	if len(path) < 100 {
		return net.Listen("unix", path)
	}
	fd, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: "unix", Err: os.NewSyscallError("open", err)}
	}
	defer unix.Close(fd)
	l, err := net.Listen("unix", fdPath(fd, filepath.Base(path)))
	if err != nil {
		return nil, err
	}
	// Its name through the descriptor means nothing once that is closed.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	return l, nil
}

// DialSocket connects to the Unix socket at path, of any length.
func DialSocket(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	if len(path) < 100 {
		return d.DialContext(ctx, "unix", path)
	}
	fd, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("open", err)}
	}
	defer unix.Close(fd)
	return d.DialContext(ctx, "unix", fdPath(fd, filepath.Base(path)))
}
