package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chatd/chatd/store"
)

// The transaction read cache (store.ReadCache). On Postgres another
// transaction may change a row this one reads unless this one holds the
// row's lock, so a chat row or queue count is kept only for a chat the
// transaction has locked (ChatLock, ChatLockShared, or a write of the
// row, which locks it) and, in a read transaction (one REPEATABLE READ
// snapshot), for any chat. Every queue write goes through the state
// machine, which locks the chat first, so a held chat lock keeps the
// chat's queue still too.

// countingTx is a pgx.Tx that counts its statements that may write.
type countingTx struct {
	pgx.Tx
	writes store.WriteCounts
}

func (c *countingTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.writes.Note(sql)
	return c.Tx.Exec(ctx, sql, args...)
}

func (c *countingTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.writes.Note(sql)
	return c.Tx.Query(ctx, sql, args...)
}

func (c *countingTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c.writes.Note(sql)
	return c.Tx.QueryRow(ctx, sql, args...)
}

// lockMode is the strongest lock a transaction holds on a chat row.
type lockMode int

const (
	unlocked lockMode = iota
	lockShared
	lockExclusive // FOR UPDATE, or written
)

// held records that the transaction holds at least mode on id.
func (t *tx) held(id uuid.UUID, mode lockMode) {
	if t.locks == nil {
		t.locks = map[uuid.UUID]lockMode{}
	}
	t.locks[id] = max(t.locks[id], mode)
}

// stable reports whether nobody else can change id's row or queue now.
func (t *tx) stable(id uuid.UUID) bool { return t.snapshot || t.locks[id] > unlocked }

// cachedChat returns the kept row of id if it is still what a read would
// return and the transaction holds at least mode (shared or stronger) on
// it, or reads one snapshot.
func (t *tx) cachedChat(id uuid.UUID, mode lockMode) (store.Chat, bool) {
	if !t.snapshot && t.locks[id] < mode {
		return store.Chat{}, false
	}
	return t.cache.Chat(id, t.tx.writes)
}

// keepChat keeps a row read (or written and returned) now, if stable.
func (t *tx) keepChat(c store.Chat) {
	if t.stable(c.ID) {
		t.cache.KeepChat(c, t.tx.writes)
	}
}
