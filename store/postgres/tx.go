package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
)

// tx implements store.Tx over one pgx transaction.
type tx struct {
	tx pgx.Tx
}

var _ store.Tx = (*tx)(nil)

// ExecRaw runs one statement and reports the affected row count.
func (t *tx) ExecRaw(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("exec raw: %w", translate(err))
	}
	return tag.RowsAffected(), nil
}

// args collects positional parameters and hands out their $n placeholders,
// so dynamic statements never number parameters by hand.
type args []any

func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// utc normalises a time read from the database: pgx returns timestamptz in
// the local zone.
func utc(t time.Time) time.Time { return t.UTC() }

// utcPtr is utc for nullable timestamps.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// rawJSON keeps SQL NULL as nil. pgx scans into a fresh slice, so the
// result does not alias a driver buffer.
func rawJSON(b []byte) json.RawMessage { return json.RawMessage(b) }

// labelsJSON encodes labels for the jsonb column, which is never NULL.
func labelsJSON(labels map[string]string) ([]byte, error) {
	if labels == nil {
		return []byte("{}"), nil
	}
	b, err := json.Marshal(labels)
	if err != nil {
		return nil, fmt.Errorf("encode labels: %w", err)
	}
	return b, nil
}

// likeEscape escapes the LIKE metacharacters of s for ESCAPE '\'.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// collect reads every row with scan, returning a non-nil slice.
func collect[T any](rows pgx.Rows, scan func(pgx.Row) (T, error)) ([]T, error) {
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
