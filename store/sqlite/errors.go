package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/chatd/chatd/store"
)

// translate turns a driver error into a store error, keeping the message.
// Context errors pass through unchanged so callers can still detect them.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	code := se.Code()
	switch {
	case code == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return fmt.Errorf("%w: %s", store.ErrConflict, se.Error())
	case code == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return fmt.Errorf("%w: %s", store.ErrForeignKey, se.Error())
	case code&0xff == sqlite3.SQLITE_CONSTRAINT:
		// RAISE(ABORT) in a trigger, CHECK and NOT NULL all land here.
		return fmt.Errorf("%w: %s", store.ErrInvariant, se.Error())
	case code&0xff == sqlite3.SQLITE_READONLY:
		return fmt.Errorf("%w: %s", store.ErrReadOnly, se.Error())
	case code&0xff == sqlite3.SQLITE_FULL:
		return fmt.Errorf("%w: %s", store.ErrStorageFull, se.Error())
	case code&0xff == sqlite3.SQLITE_BUSY || code&0xff == sqlite3.SQLITE_LOCKED:
		return fmt.Errorf("%w: %s", store.ErrUnavailable, se.Error())
	}
	return err
}
