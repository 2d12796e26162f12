package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chatd/chatd/store"
)

// translate turns a driver error into a store error, once, here. The store
// sentinel and the server's message both survive; the driver error itself
// does not leak, except for context and network errors, which stay in the
// chain so callers can still test errors.Is(err, context.Canceled).
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	// A cancelled caller is not an unavailable database.
	if errors.Is(err, context.Canceled) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if sentinel := sentinelFor(pgErr.Code); sentinel != nil {
			return fmt.Errorf("%w: %s", sentinel, pgErr.Message)
		}
		return err
	}
	if unreachable(err) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// sentinelFor maps a SQLSTATE to a store error, or nil when none applies.
func sentinelFor(code string) error {
	switch code {
	case "23505", // unique_violation
		"23P01": // exclusion_violation
		return store.ErrConflict
	case "23503": // foreign_key_violation
		return store.ErrForeignKey
	case "P0001", // raise_exception: the version triggers refuse a write
		"23514", // check_violation
		"23502": // not_null_violation
		return store.ErrInvariant
	case "53100": // disk_full
		return store.ErrStorageFull
	case "25006": // read_only_sql_transaction
		return store.ErrReadOnly
	case "55P03", // lock_not_available (lock_timeout)
		"57014", // query_canceled (statement_timeout)
		"57P01", // admin_shutdown
		"57P02", // crash_shutdown
		"57P03", // cannot_connect_now
		"53300", // too_many_connections
		"40P01", // deadlock_detected: one side is rolled back; retrying works
		"40001": // serialization_failure
		return store.ErrUnavailable
	}
	switch {
	case strings.HasPrefix(code, "22"):
		// Data exceptions (invalid JSON or uuid text, out-of-range values,
		// a NOTIFY payload that is too long): the input broke a rule of
		// the database.
		return store.ErrInvariant
	case strings.HasPrefix(code, "08"):
		// Connection exceptions.
		return store.ErrUnavailable
	}
	return nil
}

// unreachable reports whether err means the database could not be reached
// or did not answer in time.
func unreachable(err error) bool {
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded),
		pgconn.Timeout(err),
		errors.As(err, &connectErr),
		errors.As(err, &netErr),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	// pgx reports a connection that died under a query, and a closed pool,
	// without a typed error in this module's dependencies.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool")
}
