package testport

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// floor is the lowest port handed out: above the well-known and most
// registered services' ports.
const floor = 20000

var (
	mu     sync.Mutex
	handed = map[int]bool{}
)

// Free returns a loopback TCP port nothing listens on now, outside the
// ephemeral range (see the package's invariants).
func Free(t testing.TB) int {
	t.Helper()
	top := ephemeralLow()
	mu.Lock()
	defer mu.Unlock()
	for range 1000 {
		p := floor + rand.IntN(top-floor)
		if handed[p] {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		ln.Close()
		handed[p] = true
		return p
	}
	t.Fatalf("no free loopback port in [%d, %d)", floor, top)
	return 0
}

// ephemeralLow is the first port of the kernel's ephemeral range
// (32768 when it cannot be read, Linux's default).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo <= floor+1000 {
		return 32768
	}
	return lo
}
