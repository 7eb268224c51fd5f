package secret

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMaskBytes(t *testing.T) {
	m := NewMasker(map[string]string{"A": "hunter2", "B": "abc", "C": "s3cr3t-value", "D": "s3cr"})
	for _, tc := range []struct{ in, want string }{
		{"nothing here", "nothing here"},
		{"pw=hunter2!", "pw=***!"},
		{"hunter2hunter2", "******"},
		{"abc is short, kept", "abc is short, kept"},
		{"long s3cr3t-value and s3cr", "long *** and ***"},
		{"ends with hunt", "ends with hunt"},
	} {
		assert.Equal(t, tc.want, m.String(tc.in), tc.in)
	}
	assert.Equal(t, "C", m.Find([]byte("x s3cr3t-value")))
	assert.Equal(t, "", m.Find([]byte("hunter")))
}

// Every way of cutting the input into two or three chunks masks the same.
func TestMaskStreamSplit(t *testing.T) {
	m := NewMasker(map[string]string{"A": "hunter2", "B": "hunter2-long", "C": "xyzw"})
	in := "a hunter2 b hunter2-long c xyzwxyz hunte"
	want := "a *** b *** c ***xyz hunte"
	require.Equal(t, want, m.String(in))
	for i := 0; i <= len(in); i++ {
		for j := i; j <= len(in); j++ {
			var out strings.Builder
			s := m.Stream(func(p []byte) { out.Write(p) })
			s.Write([]byte(in[:i]))
			s.Write([]byte(in[i:j]))
			s.Write([]byte(in[j:]))
			s.Flush()
			assert.Equal(t, want, out.String(), "cut at %d and %d", i, j)
		}
	}
}

func TestMaskStreamHeldShorterValue(t *testing.T) {
	m := NewMasker(map[string]string{"A": "abcdef", "B": "abcd"})
	var out strings.Builder
	s := m.Stream(func(p []byte) { out.Write(p) })
	s.Write([]byte("x abcd"))
	s.Flush()
	assert.Equal(t, "x ***", out.String())
}

func TestBox(t *testing.T) {
	path := t.TempDir() + "/" + KeyFile
	b, err := LoadBox(path)
	require.NoError(t, err)
	sealed, err := b.Seal("r", "TOKEN", "hunter2")
	require.NoError(t, err)
	assert.NotContains(t, string(sealed), "hunter2")
	again, err := LoadBox(path)
	require.NoError(t, err)
	v, err := again.Open("r", "TOKEN", sealed)
	require.NoError(t, err)
	assert.Equal(t, "hunter2", v)
	_, err = again.Open("r", "OTHER", sealed)
	assert.ErrorIs(t, err, ErrOpen)
	_, err = again.Open("other", "TOKEN", sealed)
	assert.ErrorIs(t, err, ErrOpen)
}

func TestValidName(t *testing.T) {
	for _, n := range []string{"A", "_x", "TOKEN_2", "a1"} {
		assert.True(t, ValidName(n), n)
	}
	for _, n := range []string{"", "1A", "A-B", "A=B", "A B", "Ä"} {
		assert.False(t, ValidName(n), n)
	}
}

// A tail cut inside a value masks what is left of it.
func TestMaskTail(t *testing.T) {
	m := NewMasker(map[string]string{"A": "hunter2"})
	assert.Equal(t, "***\nnext ***\n", string(m.Tail([]byte("ter2\nnext hunter2\n"))))
	assert.Equal(t, "plain\n", string(m.Tail([]byte("plain\n"))))
}

// model masks leftmost-longest, one byte at a time: the specification
// the stream must meet however its input is cut.
func model(values []string, in string) string {
	var out strings.Builder
scan:
	for i := 0; i < len(in); {
		for _, v := range values { // longest first
			if strings.HasPrefix(in[i:], v) {
				out.WriteString(Mask)
				i += len(v)
				continue scan
			}
		}
		out.WriteByte(in[i])
		i++
	}
	return out.String()
}

func TestMaskStreamModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := "ab-"
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for round := range 2000 {
		secrets := map[string]string{}
		for i := range 1 + rng.IntN(3) {
			secrets[string(rune('A'+i))] = word(MinMask + rng.IntN(4))
		}
		m := NewMasker(secrets)
		var values []string
		for _, v := range m.values {
			values = append(values, string(v))
		}
		in := word(rng.IntN(40))
		want := model(values, in)
		var out strings.Builder
		s := m.Stream(func(p []byte) { out.Write(p) })
		for rest := in; rest != ""; {
			n := 1 + rng.IntN(len(rest))
			s.Write([]byte(rest[:n]))
			rest = rest[n:]
		}
		s.Flush()
		require.Equal(t, want, out.String(), "round %d: values %q, input %q", round, values, in)
	}
}
