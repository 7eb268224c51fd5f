package overlay_test

import (
	"fmt"
	"testing"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/overlay"
)

// BenchmarkPut writes entries=N new files (100 per directory) into one
// overlay, the way a large batch near the entry limit does.
func BenchmarkPut(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			f := openFixture(b, "small")
			id := f.blob(b, "x\n")
			paths := make([]string, n)
			for i := range paths {
				paths[i] = fmt.Sprintf("gen/d%04d/f%03d.txt", i/100, i%100)
			}
			for b.Loop() {
				o := overlay.New(f.view, overlay.Options{})
				for _, p := range paths {
					if err := o.Put(b.Context(), p, id, gitstore.ModeFile); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
