// Package dbcopy copies a chatd database between SQLite and PostgreSQL,
// losslessly: every row of every table (ids, revisions, versions,
// timestamps, token hashes, durable claims and the tool journal, sealed
// secrets as bytes), in foreign-key order, in one target transaction that
// is verified (row counts and checksums over a canonical export) before it
// commits. Sealed secrets stay sealed, so the target must be served with
// the same CHATD_SECRET_KEY as the source.
package dbcopy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/chatd/chatd/app/jcs"
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

// kind is how a column's values are converted and canonically encoded.
type kind int

const (
	kText kind = iota
	kUUID
	kBool
	kInt
	kTime
	kJSON
	kBytes
	kUUIDArray // uuid[] on Postgres, a JSON array of strings on SQLite
)

type column struct {
	name string
	kind kind
}

// columns reads a table's columns and their kinds from the Postgres side,
// whose types say what SQLite's TEXT and INTEGER hold.
func columns(ctx context.Context, pg *side, table string) ([]column, error) {
	rows, err := pg.db.QueryContext(ctx, `SELECT column_name, CASE WHEN data_type = 'ARRAY' THEN udt_name ELSE data_type END FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, table)
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	defer rows.Close()
	var out []column
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, fmt.Errorf("columns of %s: %w", table, err)
		}
		var k kind
		switch typ {
		case "text", "character varying":
			k = kText
		case "uuid":
			k = kUUID
		case "boolean":
			k = kBool
		case "bigint", "integer", "smallint":
			k = kInt
		case "timestamp with time zone":
			k = kTime
		case "jsonb", "json":
			k = kJSON
		case "bytea":
			k = kBytes
		case "_uuid":
			k = kUUIDArray
		default:
			return nil, fmt.Errorf("%w: column %s.%s has type %s, which the copy does not know", ErrRefused, table, name, typ)
		}
		out = append(out, column{name: name, kind: k})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("table %s has no columns in the Postgres schema", table)
	}
	return out, nil
}

func sqliteOrPGColumnNames(ctx context.Context, s *side, table string) ([]string, error) {
	q := `SELECT name FROM pragma_table_info(?)`
	if s.dialect == "postgres" {
		q = `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1`
	}
	rows, err := s.db.QueryContext(ctx, q, table)
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("columns of %s: %w", table, err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// selectSQL reads a table's columns; Postgres uuid and JSON come as text.
func selectSQL(s *side, table string, cols []column) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c.name
		switch {
		case s.dialect == "postgres" && (c.kind == kUUID || c.kind == kJSON):
			parts[i] = c.name + "::text"
		case s.dialect == "postgres" && c.kind == kUUIDArray:
			parts[i] = "array_to_json(" + c.name + ")::text"
		}
	}
	return "SELECT " + strings.Join(parts, ", ") + " FROM " + table
}

// normalize turns a scanned value into the canonical Go value of its kind:
// nil, string (text, uuid, JSON as given), bool, int64, time.Time, []byte.
func normalize(k kind, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if b, ok := v.([]byte); ok && k != kBytes {
		v = string(b)
	}
	switch k {
	case kText:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case kUUID:
		if s, ok := v.(string); ok {
			id, err := uuid.Parse(s)
			if err != nil {
				return nil, fmt.Errorf("uuid %q: %w", s, err)
			}
			return id.String(), nil
		}
	case kBool:
		switch b := v.(type) {
		case bool:
			return b, nil
		case int64:
			return b != 0, nil
		}
	case kInt:
		if n, ok := v.(int64); ok {
			return n, nil
		}
	case kTime:
		switch t := v.(type) {
		case time.Time:
			return t.UTC(), nil
		case string:
			p, err := time.Parse(time.RFC3339Nano, t)
			if err != nil {
				return nil, fmt.Errorf("timestamp %q: %w", t, err)
			}
			return p.UTC(), nil
		}
	case kJSON:
		if s, ok := v.(string); ok {
			var buf bytes.Buffer
			if err := json.Compact(&buf, []byte(s)); err != nil {
				return nil, fmt.Errorf("JSON %.40q: %w", s, err)
			}
			return buf.String(), nil
		}
	case kBytes:
		if b, ok := v.([]byte); ok {
			return slices.Clone(b), nil
		}
	case kUUIDArray:
		if s, ok := v.(string); ok {
			var ids []uuid.UUID
			if err := json.Unmarshal([]byte(s), &ids); err != nil {
				return nil, fmt.Errorf("uuid array %.40q: %w", s, err)
			}
			if ids == nil {
				ids = []uuid.UUID{}
			}
			b, err := json.Marshal(ids)
			if err != nil {
				return nil, fmt.Errorf("uuid array: %w", err)
			}
			return string(b), nil
		}
	}
	return nil, fmt.Errorf("unexpected %T for a column of kind %d", v, k)
}

// canonical appends the canonical encoding of a normalized value: a tag
// byte, a length and the bytes, the same on both databases.
func canonical(dst []byte, k kind, v any) ([]byte, error) {
	if v == nil {
		return append(dst, 'N'), nil
	}
	var b []byte
	switch k {
	case kText, kUUID, kUUIDArray:
		b = []byte(v.(string))
	case kBool:
		b = []byte(strconv.FormatBool(v.(bool)))
	case kInt:
		b = strconv.AppendInt(nil, v.(int64), 10)
	case kTime:
		b = []byte(v.(time.Time).Format(timeFormat))
	case kJSON:
		c, err := jcs.Canonicalize([]byte(v.(string)))
		if err != nil {
			return nil, fmt.Errorf("canonical JSON: %w", err)
		}
		b = c
	case kBytes:
		b = v.([]byte)
	}
	dst = append(dst, 'V')
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...), nil
}

// encode turns a normalized value into a parameter for the target.
func encode(dialect string, k kind, v any) any {
	if v == nil {
		return nil
	}
	if dialect == "sqlite" {
		switch k {
		case kBool:
			if v.(bool) {
				return int64(1)
			}
			return int64(0)
		case kTime:
			return v.(time.Time).Format(timeFormat)
		}
	}
	return v
}

// placeholder is the n-th (1-based) parameter of an INSERT.
func placeholder(dialect string, k kind, n int) string {
	if dialect == "sqlite" {
		return "?"
	}
	switch k {
	case kUUID:
		return fmt.Sprintf("CAST($%d::text AS uuid)", n)
	case kJSON:
		return fmt.Sprintf("CAST($%d::text AS jsonb)", n)
	case kUUIDArray:
		return fmt.Sprintf("CASE WHEN $%[1]d::text IS NULL THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text(CAST($%[1]d::text AS jsonb))::uuid) END", n)
	}
	return fmt.Sprintf("$%d", n)
}

// checksum accumulates a table's canonical export: the SHA-256 of each
// row's encoding, sorted, hashed together with the count, so neither
// database's row order matters.
type checksum struct{ rows [][32]byte }

func (c *checksum) add(row []byte) { c.rows = append(c.rows, sha256.Sum256(row)) }

func (c *checksum) sum() string {
	slices.SortFunc(c.rows, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	h := sha256.New()
	fmt.Fprintf(h, "%d\n", len(c.rows))
	for _, r := range c.rows {
		h.Write(r[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// exportTable reads every row of table through q, canonically encoded;
// each normalized row also goes to each when it is not nil.
func exportTable(ctx context.Context, s *side, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, table string, cols []column, each func([]any) error) (TableResult, error) {
	rows, err := q.QueryContext(ctx, selectSQL(s, table, cols))
	if err != nil {
		return TableResult{}, fmt.Errorf("read: %w", err)
	}
	defer rows.Close()
	var sum checksum
	raw := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	var buf []byte
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return TableResult{}, fmt.Errorf("read: %w", err)
		}
		vals := make([]any, len(cols))
		buf = buf[:0]
		for i, c := range cols {
			v, err := normalize(c.kind, raw[i])
			if err != nil {
				return TableResult{}, fmt.Errorf("column %s: %w", c.name, err)
			}
			vals[i] = v
			if buf, err = canonical(buf, c.kind, v); err != nil {
				return TableResult{}, fmt.Errorf("column %s: %w", c.name, err)
			}
		}
		sum.add(buf)
		if each != nil {
			if err := each(vals); err != nil {
				return TableResult{}, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return TableResult{}, fmt.Errorf("read: %w", err)
	}
	return TableResult{Name: table, Rows: int64(len(sum.rows)), Checksum: sum.sum()}, nil
}

// copyTable copies one table and carries its sequence.
func copyTable(ctx context.Context, t Table, cols []column, src *side, srcTx *sql.Tx, dst *side, dstTx *sql.Tx) (TableResult, error) {
	names := make([]string, len(cols))
	marks := make([]string, len(cols))
	seqCol := -1
	for i, c := range cols {
		names[i] = c.name
		marks[i] = placeholder(dst.dialect, c.kind, i+1)
		if c.name == t.Sequence {
			seqCol = i
		}
	}
	ins := "INSERT INTO " + t.Name + " (" + strings.Join(names, ", ") + ")"
	if dst.dialect == "postgres" && t.Sequence != "" {
		ins += " OVERRIDING SYSTEM VALUE"
	}
	ins += " VALUES (" + strings.Join(marks, ", ") + ")"
	stmt, err := dstTx.PrepareContext(ctx, ins)
	if err != nil {
		return TableResult{}, fmt.Errorf("prepare insert: %w", err)
	}
	defer stmt.Close()

	var maxSeq int64
	insert := func(vals []any) error {
		args := make([]any, len(vals))
		for i, c := range cols {
			args[i] = encode(dst.dialect, c.kind, vals[i])
		}
		if seqCol >= 0 && vals[seqCol] != nil {
			maxSeq = max(maxSeq, vals[seqCol].(int64))
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("insert: %w", err)
		}
		return nil
	}
	var tr TableResult
	if t.Name == "chats" {
		// A chat references its parent and root: insert in dependency order.
		var all [][]any
		tr, err = exportTable(ctx, src, srcTx, t.Name, cols, func(v []any) error { all = append(all, v); return nil })
		if err == nil {
			for _, v := range sortChats(cols, all) {
				if err = insert(v); err != nil {
					break
				}
			}
		}
	} else {
		tr, err = exportTable(ctx, src, srcTx, t.Name, cols, insert)
	}
	if err != nil {
		return TableResult{}, err
	}
	if t.Sequence != "" {
		if err := carrySequence(ctx, t, src, srcTx, dst, dstTx, maxSeq); err != nil {
			return TableResult{}, err
		}
	}
	return tr, nil
}

// sortChats orders chats so that each comes after its parent and root.
func sortChats(cols []column, rows [][]any) [][]any {
	idx := func(name string) int {
		return slices.IndexFunc(cols, func(c column) bool { return c.name == name })
	}
	id, parent, root := idx("id"), idx("parent_chat_id"), idx("root_chat_id")
	byID := make(map[any][]any, len(rows))
	for _, r := range rows {
		byID[r[id]] = r
	}
	done := make(map[any]bool, len(rows))
	out := make([][]any, 0, len(rows))
	var visit func(r []any)
	visit = func(r []any) {
		if done[r[id]] {
			return
		}
		done[r[id]] = true
		for _, ref := range []int{parent, root} {
			if ref >= 0 && r[ref] != nil {
				if p, ok := byID[r[ref]]; ok {
					visit(p)
				}
			}
		}
		out = append(out, r)
	}
	for _, r := range rows {
		visit(r)
	}
	return out
}

// carrySequence moves the target's sequence to the source's (or past the
// largest copied value), so ids are never reused: queue ids live on in
// chat_messages.queued_message_id after their rows are gone.
func carrySequence(ctx context.Context, t Table, src *side, srcTx *sql.Tx, dst *side, dstTx *sql.Tx, maxSeq int64) error {
	var last sql.NullInt64
	switch {
	case src.dialect == "postgres":
		err := srcTx.QueryRowContext(ctx, `SELECT pg_sequence_last_value(pg_get_serial_sequence($1, $2)::regclass)`, t.Name, t.Sequence).Scan(&last)
		if err != nil {
			return fmt.Errorf("read the source sequence: %w", err)
		}
	case t.SQLiteAutoincrement:
		err := srcTx.QueryRowContext(ctx, `SELECT seq FROM sqlite_sequence WHERE name = ?`, t.Name).Scan(&last)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read the source sequence: %w", err)
		}
	}
	next := max(maxSeq, last.Int64)
	switch {
	case dst.dialect == "postgres" && next > 0:
		_, err := dstTx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence($1, $2), $3::bigint, true)`, t.Name, t.Sequence, next)
		if err != nil {
			return fmt.Errorf("reset the target sequence: %w", err)
		}
	case dst.dialect == "postgres":
		_, err := dstTx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence($1, $2), 1, false)`, t.Name, t.Sequence)
		if err != nil {
			return fmt.Errorf("reset the target sequence: %w", err)
		}
	case t.SQLiteAutoincrement && next > 0:
		r, err := dstTx.ExecContext(ctx, `UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?`, next, t.Name)
		if err != nil {
			return fmt.Errorf("reset the target sequence: %w", err)
		}
		if n, _ := r.RowsAffected(); n == 0 {
			if _, err := dstTx.ExecContext(ctx, `INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)`, t.Name, next); err != nil {
				return fmt.Errorf("reset the target sequence: %w", err)
			}
		}
	}
	return nil
}

// suspendTriggers turns off the target's bookkeeping triggers (revisions,
// versions, guards) for the copy, which writes the source's values as they
// are, and returns how to turn them back on in the same transaction.
// Foreign keys stay enforced.
func (s *side) suspendTriggers(ctx context.Context, tx *sql.Tx) (func() error, error) {
	if s.dialect == "postgres" {
		var names []string
		for _, t := range Tables {
			if t.Skip == "" {
				names = append(names, t.Name)
			}
		}
		for _, n := range names {
			if _, err := tx.ExecContext(ctx, "ALTER TABLE "+n+" DISABLE TRIGGER USER"); err != nil {
				return nil, fmt.Errorf("disable the triggers of %s: %w", n, err)
			}
		}
		return func() error {
			for _, n := range names {
				if _, err := tx.ExecContext(ctx, "ALTER TABLE "+n+" ENABLE TRIGGER USER"); err != nil {
					return fmt.Errorf("enable the triggers of %s: %w", n, err)
				}
			}
			return nil
		}, nil
	}
	// SQLite cannot disable a trigger: drop them and create them again
	// from their own SQL before the transaction commits. The triggers of
	// derived tables stay, so labels and search fill as the rows go in.
	rows, err := tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list triggers: %w", err)
	}
	var names, defs []string
	for rows.Next() {
		var n, d string
		if err := rows.Scan(&n, &d); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list triggers: %w", err)
		}
		if derivedTrigger(n) {
			continue
		}
		names, defs = append(names, n), append(defs, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list triggers: %w", err)
	}
	for _, n := range names {
		if _, err := tx.ExecContext(ctx, `DROP TRIGGER "`+n+`"`); err != nil {
			return nil, fmt.Errorf("drop trigger %s: %w", n, err)
		}
	}
	return func() error {
		for i, d := range defs {
			if _, err := tx.ExecContext(ctx, d); err != nil {
				return fmt.Errorf("recreate trigger %s: %w", names[i], err)
			}
		}
		return nil
	}, nil
}
