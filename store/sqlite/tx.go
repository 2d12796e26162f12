package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// tx implements store.Tx over one database/sql transaction.
type tx struct {
	tx    *sqlTx
	cache store.ReadCache
}

var _ store.Tx = (*tx)(nil)

// exec runs one statement and reports the affected row count.
func (t *tx) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := t.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, translate(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, translate(err)
	}
	return n, nil
}

// args collects positional parameters and hands out their placeholders, so
// dynamic statements read the same as on Postgres (where add numbers them).
type args []any

func (a *args) add(v any) string {
	*a = append(*a, v)
	return "?"
}

// setClause encodes the assignments of a patch as "column = ?, ...".
func setClause(as []store.Assignment, a *args) (string, error) {
	sets := make([]string, len(as))
	for i, s := range as {
		v, err := encode(s.Value)
		if err != nil {
			return "", fmt.Errorf("encode %s: %w", s.Column, err)
		}
		sets[i] = s.Column + " = " + a.add(v)
	}
	return strings.Join(sets, ", "), nil
}

// encode converts a patch value (store.Assignment lists the types) to what
// the SQLite columns hold: TEXT uuids, JSON and timestamps, INTEGER booleans.
func encode(v any) (any, error) {
	switch v := v.(type) {
	case string, int64:
		return v, nil
	case bool:
		return boolInt(v), nil
	case time.Time:
		return ts(v), nil
	case *time.Time:
		return tsPtr(v), nil
	case *int64:
		return nullInt(v), nil
	case uuid.NullUUID:
		return nullUUID(v), nil
	case json.RawMessage:
		if err := checkJSON(v); err != nil {
			return nil, err
		}
		return nullJSON(v), nil
	case map[string]string:
		return labelsJSON(v)
	case []uuid.UUID:
		return idsJSON(v)
	}
	return nil, fmt.Errorf("no sqlite encoding for %T", v)
}

// rowScanner is a *sql.Row or *sql.Rows.
type rowScanner interface {
	Scan(dest ...any) error
}

// collect reads every row with scan, returning a non-nil slice.
func collect[T any](rows *sql.Rows, scan func(rowScanner) (T, error)) ([]T, error) {
	defer rows.Close()
	out := make([]T, 0)
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// --- value conversion ---

// timeFormat is fixed-width so that text order is time order.
const timeFormat = "2006-01-02T15:04:05.000000Z"

// ts encodes a timestamp for a TEXT column.
func ts(t time.Time) string { return t.UTC().Format(timeFormat) }

// tsPtr is ts for nullable timestamps.
func tsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

func parseTS(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse timestamp %q: %w", s, err)
	}
	return t.UTC(), nil
}

func nullUUID(u uuid.NullUUID) any {
	if !u.Valid {
		return nil
	}
	return u.UUID.String()
}

func nullJSON(b json.RawMessage) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// checkJSON refuses malformed JSON for the JSON columns, which are TEXT
// here: Postgres's jsonb refuses it too. nil (NULL) passes.
func checkJSON(values ...json.RawMessage) error {
	for _, v := range values {
		if v != nil && !json.Valid(v) {
			return fmt.Errorf("%w: malformed JSON", store.ErrInvariant)
		}
	}
	return nil
}

func nullInt(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// labelsJSON encodes labels for the labels column, which is never NULL.
func labelsJSON(labels map[string]string) (string, error) {
	if labels == nil {
		return "{}", nil
	}
	b, err := json.Marshal(labels)
	if err != nil {
		return "", fmt.Errorf("encode labels: %w", err)
	}
	return string(b), nil
}

// idsJSON encodes a list of ids as a JSON array; nil is NULL, so an
// empty list stays distinct from no list.
func idsJSON(ids []uuid.UUID) (any, error) {
	if ids == nil {
		return nil, nil
	}
	b, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("encode ids: %w", err)
	}
	return string(b), nil
}

// scanIDs decodes a JSON array of ids; NULL is nil and [] an empty,
// non-nil slice.
func scanIDs(src sql.NullString) ([]uuid.UUID, error) {
	if !src.Valid {
		return nil, nil
	}
	ids := []uuid.UUID{}
	if err := json.Unmarshal([]byte(src.String), &ids); err != nil {
		return nil, fmt.Errorf("decode ids: %w", err)
	}
	return ids, nil
}

// rawJSON keeps SQL NULL as nil.
func rawJSON(src sql.NullString) json.RawMessage {
	if !src.Valid {
		return nil
	}
	return json.RawMessage(src.String)
}

// likeEscape escapes the LIKE metacharacters of s for ESCAPE '\'.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// scanner collects the conversions that need a second step after Scan
// (TEXT to uuid and time); the first failure sticks.
type scanner struct {
	err error
}

func (s *scanner) uuid(dst *uuid.UUID, src string) {
	if s.err != nil {
		return
	}
	u, err := uuid.Parse(src)
	if err != nil {
		s.err = fmt.Errorf("parse uuid %q: %w", src, err)
	}
	*dst = u
}

func (s *scanner) nullUUID(dst *uuid.NullUUID, src sql.NullString) {
	*dst = uuid.NullUUID{}
	if src.Valid {
		dst.Valid = true
		s.uuid(&dst.UUID, src.String)
	}
}

func (s *scanner) time(dst *time.Time, src string) {
	if s.err != nil {
		return
	}
	*dst, s.err = parseTS(src)
}

func (s *scanner) timePtr(dst **time.Time, src sql.NullString) {
	*dst = nil
	if src.Valid {
		var t time.Time
		s.time(&t, src.String)
		*dst = &t
	}
}
