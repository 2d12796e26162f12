package sqlite

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

func (c *stmtCache) count() (cached, prepares int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.stmts), c.prepares
}

// A statement is prepared once, after the transaction that first ran it,
// and reused by later transactions of the pool, rolled back ones too.
func TestStatementsPreparedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestStore(t)
	owner := uuid.New()
	require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
		_, err := tx.UserInsert(ctx, store.UserInsertParams{ID: owner, Name: "stmts", Now: time.Now()})
		return err
	}))
	insert := func(id uuid.UUID) error {
		return s.InTx(ctx, func(tx store.Tx) error {
			_, err := tx.ChatInsert(ctx, store.ChatInsertParams{
				ID: id, OwnerID: owner, Title: "t", TitleSource: store.TitleSourceUser,
				Status: store.ChatStatusWaiting, Now: time.Now(),
			})
			return err
		})
	}
	get := func(id uuid.UUID) (store.Chat, error) {
		var c store.Chat
		err := s.ReadTx(ctx, func(tx store.Reader) error {
			var err error
			c, err = tx.ChatGet(ctx, id)
			return err
		})
		return c, err
	}
	first := uuid.New()
	require.NoError(t, insert(first))
	_, writes := s.writes.count()
	_, err := get(first)
	require.NoError(t, err)
	_, reads := s.reads.count()
	require.Positive(t, writes)
	require.Positive(t, reads)

	// The same statements again, and a transaction that rolls back after
	// running them: nothing is prepared anew, and the results are right.
	errRollback := errors.New("roll back")
	for i := range 5 {
		id := uuid.New()
		require.NoError(t, insert(id))
		c, err := get(id)
		require.NoError(t, err)
		require.Equal(t, id, c.ID)
		err = s.InTx(ctx, func(tx store.Tx) error {
			if _, err := tx.ChatLock(ctx, id); err != nil {
				return err
			}
			if _, err := tx.ChatBumpSnapshot(ctx, id); err != nil {
				return err
			}
			return fmt.Errorf("%w %d", errRollback, i)
		})
		require.ErrorIs(t, err, errRollback)
		c, err = get(id)
		require.NoError(t, err)
		require.EqualValues(t, 1, c.SnapshotVersion, "the rolled back bump is gone")
	}
	_, writesAfter := s.writes.count()
	_, readsAfter := s.reads.count()
	// Only the lock and bump statements are new on the writer.
	require.LessOrEqual(t, writesAfter, writes+2)
	require.Equal(t, reads, readsAfter)

	// A missing row through a cached statement is still not found.
	_, err = get(uuid.New())
	require.ErrorIs(t, err, store.ErrNotFound)
}

// Beyond its bound the cache prepares nothing more, and queries still run.
func TestStatementCacheBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestStore(t)
	for i := range maxCachedStmts + 10 {
		var n int
		require.NoError(t, s.ReadTx(ctx, func(r store.Reader) error {
			return r.(*tx).tx.QueryRowContext(ctx, fmt.Sprintf("SELECT %d", i)).Scan(&n)
		}))
		require.Equal(t, i, n)
	}
	cached, _ := s.reads.count()
	require.Equal(t, maxCachedStmts, cached)
}
