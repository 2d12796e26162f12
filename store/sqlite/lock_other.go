//go:build !unix

package sqlite

import (
	"errors"
	"fmt"
	"os"

	"github.com/chatd/chatd/store"
)

// lockFile creates path exclusively. Without flock a crash can leave the
// file behind; the error message says how to recover.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%w: %s exists; if no chatd is running, delete it", store.ErrLocked, path)
		}
		return nil, fmt.Errorf("create lock file %s: %w", path, err)
	}
	return func() {
		f.Close()
		os.Remove(path)
	}, nil
}
