package dbcopy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
)

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
