// Package open opens the store a DSN names, migrates it and checks its
// schema against this binary's migrations (as river keeps migrations in
// rivermigrate). It is the only package outside the store packages and
// their test kits that names a concrete store: cmd/chatd, app and
// app/dbcopy open stores through it and ask the store for optional
// capabilities (Postgres's pubsub, replicas) by interface.
package open

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/postgres"
	"github.com/chatd/chatd/store/sqlite"
)

// Migrator is what both stores offer for schema migrations.
type Migrator interface {
	store.Store
	Migrations() (*goose.Provider, error)
}

// IsPostgres reports whether db names a PostgreSQL database (a
// postgres:// or postgresql:// URL, or a keyword/value DSN with dbname=);
// anything else is a SQLite file path.
func IsPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") ||
		strings.Contains(db, "dbname=") // a keyword/value DSN: host=... dbname=...
}

// Describe is db for logs and errors, without credentials.
func Describe(db string) string {
	if !IsPostgres(db) {
		return "sqlite " + db
	}
	cfg, err := pgconn.ParseConfig(db)
	if err != nil {
		return "postgres (unparsable DSN)"
	}
	return fmt.Sprintf("postgres host=%s port=%d dbname=%s user=%s", cfg.Host, cfg.Port, cfg.Database, cfg.User)
}

// Store opens the store db names, without migrating. Opening a SQLite
// file takes its process lock (store.ErrLocked when a server holds it).
func Store(ctx context.Context, db string) (Migrator, error) {
	if IsPostgres(db) {
		return postgres.Open(ctx, db, postgres.Options{})
	}
	return sqlite.Open(ctx, db, sqlite.Options{})
}

// migrationLocker is a store several processes may migrate at once
// (Postgres): Migrate holds its lock while fn runs.
type migrationLocker interface {
	MigrationLock(ctx context.Context) (unlock func(), err error)
}

// Migrate runs fn on the store's goose provider, under the store's
// migration lock when it has one, so replicas starting together never
// race on the schema.
func Migrate(ctx context.Context, s Migrator, fn func(*goose.Provider) error) error {
	if l, ok := s.(migrationLocker); ok {
		unlock, err := l.MigrationLock(ctx)
		if err != nil {
			return err
		}
		defer unlock()
	}
	p, err := s.Migrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	return fn(p)
}

// Up migrates s to this binary's newest schema, refusing a database a
// newer chatd migrated (ErrSchemaNewer). applied, when non-nil, hears of
// each migration run.
func Up(ctx context.Context, s Migrator, applied func(goose.MigrationResult)) error {
	return Migrate(ctx, s, func(p *goose.Provider) error {
		if err := CheckSchema(ctx, p); err != nil {
			return err
		}
		results, err := p.Up(ctx)
		for _, r := range results {
			if applied != nil {
				applied(*r)
			}
		}
		return err
	})
}

// Migrated opens db and brings its schema up to date (for short-lived
// commands); the caller closes the store.
func Migrated(ctx context.Context, db string) (Migrator, error) {
	s, err := Store(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", Describe(db), err)
	}
	if err := Migrate(ctx, s, func(p *goose.Provider) error { _, err := p.Up(ctx); return err }); err != nil {
		s.Close()
		return nil, fmt.Errorf("migrate %s: %w", Describe(db), err)
	}
	return s, nil
}

// ErrSchemaNewer is returned when the database holds migrations this
// binary does not know: a newer chatd migrated it, and this one would run
// against a schema it was not written for.
var ErrSchemaNewer = errors.New("the database schema is newer than this chatd binary")

// SchemaVersions returns the database's schema version and the newest
// version this binary's migrations reach.
func SchemaVersions(ctx context.Context, p *goose.Provider) (db, known int64, err error) {
	db, err = p.GetDBVersion(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("read the database's schema version: %w", err)
	}
	if srcs := p.ListSources(); len(srcs) > 0 {
		known = srcs[len(srcs)-1].Version
	}
	return db, known, nil
}

// CheckSchema returns ErrSchemaNewer when the database is at a version
// beyond the binary's newest migration.
func CheckSchema(ctx context.Context, p *goose.Provider) error {
	db, known, err := SchemaVersions(ctx, p)
	if err != nil {
		return err
	}
	if db > known {
		return fmt.Errorf("%w: the database is at version %d, this binary knows up to %d; run the newer chatd (or roll the database back with the newer binary's `chatd migrate down`)", ErrSchemaNewer, db, known)
	}
	return nil
}
