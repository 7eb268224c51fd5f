package workdir

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A command whose network is an allowlist reaches only its egress proxy
// (package egress), which the daemon serves. Isolated, the helper (PID 1
// of the command's namespaces, after bringing up their loopback) opens a
// TCP listener on 127.0.0.1 in the command's network namespace and hands
// its descriptor to the daemon over a Unix socket pair; the daemon
// accepts the command's connections from it directly, so no byte is
// relayed by a process inside, and the namespace has no route to
// anything else. The command's environment names the listener in
// HTTP_PROXY, HTTPS_PROXY and their lower-case spellings (NO_PROXY:
// the namespace's own loopback). Unisolated, the listener is on the
// host's loopback, and nothing stops a command from going around it.

// Egress is a command's egress proxy: it serves the connections the
// command makes to it, accepted from l, until l is closed, then ends
// them and returns (egress.Proxy).
type Egress interface {
	Serve(l net.Listener) error
}

// proxyEnv is what tells the command's tools where the proxy is.
func proxyEnv(port int) []string {
	u := "http://127.0.0.1:" + strconv.Itoa(port)
	noProxy := "localhost,127.0.0.1,::1"
	return []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy}
}

// withEnv sets the variables of set in env, replacing any it has.
func withEnv(env, set []string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, s := range set {
			if strings.HasPrefix(s, k+"=") {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

// receiveListener reads the listener the helper hands over on c (with
// its port as the message); an error when the helper ended first.
func receiveListener(c *net.UnixConn) (net.Listener, error) {
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, errors.New("egress: no listener from the helper")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, errors.New("egress: no listener from the helper")
	}
	f := os.NewFile(uintptr(fds[0]), "egress-listener")
	defer f.Close()
	return net.FileListener(f)
}

// serveEgress serves e on what the command reaches (see the top of this
// file) until the returned stop is called, which waits for it. Isolated,
// helper is the file to hand the helper (nil otherwise) and the listener
// comes from it; unisolated, the returned env names the host loopback
// listener.
func serveEgress(e Egress, isolated bool) (helper *os.File, env []string, stop func(), err error) {
	if !isolated {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, nil, fmt.Errorf("egress listener: %w", err)
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = e.Serve(l) }()
		return nil, proxyEnv(l.Addr().(*net.TCPAddr).Port), func() { l.Close(); <-done }, nil
	}
	c, helper, err := egressPair()
	if err != nil {
		return nil, nil, nil, err
	}
	lc := make(chan net.Listener, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l, err := receiveListener(c)
		c.Close()
		if err != nil {
			return
		}
		lc <- l
		_ = e.Serve(l)
	}()
	stop = func() {
		c.Close() // a helper that never handed one over
		select {
		case l := <-lc:
			l.Close()
		case <-done:
		}
		<-done
	}
	return helper, nil, stop, nil
}
