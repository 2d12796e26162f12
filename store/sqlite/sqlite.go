// Package sqlite is the default chatd store: one database file opened with
// modernc.org/sqlite (pure Go, no cgo), WAL, synchronous=FULL, one writer
// connection and a separate read pool. One process owns the file at a time.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/chatd/chatd/migrations"
	"github.com/chatd/chatd/store"
)

// DefaultBusyTimeout bounds how long a statement waits for the write lock.
const DefaultBusyTimeout = 10 * time.Second

// Options tune Open. The zero value is the production configuration.
type Options struct {
	// BusyTimeout is SQLite's busy_timeout; DefaultBusyTimeout when zero.
	BusyTimeout time.Duration
	// ReadConns caps the read pool; runtime.NumCPU()*2 when zero (at least 4).
	ReadConns int
	// Synchronous overrides synchronous=FULL (benchmarks compare NORMAL).
	Synchronous string
}

// Store is the SQLite implementation of store.Store.
type Store struct {
	path   string
	writer *sql.DB
	reader *sql.DB
	// writes and reads cache the prepared statements of each pool.
	writes, reads *stmtCache
	// batch queues write transactions for group commit (batch.go).
	batch  batcher
	unlock func()
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database file at path and takes the
// process lock on it. A second Open of the same file, from this process or
// another, fails with store.ErrLocked until the first is closed. Open does not
// migrate; see Migrations.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", path, err)
	}
	unlock, err := lockDatabase(abs)
	if err != nil {
		return nil, err
	}
	s := &Store{path: abs, unlock: unlock}
	if err := s.open(ctx, opts); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) open(ctx context.Context, opts Options) error {
	busy := opts.BusyTimeout
	if busy == 0 {
		busy = DefaultBusyTimeout
	}
	syncMode := opts.Synchronous
	if syncMode == "" {
		syncMode = "FULL"
	}
	base := func(extra url.Values) string {
		q := url.Values{}
		// busy_timeout first, so no later pragma fails with SQLITE_BUSY.
		q.Set("_busy_timeout", strconv.FormatInt(busy.Milliseconds(), 10))
		q.Set("_journal_mode", "WAL")
		q.Set("_synchronous", syncMode)
		q.Set("_foreign_keys", "1")
		// Statement and savepoint journals (each trigger-firing write and
		// each member of a batched transaction opens one) stay in memory
		// instead of spilling to a temporary file once they pass 64 KiB:
		// they only undo part of a transaction still open, so a file keeps
		// nothing a crash could need. Temporary sort tables live there too.
		q.Add("_pragma", "temp_store(MEMORY)")
		for k, v := range extra {
			q[k] = v
		}
		return "file:" + (&url.URL{Path: s.path}).EscapedPath() + "?" + q.Encode()
	}

	var err error
	// One writer connection: SQLite has one write lock anyway, and BEGIN
	// IMMEDIATE takes it up front so a transaction never fails to upgrade.
	s.writer, err = sql.Open("sqlite", base(url.Values{"_txlock": {"immediate"}}))
	if err != nil {
		return fmt.Errorf("open sqlite writer: %w", err)
	}
	s.writer.SetMaxOpenConns(1)
	s.writer.SetMaxIdleConns(1)
	s.writer.SetConnMaxLifetime(0)
	if err := s.writer.PingContext(ctx); err != nil {
		return fmt.Errorf("open sqlite %s: %w", s.path, translate(err))
	}
	s.writes = newStmtCache(s.writer)

	readers := opts.ReadConns
	if readers == 0 {
		readers = max(4, runtime.NumCPU()*2)
	}
	s.reader, err = sql.Open("sqlite", base(url.Values{"_txlock": {"deferred"}, "_query_only": {"1"}}))
	if err != nil {
		return fmt.Errorf("open sqlite readers: %w", err)
	}
	s.reader.SetMaxOpenConns(readers)
	s.reader.SetMaxIdleConns(readers)
	if err := s.reader.PingContext(ctx); err != nil {
		return fmt.Errorf("open sqlite %s: %w", s.path, translate(err))
	}
	s.reads = newStmtCache(s.reader)
	return nil
}

// Path is the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Dialect returns "sqlite".
func (s *Store) Dialect() string { return "sqlite" }

// Migrations returns a goose provider over the embedded SQLite migrations.
func (s *Store) Migrations() (*goose.Provider, error) {
	return goose.NewProvider(goose.DialectSQLite3, s.writer, migrations.SQLite())
}

// Close closes both pools and releases the process lock.
func (s *Store) Close() error {
	var errs []error
	for _, c := range []*stmtCache{s.reads, s.writes} {
		if c != nil {
			errs = append(errs, c.close())
		}
	}
	if s.reader != nil {
		errs = append(errs, s.reader.Close())
	}
	if s.writer != nil {
		errs = append(errs, s.writer.Close())
	}
	if s.unlock != nil {
		s.unlock()
		s.unlock = nil
	}
	return errors.Join(errs...)
}

// InTx runs fn in a BEGIN IMMEDIATE transaction on the writer connection.
// Holding the database write lock for the whole transaction serialises it
// with every other writer, which is the SQLite form of the chat row lock.
// Concurrent calls share one transaction and one commit (group commit,
// batch.go), each fn in its own savepoint; InTx returns once the commit
// that holds fn's writes is durable.
func (s *Store) InTx(ctx context.Context, fn func(store.Tx) error) error {
	return s.inBatch(ctx, fn)
}

// ReadTx runs fn in a deferred transaction on the read pool; WAL gives it a
// stable snapshot from its first read, and query_only refuses writes.
func (s *Store) ReadTx(ctx context.Context, fn func(store.Reader) error) error {
	return s.run(ctx, s.reader, s.reads, func(tx store.Tx) error { return fn(tx) })
}

func (s *Store) run(ctx context.Context, db *sql.DB, cache *stmtCache, fn func(store.Tx) error) (err error) {
	raw, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", translate(err))
	}
	t := &sqlTx{tx: raw, cache: cache}
	returned := false
	defer func() {
		if p := recover(); p != nil {
			_ = raw.Rollback()
			panic(p)
		}
		if err != nil || !returned {
			// !returned: fn ended the goroutine (runtime.Goexit, as a
			// test's FailNow does); the connection goes back all the same.
			_ = raw.Rollback()
		}
		// The connection is free again: cache what ran unprepared.
		if len(t.missed) > 0 && ctx.Err() == nil {
			cache.prepare(ctx, t.missed)
		}
	}()
	err = fn(&tx{tx: t})
	returned = true
	if err != nil {
		return err
	}
	if err := raw.Commit(); err != nil {
		return fmt.Errorf("commit: %w", translate(err))
	}
	return nil
}

// resolvePath follows symlinks in path (absolute), so a lock file named
// after it is the same for every symlinked route to the database. A file
// that does not exist yet resolves through its directory.
func resolvePath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return path
	}
	// A dangling symlink would be created at its target by O_CREATE;
	// name the lock after the link then, as before.
	if _, err := os.Lstat(path); err == nil {
		return path
	}
	return filepath.Join(dir, filepath.Base(path))
}
