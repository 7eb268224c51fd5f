package durable

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	require.NoError(t, WriteFile(p, []byte("one"), 0o600))
	require.NoError(t, WriteFile(p, []byte("two"), 0o600))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "two", string(b))
	st, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, es, 1, "no temporary file is left")

	assert.Error(t, WriteFile(filepath.Join(dir, "no", "such", "dir", "f"), []byte("x"), 0o644))
}

func TestWriteTempAndMkdirAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "c")
	require.NoError(t, MkdirAll(dir))
	require.NoError(t, MkdirAll(dir), "an existing directory is fine")
	name, err := WriteTemp(dir, "tmp_", []byte("data"), 0o444)
	require.NoError(t, err)
	assert.Equal(t, dir, filepath.Dir(name))
	st, err := os.Stat(name)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o444), st.Mode().Perm())
	_, err = WriteTemp(filepath.Join(dir, "missing"), "tmp_", nil, 0o444)
	assert.Error(t, err)
}
