//go:build linux

package workdir

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// egressFD is the second stage's end of the socket pair on which it
// hands the daemon the proxy's listener (with Egress set).
const egressFD = joinedFD + 1

// egressPair makes the socket pair the helper hands the listener over:
// the daemon's end, and the helper's (to pass as a file).
func egressPair() (daemon *net.UnixConn, helper *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("egress socket pair: %w", err)
	}
	f := os.NewFile(uintptr(fds[0]), "egress")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("egress socket pair: %w", err)
	}
	return c.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "egress-helper"), nil
}

// handOverEgress, in the helper's second stage, opens the proxy's
// listener on 127.0.0.1 of the command's network namespace, hands it to
// the daemon on egressFD and returns the command's environment naming
// it (egress.go).
func handOverEgress(env []string) ([]string, error) {
	defer unix.Close(egressFD)
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(s)
	if err := unix.Bind(s, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return nil, fmt.Errorf("bind: %w", err)
	}
	if err := unix.Listen(s, 128); err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	sa, err := unix.Getsockname(s)
	if err != nil {
		return nil, err
	}
	port := sa.(*unix.SockaddrInet4).Port
	if err := unix.Sendmsg(egressFD, []byte(strconv.Itoa(port)), unix.UnixRights(s), nil, 0); err != nil {
		return nil, fmt.Errorf("hand over: %w", err)
	}
	return withEnv(env, proxyEnv(port)), nil
}
