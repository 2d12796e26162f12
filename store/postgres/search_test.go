package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// The search condition of a term of 3+ characters is served by the
// trigram indexes of migration 00017 (the partial index's predicate must
// match the query's for the planner to use it).
func TestSearchUsesTrigramIndexes(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	conn, err := s.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	// An empty table would be scanned whatever the indexes.
	_, err = tx.Exec(ctx, "SET LOCAL enable_seqscan = off")
	require.NoError(t, err)
	text := searchPlan(t, func(sql string, a ...any) (pgx.Rows, error) { return tx.Query(ctx, sql, a...) })
	require.Contains(t, text, "chats_title_trgm_idx", text)
	require.Contains(t, text, "chat_messages_text_trgm_idx", text)
}

// A role that may not create pg_trgm fails the migration with an error
// that says what to do, not with a bare permission error.
func TestMigrateWithoutExtensionPrivilege(t *testing.T) {
	dsn := testDSN(t)
	cfg, err := pgconn.ParseConfig(dsn)
	require.NoError(t, err)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "chatd_noext_" + hex.EncodeToString(b[:])
	ident := pgx.Identifier{name}.Sanitize()
	// A fresh database has no pg_trgm; the role owns a schema there but
	// may not create extensions (no CREATE on the database).
	// Cleanups run last-in first-out: the database goes before its role.
	admin(t, dsn, "CREATE ROLE "+ident+" NOLOGIN")
	t.Cleanup(func() { admin(t, dsn, "DROP ROLE "+ident) })
	admin(t, dsn, "CREATE DATABASE "+ident)
	t.Cleanup(func() { admin(t, dsn, "DROP DATABASE "+ident+" WITH (FORCE)") })
	other := fmt.Sprintf("host=%s port=%d user=%s dbname=%s", cfg.Host, cfg.Port, cfg.User, name)
	admin(t, other, "CREATE SCHEMA app AUTHORIZATION "+ident)

	ctx := context.Background()
	s, err := Open(ctx, other+" options='-c role="+name+"'", Options{SearchPath: "app"})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	p, err := s.Migrations()
	require.NoError(t, err)
	_, err = p.Up(ctx)
	require.ErrorContains(t, err, "version:17")
	require.ErrorContains(t, err, "chatd search needs the pg_trgm extension and this role may not create it: as a superuser run CREATE EXTENSION pg_trgm SCHEMA public")
}

// The planner reads the message trigram index on its own, with a table of
// a realistic size, no hint and no ANALYZE since it filled (a busy
// database between autovacuum runs): migration 00019 costs
// chatd_message_text as the JSON walk it is, where at the default cost the
// planner ran it on every message of a table this size instead.
func TestSearchPlannerPicksTheTrigramIndex(t *testing.T) {
	f := setup(t)
	_, err := f.s.pool.Exec(f.ctx, `INSERT INTO chat_messages (chat_id, role, content, created_at)
		SELECT $1, 'user', jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'message number ' || g)), now()
		FROM generate_series(1, 2000) g`, f.chat.ID)
	require.NoError(t, err)
	text := searchPlan(t, func(sql string, a ...any) (pgx.Rows, error) { return f.s.pool.Query(f.ctx, sql, a...) })
	require.Contains(t, text, "chat_messages_text_trgm_idx", text)
	require.NotContains(t, text, "Seq Scan on chat_messages", text)
}

// searchPlan is the EXPLAIN of the chat list condition for a term the
// trigram indexes serve, run through query.
func searchPlan(t *testing.T, query func(sql string, a ...any) (pgx.Rows, error)) string {
	t.Helper()
	var a args
	rows, err := query("EXPLAIN SELECT id FROM chats WHERE "+searchWhere("zebrafish", &a), a...)
	require.NoError(t, err)
	var plan []string
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		plan = append(plan, line)
	}
	require.NoError(t, rows.Err())
	return strings.Join(plan, "\n")
}
