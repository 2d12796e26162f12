package modelconfig

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// sealVersion prefixes every sealed secret so a later format can coexist.
const sealVersion = 1

// ErrSecretKey: a sealed secret opens with none of the configured keys.
var ErrSecretKey = errors.New("modelconfig: the secret does not open with CHATD_SECRET_KEY (nor CHATD_SECRET_KEY_PREVIOUS)")

// Cipher seals provider API keys with AES-256-GCM. Sealing uses the current
// key; opening tries the current key, then the previous one (rotation).
type Cipher struct {
	current  cipher.AEAD
	previous cipher.AEAD // nil when no rotation is under way
}

// NewCipher derives AES-256 keys from the key strings (SHA-256 of each, so
// any passphrase or random string works); previous may be empty.
func NewCipher(current, previous string) (*Cipher, error) {
	if current == "" {
		return nil, errors.New("secret key: empty")
	}
	c := &Cipher{}
	var err error
	if c.current, err = aead(current); err != nil {
		return nil, err
	}
	if previous != "" {
		if c.previous, err = aead(previous); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func aead(key string) (cipher.AEAD, error) {
	sum := sha256.Sum256([]byte(key))
	block, err := aes.NewCipher(sum[:])
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	g, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	return g, nil
}

// Seal encrypts plain: version byte, nonce, ciphertext and tag.
func (c *Cipher) Seal(plain string) []byte {
	nonce := make([]byte, c.current.NonceSize(), 1+c.current.NonceSize()+len(plain)+c.current.Overhead())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails
	out := append([]byte{sealVersion}, nonce...)
	return c.current.Seal(out, nonce, []byte(plain), []byte("chatd provider api key"))
}

// Open decrypts a sealed secret; stale reports that it opened only with the
// previous key and should be sealed again.
func (c *Cipher) Open(sealed []byte) (plain string, stale bool, err error) {
	n := c.current.NonceSize()
	if len(sealed) < 1+n || sealed[0] != sealVersion {
		return "", false, fmt.Errorf("open secret: unknown format")
	}
	nonce, body := sealed[1:1+n], sealed[1+n:]
	ad := []byte("chatd provider api key")
	if p, err := c.current.Open(nil, nonce, body, ad); err == nil {
		return string(p), false, nil
	}
	if c.previous != nil {
		if p, err := c.previous.Open(nil, nonce, body, ad); err == nil {
			return string(p), true, nil
		}
	}
	return "", false, ErrSecretKey
}

// ReadKeyFile reads the key in path; fs.ErrNotExist when there is no such
// file. A key file others can read is refused, as is an empty one.
func ReadKeyFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("read secret key file: %w", err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("secret key file: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("secret key file %s: mode %v lets others read it; chmod 600 it", path, info.Mode().Perm())
	}
	key := strings.TrimSpace(string(b))
	if key == "" {
		return "", fmt.Errorf("secret key file %s is empty", path)
	}
	return key, nil
}

// CreateKeyFile writes a new key (32 random bytes, hex) to path, mode
// 0600; it fails when path exists.
func CreateKeyFile(path string) (string, error) {
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	key := hex.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("create secret key file: %w", err)
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("write secret key file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write secret key file: %w", err)
	}
	return key, nil
}
