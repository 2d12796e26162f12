package dbcopy

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/jcs"
)

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
	kFloat     // double precision on Postgres, REAL on SQLite
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
		case "double precision", "real":
			k = kFloat
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
	case kFloat:
		switch f := v.(type) {
		case float64:
			return f, nil
		case float32:
			return float64(f), nil
		case int64: // SQLite stores a whole REAL as an integer
			return float64(f), nil
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
	case kFloat:
		b = strconv.AppendFloat(nil, v.(float64), 'g', -1, 64)
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
