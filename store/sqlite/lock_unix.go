//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/chatd/chatd/store"
)

// lockDatabase takes the single-process lock for the database file at path
// (absolute). It locks two files: path+".lock", which older versions also
// take, and the database file itself. The second one is what makes every
// path to the same file collide: a symlink or a hard link names the same
// inode, and flock locks the inode, not the name. flock locks are
// independent of the fcntl byte-range locks SQLite takes on the same file,
// so holding one does not disturb SQLite. The kernel drops both when the
// process dies, so a crash never leaves a stale lock.
func lockDatabase(path string) (func(), error) {
	releaseSide, err := flockFile(resolvePath(path)+".lock", path)
	if err != nil {
		return nil, err
	}
	// SQLite treats an empty file as a new database, so creating it here is
	// harmless; 0600 because the database holds token hashes and chats.
	// The .lock file is taken first, so a second Open by the same path (or
	// a symlink) in this process is refused before it opens the database
	// file: closing any descriptor of a file drops this process's fcntl
	// locks on it, SQLite's included. Only a hard link opened twice in one
	// process gets that far, and another process is unaffected.
	releaseDB, err := flockFile(path, path)
	if err != nil {
		releaseSide()
		return nil, err
	}
	return func() {
		releaseDB()
		releaseSide()
	}, nil
}

// flockFile takes an exclusive, non-blocking flock on path, creating it if
// needed. db names the database in the refusal message.
func flockFile(path, db string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: another chatd holds %s (lock on %s); stop it first, or use PostgreSQL to run several replicas", store.ErrLocked, db, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
