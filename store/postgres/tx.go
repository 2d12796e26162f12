package postgres

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
)

// tx implements store.Tx over one pgx transaction.
type tx struct {
	tx *countingTx
	// cache, locks and snapshot: the read cache (txcache.go).
	cache    store.ReadCache
	locks    map[uuid.UUID]lockMode
	snapshot bool
}

var _ store.Tx = (*tx)(nil)

// args collects positional parameters and hands out their $n placeholders,
// so dynamic statements never number parameters by hand.
type args []any

func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// setClause encodes the assignments of a patch as "column = $n, ...".
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
// pgx sends: everything as it is (a list of ids as uuid[]), except labels,
// which become a jsonb object.
func encode(v any) (any, error) {
	switch v := v.(type) {
	case string, int64, bool, time.Time, *time.Time, *int64, uuid.NullUUID, json.RawMessage:
		return v, nil
	case []uuid.UUID:
		// pgx sends a nil slice as NULL and an empty one as '{}'.
		return v, nil
	case map[string]string:
		return labelsJSON(v)
	}
	return nil, fmt.Errorf("no postgres encoding for %T", v)
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
