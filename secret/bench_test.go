package secret

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkMaskStream: the cost masking adds to a command's output,
// streamed in 32 KiB chunks, by the number of secrets.
func BenchmarkMaskStream(b *testing.B) {
	line := []byte("ok  \tgithub.com/example/module/pkg/sub\t0.123s\tcoverage: 81.2% of statements\n")
	out := bytes.Repeat(line, (1<<20)/len(line))
	for _, n := range []int{1, 10, 100} {
		secrets := map[string]string{}
		for i := range n {
			secrets[fmt.Sprintf("S%d", i)] = fmt.Sprintf("ghp_%032d", i)
		}
		m := NewMasker(secrets)
		b.Run(fmt.Sprintf("secrets=%d/bytes=1MiB", n), func(b *testing.B) {
			b.SetBytes(int64(len(out)))
			for b.Loop() {
				s := m.Stream(func([]byte) {})
				for off := 0; off < len(out); off += 32 << 10 {
					s.Write(out[off:min(off+32<<10, len(out))])
				}
				s.Flush()
			}
		})
	}
}
