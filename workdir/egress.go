package workdir

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A command whose network is an allowlist reaches only its egress proxy
// (package egress), which the daemon serves. Isolated, the daemon serves
// it on a Unix socket in the scratch, and the command reaches it as it
// reaches a service: a port of its own loopback the helper joins to that
// socket (a Reach link, ports.go; the port is one the kernel picks), so
// the namespace has no route to anything else. The command's environment
// names the port in HTTP_PROXY, HTTPS_PROXY and their lower-case
// spellings (NO_PROXY: the namespace's own loopback). Unisolated, the
// proxy listens on the host's loopback, and nothing stops a command from
// going around it.

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

// serveEgress serves e where the command reaches it (see the top of
// this file) until the returned stop is called, which waits for it.
// Isolated, link is the port link to give the helper, to a socket in a
// new directory of dir; unisolated, env names the host loopback
// listener.
func serveEgress(e Egress, dir string, isolated bool) (link *portSpec, env []string, stop func(), err error) {
	var l net.Listener
	var sockDir string
	if isolated {
		if sockDir, err = os.MkdirTemp(dir, "egress-"); err != nil {
			return nil, nil, nil, fmt.Errorf("egress listener: %w", err)
		}
		l, err = ListenSocket(filepath.Join(sockDir, "proxy"))
	} else {
		l, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		if sockDir != "" {
			_ = os.RemoveAll(sockDir)
		}
		return nil, nil, nil, fmt.Errorf("egress listener: %w", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Serve(l) }()
	stop = func() {
		l.Close()
		<-done
		if sockDir != "" {
			_ = os.RemoveAll(sockDir)
		}
	}
	if isolated {
		return &portSpec{Dir: sockDir, Name: "proxy", Proxy: true}, nil, stop, nil
	}
	return nil, proxyEnv(l.Addr().(*net.TCPAddr).Port), stop, nil
}
