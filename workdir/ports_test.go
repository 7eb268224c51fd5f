package workdir_test

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/internal/testport"
	"github.com/sessiond/sessiond/workdir"
)

// A service's exposed port is reached through its socket, whether the
// service has its own loopback or shares the host's network (then the
// socket joins the host's loopback port, and the port is there too).
func TestServeExposedPort(t *testing.T) {
	m := newManager(t, workdir.ModeOverlay)
	if !m.Isolated() {
		t.Skip("no namespaces here: unisolated, a service is on the host's loopback without a socket")
	}
	f := newFixture(t)
	for _, host := range []bool{false, true} {
		port := testport.Free(t)
		sock := filepath.Join(t.TempDir(), "port.sock")
		server := `import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", ` + strconv.Itoa(port) + `)); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b"served"); c.close()`
		sc, err := m.Prepare(t.Context(), f.view())
		require.NoError(t, err)
		sv, err := sc.Serve(workdir.Command{Argv: []string{"python3", "-c", server}, Network: host,
			Expose: []workdir.PortLink{{Port: port, Socket: sock}}})
		require.NoError(t, err)
		require.NoError(t, sc.Settle(t.Context(), f.view(), nil))
		read := func(dial func(ctx context.Context) (net.Conn, error)) string {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			for ctx.Err() == nil {
				if c, err := dial(ctx); err == nil {
					b, _ := io.ReadAll(c)
					c.Close()
					if len(b) > 0 {
						return string(b)
					}
				}
				select {
				case <-sv.Done():
					res, err := sv.Result()
					t.Fatalf("the service ended: %v %s", err, res.Stderr)
				case <-time.After(20 * time.Millisecond):
				}
			}
			return ""
		}
		assert.Equal(t, "served", read(func(ctx context.Context) (net.Conn, error) { return workdir.DialSocket(ctx, sock) }), "host network %v", host)
		if host {
			var d net.Dialer
			assert.Equal(t, "served", read(func(ctx context.Context) (net.Conn, error) {
				return d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(port))
			}), "on the host's network, the port is the host's")
		} else {
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
			if err == nil {
				c.Close()
			}
			assert.Error(t, err, "with its own loopback, nothing listens on the host's port")
		}
		sv.Stop(time.Second)
	}
}
