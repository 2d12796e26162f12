// Package postgres is the PostgreSQL store of chatd, built on pgx. The
// version bookkeeping of the architecture spec (message revisions,
// history_version, queue_version, retry_state_version) is done by the real
// triggers of migrations/postgres; this package only issues plain SQL.
//
// The package also provides Pubsub, a LISTEN/NOTIFY implementation of the
// notification interface used when several replicas share one database.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/chatd/chatd/migrations"
	"github.com/chatd/chatd/store"
)

// rollbackTimeout bounds a rollback issued after the caller's context is
// already done, so a broken connection cannot hang the caller.
const rollbackTimeout = 5 * time.Second

// commitTimeout bounds a commit, which does not follow the caller's
// context (see run).
const commitTimeout = 5 * time.Second

// Options tune Open. The zero value is the production configuration.
type Options struct {
	// SearchPath, when set, becomes the search_path of every connection
	// (tests use one schema per test).
	SearchPath string
}

// Store is the PostgreSQL implementation of store.Store.
type Store struct {
	pool *pgxpool.Pool
	// db serves goose only: goose speaks database/sql.
	db *sql.DB
}

var _ store.Store = (*Store)(nil)

// Open connects a pool to dsn (a libpq keyword/value string or a URL) and
// checks that the database answers. It does not migrate; see Migrations.
// Pool settings come from the DSN (pool_max_conns and friends of pgxpool).
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse postgres dsn: %w", err)
	}
	if opts.SearchPath != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = opts.SearchPath
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres pool: %w", translate(err))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to postgres: %w", translate(err))
	}
	// The same connection settings (search_path included) so goose migrates
	// the schema the pool reads.
	db := stdlib.OpenDB(*cfg.ConnConfig.Copy())
	return &Store{pool: pool, db: db}, nil
}

// Pool exposes the connection pool for the Postgres-only components
// (pubsub, heartbeats).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Dialect returns "postgres".
func (s *Store) Dialect() string { return "postgres" }

// Migrations returns a goose provider over the embedded PostgreSQL
// migrations, bound to the store's database and search_path.
func (s *Store) Migrations() (*goose.Provider, error) {
	return goose.NewProvider(goose.DialectPostgres, s.db, migrations.Postgres())
}

// MigrationLock takes the session advisory lock that serialises schema
// migrations of this schema (one lock per search_path schema, so tests on
// other schemas do not wait), waiting for a holder to finish. Replicas
// starting together migrate one at a time; the later ones find nothing
// pending. unlock releases it; the lock also goes with the connection.
func (s *Store) MigrationLock(ctx context.Context) (unlock func(), err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire a connection for the migration lock: %w", translate(err))
	}
	const key = `hashtextextended('chatd migrations ' || current_schema(), 0)`
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+key+`)`); err != nil {
		conn.Release()
		return nil, fmt.Errorf("take the migration lock: %w", translate(err))
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
		defer cancel()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(`+key+`)`); err != nil {
			// A connection whose unlock failed may still hold the lock:
			// close it rather than return it to the pool.
			_ = conn.Conn().Close(ctx)
		}
		conn.Release()
	}, nil
}

// Close closes the pool and the migration connection.
func (s *Store) Close() error {
	s.pool.Close()
	return s.db.Close()
}

// InTx runs fn in a READ COMMITTED transaction. Transitions serialise on the
// chat row lock (ChatLock), not on the isolation level. The transaction is
// rolled back when fn returns an error or panics; once fn has returned nil
// it commits even if ctx is done meanwhile, so an error means nothing was
// written (short of a connection lost during the COMMIT).
func (s *Store) InTx(ctx context.Context, fn func(store.Tx) error) error {
	return s.run(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, fn)
}

// ReadTx runs fn in a REPEATABLE READ READ ONLY transaction: every query
// sees the snapshot taken by the first one, and any write fails with
// store.ErrReadOnly.
func (s *Store) ReadTx(ctx context.Context, fn func(store.Reader) error) error {
	return s.run(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx store.Tx) error { return fn(tx) })
}

func (s *Store) run(ctx context.Context, opts pgx.TxOptions, fn func(store.Tx) error) (err error) {
	pgTx, err := s.pool.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin: %w", translate(err))
	}
	returned := false
	defer func() {
		p := recover()
		// !returned: fn ended the goroutine (runtime.Goexit, as a test's
		// FailNow does); the connection goes back clean all the same.
		if p != nil || err != nil || !returned {
			// Roll back even when ctx is done, so the connection goes back to
			// the pool clean instead of being discarded.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
			_ = pgTx.Rollback(rctx)
			cancel()
		}
		if p != nil {
			panic(p)
		}
	}()
	err = fn(&tx{tx: &countingTx{Tx: pgTx}, snapshot: opts.AccessMode == pgx.ReadOnly})
	returned = true
	if err != nil {
		return err
	}
	// fn's work is done: commit even when ctx ends meanwhile. A COMMIT cut
	// off by the caller's cancellation may commit on the server all the
	// same, and a caller told it failed would not publish what it wrote
	// (a runner's abandon, cancelled by new work, left its chat runnable
	// with no owner and no chat:ownership notification until the next
	// timed acquisition pass).
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	if err := pgTx.Commit(cctx); err != nil {
		if errors.Is(err, pgx.ErrTxCommitRollback) {
			// fn swallowed a failed statement: Postgres rolled back.
			return fmt.Errorf("commit: transaction was aborted by an earlier error: %w", err)
		}
		return fmt.Errorf("commit: %w", translate(err))
	}
	return nil
}
