//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/chatd/chatd/store"
)

// lockFile takes an exclusive, non-blocking flock on path. The kernel drops
// the lock when the process dies, so a crash never leaves a stale lock.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: another chatd holds %s; stop it first, or use PostgreSQL to run several replicas", store.ErrLocked, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
