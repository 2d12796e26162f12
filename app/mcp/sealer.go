package mcp

import "fmt"

// Cipher seals and opens strings: modelconfig.Cipher, the providers' API
// key cipher (AES-GCM under CHATD_SECRET_KEY).
type Cipher interface {
	Seal(plain string) []byte
	Open(sealed []byte) (plain string, stale bool, err error)
}

// CipherSealer seals MCP servers' env and header values like provider API
// keys, with the providers' Cipher. Rows written before encryption existed
// ("plain:"-marked) still open, and are sealed at their next write.
type CipherSealer struct{ Cipher Cipher }

var _ Sealer = CipherSealer{}

// Seal seals plain with the cipher.
func (s CipherSealer) Seal(plain []byte) ([]byte, error) { return s.Cipher.Seal(string(plain)), nil }

// Open opens a sealed value, or a plain-marked one written before
// encryption existed.
func (s CipherSealer) Open(sealed []byte) ([]byte, error) {
	if plain, err := (PlainSealer{}).Open(sealed); err == nil {
		return plain, nil
	}
	plain, _, err := s.Cipher.Open(sealed)
	if err != nil {
		return nil, fmt.Errorf("open MCP server secrets (is CHATD_SECRET_KEY the one they were sealed with?): %w", err)
	}
	return []byte(plain), nil
}
