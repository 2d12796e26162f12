package e2e_test

import (
	"context"
	"database/sql"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/open"
)

// schemaVersions opens db and returns its schema version and the newest
// this binary knows.
func schemaVersions(t *testing.T, ctx context.Context, db string) (dbVersion, known int64) {
	t.Helper()
	s, err := open.Store(ctx, db)
	require.NoError(t, err)
	defer s.Close()
	err = open.Migrate(ctx, s, func(p *goose.Provider) error {
		dbVersion, known, err = open.SchemaVersions(ctx, p)
		return err
	})
	require.NoError(t, err)
	return dbVersion, known
}

// The tests here are of construction: app.New opening and migrating a
// database, or refusing it, so they call it directly.

// TestConcurrentStartsMigrateOnce: replicas starting at once on one fresh
// Postgres schema all come up (the migration advisory lock serialises
// them; without it goose's table creation and inserts race) and leave the
// schema at the binary's newest version.
func TestConcurrentStartsMigrateOnce(t *testing.T) {
	t.Parallel()
	dsn, schema := dbtest.PostgresSchema(t)
	db := dsn + " search_path=" + schema
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const replicas = 8
	errs := make([]error, replicas)
	apps := make([]*app.App, replicas)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			<-start
			apps[i], errs[i] = app.New(ctx, config.Config{DB: db, NoWorker: true, SecretKey: testSecretKey}, logWriter{t})
		})
	}
	close(start)
	wg.Wait()
	for i := range replicas {
		require.NoError(t, errs[i], "replica %d", i)
		require.NoError(t, apps[i].Close())
	}
	dbVersion, known := schemaVersions(t, ctx, db)
	require.Positive(t, known)
	require.Equal(t, known, dbVersion)
}

// TestNewerSchemaRefused: a binary whose migrations stop short of the
// database's version refuses to start, saying so, on both stores.
func TestNewerSchemaRefused(t *testing.T) {
	dbs := map[string]func(t *testing.T) (db, driver, driverDSN string){
		"sqlite": func(t *testing.T) (string, string, string) {
			f := filepath.Join(t.TempDir(), "chatd.db")
			return f, "sqlite", f
		},
		"postgres": func(t *testing.T) (string, string, string) {
			dsn, schema := dbtest.PostgresSchema(t)
			return dsn + " search_path=" + schema, "pgx", dsn + " search_path=" + schema
		},
	}
	for name, newDB := range dbs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			db, driver, driverDSN := newDB(t)
			a, err := app.New(ctx, config.Config{DB: db, NoWorker: true, SecretKey: testSecretKey}, io.Discard)
			require.NoError(t, err)
			require.NoError(t, a.Close())

			// A newer chatd's migration.
			raw, err := sql.Open(driver, driverDSN)
			require.NoError(t, err)
			_, err = raw.ExecContext(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (9999, true)`)
			require.NoError(t, err)
			require.NoError(t, raw.Close())

			_, err = app.New(ctx, config.Config{DB: db, NoWorker: true, SecretKey: testSecretKey}, io.Discard)
			require.ErrorIs(t, err, open.ErrSchemaNewer)
			require.ErrorContains(t, err, "the database is at version 9999, this binary knows up to")
		})
	}
}

// testSecretKey is CHATD_SECRET_KEY for the Postgres starts.
const testSecretKey = "migrate-test-secret-key"

// logWriter sends an app's log to the test's.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
