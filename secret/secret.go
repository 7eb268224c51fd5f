package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"os"

	"github.com/sessiond/sessiond/internal/durable"
)

// Sentinel errors.
var (
	// ErrOpen: a sealed value that does not open with this key (another
	// data directory's key, or damaged).
	ErrOpen = errors.New("secret does not open with this key")
)

// MaxValueBytes is the largest secret value accepted.
const MaxValueBytes = 64 << 10

// MinMask is the shortest value that is masked in outputs and refused in
// recorded files; shorter ones would mask too much that is not a secret.
const MinMask = 4

// KeyFile is the name of the key's file in the data directory.
const KeyFile = "secrets.key"

// ValidName reports whether name is a valid environment variable name: a
// letter or '_', then letters, digits and '_'.
func ValidName(name string) bool {
	if name == "" || len(name) > 256 {
		return false
	}
	for i, c := range []byte(name) {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Box seals and opens secret values with one key.
type Box struct {
	aead cipher.AEAD
}

// LoadBox reads the 32-byte key at path, creating it (mode 0600) when it
// does not exist.
func LoadBox(path string) (*Box, error) {
	key, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		if err := durable.WriteFile(path, key, 0o600); err != nil {
			return nil, fmt.Errorf("secrets key: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("secrets key: %w", err)
	case len(key) != 32:
		return nil, fmt.Errorf("secrets key: %d bytes, want 32", len(key))
	}
	return NewBox(key)
}

// NewBox returns a Box over a 32-byte key.
func NewBox(key []byte) (*Box, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

func additional(repo, name string) []byte {
	return []byte(repo + "\x00" + name)
}

// Seal encrypts value for the secret name of repo: a random nonce, then
// the ciphertext.
func (b *Box) Seal(repo, name, value string) ([]byte, error) {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(value)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return b.aead.Seal(nonce, nonce, []byte(value), additional(repo, name)), nil
}

// Open decrypts what Seal returned for the same repository and name.
func (b *Box) Open(repo, name string, sealed []byte) (string, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n {
		return "", fmt.Errorf("secret %q of repository %q: %w", name, repo, ErrOpen)
	}
	out, err := b.aead.Open(nil, sealed[:n], sealed[n:], additional(repo, name))
	if err != nil {
		return "", fmt.Errorf("secret %q of repository %q: %w", name, repo, ErrOpen)
	}
	return string(out), nil
}
