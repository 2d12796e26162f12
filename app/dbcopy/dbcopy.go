// Package dbcopy copies a chatd database between SQLite and PostgreSQL,
// losslessly: every row of every table (ids, revisions, versions,
// timestamps, token hashes, durable claims and the tool journal, sealed
// secrets as bytes), in foreign-key order, in one target transaction that
// is verified (row counts and checksums over a canonical export) before it
// commits. Sealed secrets stay sealed, so the target must be served with
// the same CHATD_SECRET_KEY as the source.
package dbcopy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/open"
	"github.com/chatd/chatd/store/sqlite"
)

// ErrRefused wraps every reason the copy will not start: a running
// source, a non-empty target, a schema it does not know.
var ErrRefused = errors.New("copy refused")

// timeFormat is the SQLite store's timestamp text (fixed width, UTC).
const timeFormat = "2006-01-02T15:04:05.000000Z"

// Options say what to copy where.
type Options struct {
	// From and To are a SQLite file path and a Postgres DSN (URL or
	// keyword/value), one of each, in either order.
	From, To string
	// Progress receives one line per table; nil discards.
	Progress io.Writer
}

// TableResult is one table's outcome.
type TableResult struct {
	Name     string
	Rows     int64
	Checksum string // hex SHA-256 of the canonical export
	Skipped  string // why it was not copied, when it was not
}

// Result is the outcome of a copy, table by table in copy order.
type Result struct {
	Version int64 // the schema version of both sides
	Tables  []TableResult
}

// Copy copies opts.From into opts.To. The target is migrated up first and
// must then be empty; the source must be at the same schema version and
// not in use by a running server.
func Copy(ctx context.Context, opts Options) (Result, error) {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	if open.IsPostgres(opts.From) == open.IsPostgres(opts.To) {
		return Result{}, fmt.Errorf("%w: copy goes between a SQLite file and PostgreSQL, one on each side", ErrRefused)
	}
	src, err := openSide(ctx, opts.From, false)
	if err != nil {
		return Result{}, fmt.Errorf("source: %w", err)
	}
	defer src.close()
	dst, err := openSide(ctx, opts.To, true)
	if err != nil {
		return Result{}, fmt.Errorf("target: %w", err)
	}
	defer dst.close()
	if src.version != dst.version {
		return Result{}, fmt.Errorf("%w: the source is at schema version %d and the target at %d: run `chatd migrate --db SOURCE up` first", ErrRefused, src.version, dst.version)
	}
	if err := src.refuseLive(ctx); err != nil {
		return Result{}, err
	}
	pg := src
	if dst.dialect == "postgres" {
		pg = dst
	}
	if err := checkTables(ctx, src, dst); err != nil {
		return Result{}, err
	}
	if err := dst.refuseNonEmpty(ctx); err != nil {
		return Result{}, err
	}

	res := Result{Version: src.version}
	srcTx, err := src.db.BeginTx(ctx, src.readOpts())
	if err != nil {
		return Result{}, fmt.Errorf("begin source snapshot: %w", err)
	}
	defer srcTx.Rollback() //nolint:errcheck // read-only
	dstTx, err := dst.db.BeginTx(ctx, nil)
	if err != nil {
		return Result{}, fmt.Errorf("begin target transaction: %w", err)
	}
	defer dstTx.Rollback() //nolint:errcheck // a no-op after Commit

	restore, err := dst.suspendTriggers(ctx, dstTx)
	if err != nil {
		return Result{}, err
	}
	for _, t := range Tables {
		if t.Skip != "" {
			res.Tables = append(res.Tables, TableResult{Name: t.Name, Skipped: t.Skip})
			fmt.Fprintf(progress, "%-22s skipped: %s\n", t.Name, t.Skip)
			continue
		}
		cols, err := columns(ctx, pg, t.Name)
		if err != nil {
			return Result{}, err
		}
		tr, err := copyTable(ctx, t, cols, src, srcTx, dst, dstTx)
		if err != nil {
			return Result{}, fmt.Errorf("copy %s: %w", t.Name, err)
		}
		res.Tables = append(res.Tables, tr)
		fmt.Fprintf(progress, "%-22s %8d rows  sha256 %s\n", t.Name, tr.Rows, tr.Checksum[:16])
	}
	if err := restore(); err != nil {
		return Result{}, err
	}
	if dst.dialect == "sqlite" {
		// The message triggers listed the copied messages for search;
		// index them before the commit, as the store does.
		for _, q := range sqlite.SearchIndexPending {
			if _, err := dstTx.ExecContext(ctx, q); err != nil {
				return Result{}, fmt.Errorf("index messages for search: %w", err)
			}
		}
	}
	// Verify through the target transaction, so a mismatch leaves the
	// target as empty as it was.
	for _, tr := range res.Tables {
		if tr.Skipped != "" {
			continue
		}
		cols, err := columns(ctx, pg, tr.Name)
		if err != nil {
			return Result{}, err
		}
		got, err := exportTable(ctx, dst, dstTx, tr.Name, cols, nil)
		if err != nil {
			return Result{}, fmt.Errorf("verify %s: %w", tr.Name, err)
		}
		if got.Rows != tr.Rows || got.Checksum != tr.Checksum {
			return Result{}, fmt.Errorf("verify %s: the target has %d rows (sha256 %s), the source %d (sha256 %s); nothing was committed", tr.Name, got.Rows, got.Checksum, tr.Rows, tr.Checksum)
		}
	}
	if err := dstTx.Commit(); err != nil {
		return Result{}, fmt.Errorf("commit target: %w", err)
	}
	fmt.Fprintf(progress, "verified %d tables: row counts and checksums match (schema version %d)\n", len(res.Tables), res.Version)
	return res, nil
}

// side is one open database.
type side struct {
	dialect string
	db      *sql.DB
	version int64
	closers []func() error
}

func (s *side) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		_ = s.closers[i]()
	}
}

func (s *side) readOpts() *sql.TxOptions {
	if s.dialect == "postgres" {
		return &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	return nil // a deferred transaction: WAL gives it one snapshot
}

// pooled is the Postgres store: its pool carries the copy's plain SQL.
type pooled interface{ Pool() *pgxpool.Pool }

// openSide opens db through its store (which, for SQLite, takes the process
// lock, so a running server's file is refused), migrates a target up and
// reads the schema version.
func openSide(ctx context.Context, db string, target bool) (*side, error) {
	s := &side{}
	if !open.IsPostgres(db) && !target {
		if _, err := os.Stat(db); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrRefused, db, err)
		}
	}
	st, err := open.Store(ctx, db)
	if errors.Is(err, store.ErrLocked) {
		return nil, fmt.Errorf("%w: %w (a running server owns the file; stop it, or take a snapshot with `chatd backup` and copy that)", ErrRefused, err)
	}
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, st.Close)
	p, err := st.Migrations()
	if err != nil {
		s.close()
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	if pg, ok := st.(pooled); ok {
		s.dialect = "postgres"
		s.db = stdlib.OpenDBFromPool(pg.Pool())
		s.closers = append(s.closers, s.db.Close)
	} else {
		s.dialect = "sqlite"
		// A connection of our own beside the store's (which holds the
		// lock and stays idle): plain SQL, one connection.
		abs, _ := filepath.Abs(db)
		q := url.Values{}
		q.Set("_busy_timeout", "10000")
		q.Set("_foreign_keys", "1")
		if target {
			q.Set("_txlock", "immediate")
		} else {
			q.Set("_txlock", "deferred")
			q.Set("_query_only", "1") // the source is only read
		}
		s.db, err = sql.Open("sqlite", "file:"+(&url.URL{Path: abs}).EscapedPath()+"?"+q.Encode())
		if err != nil {
			s.close()
			return nil, fmt.Errorf("open %s: %w", db, err)
		}
		s.db.SetMaxOpenConns(1)
		s.closers = append(s.closers, s.db.Close)
	}
	if target {
		if _, err := p.Up(ctx); err != nil {
			s.close()
			return nil, fmt.Errorf("migrate up: %w", err)
		}
	}
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("read the schema version: %w", err)
	}
	s.version = v
	return s, nil
}

// refuseLive refuses a Postgres source that replicas are serving: a fresh
// heartbeat or replica record. (A SQLite source is refused by its lock.)
func (s *side) refuseLive(ctx context.Context) error {
	if s.dialect != "postgres" {
		return nil
	}
	window := worker.DefaultLeaseTimeout.Microseconds()
	for _, q := range []string{
		`SELECT count(*) FROM chat_heartbeats WHERE heartbeat_at > statement_timestamp() - $1::bigint * interval '1 microsecond'`,
		`SELECT count(*) FROM chat_replicas WHERE updated_at > statement_timestamp() - $1::bigint * interval '1 microsecond'`,
	} {
		var n int64
		if err := s.db.QueryRowContext(ctx, q, window).Scan(&n); err != nil {
			return fmt.Errorf("check for running replicas: %w", err)
		}
		if n > 0 {
			return fmt.Errorf("%w: the source is in use: a replica stamped a heartbeat or its record less than %s ago; stop every `chatd serve` on it first", ErrRefused, worker.DefaultLeaseTimeout)
		}
	}
	return nil
}

// refuseNonEmpty refuses a target that holds any chatd row.
func (s *side) refuseNonEmpty(ctx context.Context) error {
	for _, t := range Tables {
		if t.Name == "trigger_bypass" {
			continue
		}
		if ok, err := s.hasTable(ctx, t.Name); err != nil {
			return err
		} else if !ok {
			continue
		}
		var any int
		err := s.db.QueryRowContext(ctx, "SELECT 1 FROM "+t.Name+" LIMIT 1").Scan(&any)
		if err == nil {
			return fmt.Errorf("%w: the target is not empty (table %s has rows); copy into a fresh database", ErrRefused, t.Name)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("check %s is empty: %w", t.Name, err)
		}
	}
	return nil
}

func (s *side) tables(ctx context.Context) ([]string, error) {
	q := `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`
	if s.dialect == "postgres" {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
	}
	rows, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("list tables: %w", err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

func (s *side) hasTable(ctx context.Context, name string) (bool, error) {
	all, err := s.tables(ctx)
	if err != nil {
		return false, err
	}
	return slices.Contains(all, name), nil
}

// UnknownTables lists the tables of db's migrated schema that Tables does
// not name: a copy refuses them rather than leave data behind.
func UnknownTables(ctx context.Context, db string) ([]string, error) {
	s, err := openSide(ctx, db, true)
	if err != nil {
		return nil, err
	}
	defer s.close()
	return s.unknownTables(ctx)
}

func (s *side) unknownTables(ctx context.Context) ([]string, error) {
	all, err := s.tables(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range all {
		if ignoredTables[n] || derivedTable(n) || slices.ContainsFunc(Tables, func(t Table) bool { return t.Name == n }) {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// checkTables refuses schemas with a table the copy does not know, and
// tables whose columns differ between the two sides.
func checkTables(ctx context.Context, a, b *side) error {
	for _, s := range []*side{a, b} {
		unknown, err := s.unknownTables(ctx)
		if err != nil {
			return err
		}
		if len(unknown) > 0 {
			return fmt.Errorf("%w: the %s schema has tables this chatd cannot copy: %s", ErrRefused, s.dialect, strings.Join(unknown, ", "))
		}
	}
	for _, t := range Tables {
		if t.Skip != "" {
			continue
		}
		var names [2][]string
		for i, s := range []*side{a, b} {
			cols, err := sqliteOrPGColumnNames(ctx, s, t.Name)
			if err != nil {
				return err
			}
			slices.Sort(cols)
			names[i] = cols
		}
		if !slices.Equal(names[0], names[1]) {
			return fmt.Errorf("%w: table %s has columns %v in the source and %v in the target", ErrRefused, t.Name, names[0], names[1])
		}
	}
	return nil
}
