//go:build !unix

package sqlite

import (
	"errors"
	"fmt"
	"os"

	"github.com/chatd/chatd/store"
)

// lockDatabase creates the lock file beside the database exclusively,
// after resolving symlinks so that every symlinked path to the database
// shares one lock file. Without flock a crash can leave the file behind;
// the error message says how to recover. Hard links are not detected here.
func lockDatabase(path string) (func(), error) {
	lock := resolvePath(path) + ".lock"
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%w: %s exists; if no chatd is running, delete it", store.ErrLocked, lock)
		}
		return nil, fmt.Errorf("create lock file %s: %w", lock, err)
	}
	return func() {
		f.Close()
		os.Remove(lock)
	}, nil
}
