package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// The behaviour shared with SQLite is tested by storetest (conformance_test.go);
// these tests cover what only the Postgres store does: row locks, snapshot
// isolation, error translation and migrations.

type fixture struct {
	ctx  context.Context
	s    *Store
	user store.User
	chat store.Chat
	now  time.Time
}

func setup(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{ctx: context.Background(), s: newTestStore(t), now: time.Date(2026, 3, 4, 5, 6, 7, 890000000, time.UTC)}
	require.NoError(t, f.s.InTx(f.ctx, func(tx store.Tx) error {
		var err error
		f.user, err = tx.UserInsert(f.ctx, store.UserInsertParams{ID: uuid.New(), Name: "alice", Now: f.now})
		if err != nil {
			return err
		}
		f.chat, err = tx.ChatInsert(f.ctx, store.ChatInsertParams{
			ID: uuid.New(), OwnerID: f.user.ID, Title: "chat", Status: store.ChatStatusWaiting, Now: f.now,
		})
		return err
	}))
	return f
}

func (f *fixture) get(t *testing.T) store.Chat {
	t.Helper()
	var c store.Chat
	require.NoError(t, f.s.ReadTx(f.ctx, func(tx store.Reader) error {
		var err error
		c, err = tx.ChatGet(f.ctx, f.chat.ID)
		return err
	}))
	return c
}

func TestDialect(t *testing.T) {
	t.Parallel()
	require.Equal(t, "postgres", setup(t).s.Dialect())
}

func TestPanicRollsBack(t *testing.T) {
	t.Parallel()
	f := setup(t)
	require.PanicsWithValue(t, "boom", func() {
		_ = f.s.InTx(f.ctx, func(tx store.Tx) error {
			_, err := tx.ChatBumpSnapshot(f.ctx, f.chat.ID)
			require.NoError(t, err)
			panic("boom")
		})
	})
	require.Equal(t, int64(1), f.get(t).SnapshotVersion)
	// The connection went back to the pool usable, not stuck in a transaction.
	for range 2 * int(f.s.Pool().Config().MaxConns) {
		f.get(t)
	}
}

func TestReadTxSeesOneSnapshot(t *testing.T) {
	t.Parallel()
	f := setup(t)
	require.NoError(t, f.s.ReadTx(f.ctx, func(tx store.Reader) error {
		before, err := tx.ChatGet(f.ctx, f.chat.ID)
		require.NoError(t, err)
		// A write committed by another transaction after the snapshot.
		require.NoError(t, f.s.InTx(f.ctx, func(w store.Tx) error {
			_, err := w.ChatBumpSnapshot(f.ctx, f.chat.ID)
			return err
		}))
		again, err := tx.ChatGet(f.ctx, f.chat.ID)
		require.NoError(t, err)
		require.Equal(t, before.SnapshotVersion, again.SnapshotVersion, "REPEATABLE READ keeps the first snapshot")
		return nil
	}))
	require.Equal(t, int64(2), f.get(t).SnapshotVersion)
}

func TestReadTxRefusesLocks(t *testing.T) {
	t.Parallel()
	f := setup(t)
	err := f.s.ReadTx(f.ctx, func(r store.Reader) error {
		_, err := r.(store.Tx).ChatLock(f.ctx, f.chat.ID)
		return err
	})
	require.ErrorIs(t, err, store.ErrReadOnly)
}

// lockFromOtherTx runs lock in a second transaction while the chat is held
// by hold in a first one, with a short lock_timeout so a blocked lock fails
// instead of waiting.
func lockFromOtherTx(t *testing.T, f *fixture, hold, lock func(store.Tx) error) error {
	t.Helper()
	var lockErr error
	require.NoError(t, f.s.InTx(f.ctx, func(tx store.Tx) error {
		require.NoError(t, hold(tx))
		lockErr = f.s.InTx(f.ctx, func(other store.Tx) error {
			if _, err := rawExec(f.ctx, other, `SET LOCAL lock_timeout = '50ms'`); err != nil {
				return err
			}
			return lock(other)
		})
		return nil
	}))
	return lockErr
}

func TestChatLocks(t *testing.T) {
	t.Parallel()
	f := setup(t)
	exclusive := func(tx store.Tx) error { _, err := tx.ChatLock(f.ctx, f.chat.ID); return err }
	shared := func(tx store.Tx) error { _, err := tx.ChatLockShared(f.ctx, f.chat.ID); return err }

	err := lockFromOtherTx(t, f, exclusive, exclusive)
	require.ErrorIs(t, err, store.ErrUnavailable, "FOR UPDATE excludes FOR UPDATE")
	require.Contains(t, err.Error(), "lock")
	require.ErrorIs(t, lockFromOtherTx(t, f, shared, exclusive), store.ErrUnavailable, "FOR SHARE excludes FOR UPDATE")
	require.ErrorIs(t, lockFromOtherTx(t, f, exclusive, shared), store.ErrUnavailable, "FOR UPDATE excludes FOR SHARE")
	require.NoError(t, lockFromOtherTx(t, f, shared, shared), "FOR SHARE admits FOR SHARE")
}

func TestContextErrorsSurvive(t *testing.T) {
	t.Parallel()
	f := setup(t)

	ctx, cancel := context.WithCancel(f.ctx)
	err := f.s.InTx(ctx, func(tx store.Tx) error {
		cancel()
		_, err := rawExec(ctx, tx, `SELECT pg_sleep(10)`)
		return err
	})
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, store.ErrUnavailable, "a cancelled caller is not an outage")

	ctx, cancel = context.WithTimeout(f.ctx, 50*time.Millisecond)
	defer cancel()
	err = f.s.InTx(ctx, func(tx store.Tx) error {
		_, err := rawExec(ctx, tx, `SELECT pg_sleep(10)`)
		return err
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, store.ErrUnavailable)

	require.Equal(t, int64(1), f.get(t).SnapshotVersion, "the pool still works")
}

// A transaction whose work is done commits even when its caller's context
// ends before the COMMIT: a COMMIT cut off by cancellation may commit on
// the server all the same, so the caller would be told "failed" for a
// write that happened, and not publish it.
func TestCommitOutlivesCancellationAfterWork(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx, cancel := context.WithCancel(f.ctx)
	err := f.s.InTx(ctx, func(tx store.Tx) error {
		_, err := tx.ChatBumpSnapshot(ctx, f.chat.ID)
		cancel()
		return err
	})
	require.NoError(t, err)
	require.Equal(t, int64(2), f.get(t).SnapshotVersion, "the write committed")
}

func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Open(ctx, "host="+t.TempDir()+" dbname=nothing connect_timeout=2", Options{})
	require.ErrorIs(t, err, store.ErrUnavailable)
}

func TestOpenDoesNotMigrate(t *testing.T) {
	t.Parallel()
	f := setup(t)
	p, err := f.s.Migrations()
	require.NoError(t, err)
	_, err = p.DownTo(f.ctx, 0)
	require.NoError(t, err)
	v, err := p.GetDBVersion(f.ctx)
	require.NoError(t, err)
	require.Zero(t, v)

	// Reopening the migrated-down schema leaves it empty.
	schema := f.s.Pool().Config().ConnConfig.RuntimeParams["search_path"]
	s2, err := Open(f.ctx, testDSN(t), Options{SearchPath: schema})
	require.NoError(t, err)
	defer s2.Close()
	err = s2.ReadTx(f.ctx, func(tx store.Reader) error {
		_, err := tx.ChatGet(f.ctx, f.chat.ID)
		return err
	})
	require.Error(t, err)
	require.Contains(t, err.Error(), "does not exist")

	_, err = p.Up(f.ctx)
	require.NoError(t, err)
}

func TestSearchPathIsolatesSchemas(t *testing.T) {
	t.Parallel()
	a, b := setup(t), setup(t)
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		_, err := tx.ChatGet(b.ctx, a.chat.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))
}

func TestTranslate(t *testing.T) {
	t.Parallel()
	pg := func(code string) error {
		return fmt.Errorf("driver: %w", &pgconn.PgError{Code: code, Message: "msg " + code})
	}
	for _, tc := range []struct {
		err  error
		want error
	}{
		{pgx.ErrNoRows, store.ErrNotFound},
		{pg("23505"), store.ErrConflict},
		{pg("23503"), store.ErrForeignKey},
		{pg("P0001"), store.ErrInvariant},
		{pg("23514"), store.ErrInvariant},
		{pg("23502"), store.ErrInvariant},
		{pg("22P02"), store.ErrInvariant},
		{pg("25006"), store.ErrReadOnly},
		{pg("08006"), store.ErrUnavailable},
		{pg("57P01"), store.ErrUnavailable},
		{pg("55P03"), store.ErrUnavailable},
		{context.DeadlineExceeded, store.ErrUnavailable},
		{fmt.Errorf("x: %w", pgconn.ErrConnClosed), store.ErrUnavailable},
	} {
		got := translate(tc.err)
		require.ErrorIs(t, got, tc.want, "%v", tc.err)
		var pgErr *pgconn.PgError
		if errors.As(tc.err, &pgErr) {
			require.Contains(t, got.Error(), pgErr.Message, "the server's message survives")
			require.False(t, errors.As(got, &pgErr), "the driver error does not leak")
		}
	}
	require.Nil(t, translate(nil))
	require.ErrorIs(t, translate(fmt.Errorf("q: %w", context.Canceled)), context.Canceled)
	require.NotErrorIs(t, translate(context.Canceled), store.ErrUnavailable)
	other := pg("42601")
	require.Equal(t, other, translate(other), "an unknown code passes through")
}

// TestUserLock: UserLock excludes another UserLock of the same user (so
// quota checks serialise), but not an insert that references the user
// (FOR KEY SHARE), so a transition holding a chat lock never waits on it.
func TestUserLock(t *testing.T) {
	t.Parallel()
	f := setup(t)
	lockUser := func(tx store.Tx) error { return tx.UserLock(f.ctx, f.user.ID) }
	insertChat := func(tx store.Tx) error {
		_, err := tx.ChatInsert(f.ctx, store.ChatInsertParams{
			ID: uuid.New(), OwnerID: f.user.ID, Title: "t", Status: store.ChatStatusWaiting, Now: f.now,
		})
		return err
	}
	require.ErrorIs(t, lockFromOtherTx(t, f, lockUser, lockUser), store.ErrUnavailable, "UserLock excludes UserLock")
	require.NoError(t, lockFromOtherTx(t, f, lockUser, insertChat), "UserLock admits inserts that reference the user")
	err := f.s.InTx(f.ctx, func(tx store.Tx) error { return tx.UserLock(f.ctx, uuid.New()) })
	require.ErrorIs(t, err, store.ErrNotFound)
}

// The read cache keeps a chat row only while the transaction holds its
// lock: an unlocked row read twice shows another transaction's commit in
// between (READ COMMITTED), a locked one cannot change, and a write of
// the transaction's own is seen.
func TestReadCacheKeepsOnlyLockedRows(t *testing.T) {
	f := setup(t)
	rename := func(title string) {
		require.NoError(t, f.s.InTx(f.ctx, func(tx store.Tx) error {
			_, err := tx.ChatUpdate(f.ctx, f.chat.ID, store.ChatPatch{Title: store.Some(title)})
			return err
		}))
	}
	require.NoError(t, f.s.InTx(f.ctx, func(tx store.Tx) error {
		c, err := tx.ChatGet(f.ctx, f.chat.ID)
		require.NoError(t, err)
		rename("elsewhere") // another transaction, committed meanwhile
		again, err := tx.ChatGet(f.ctx, f.chat.ID)
		require.NoError(t, err)
		require.NotEqual(t, c.Title, again.Title)
		require.Equal(t, "elsewhere", again.Title, "an unlocked row is read again")

		locked, err := tx.ChatLock(f.ctx, f.chat.ID)
		require.NoError(t, err)
		require.Equal(t, "elsewhere", locked.Title)
		_, err = tx.ChatUpdate(f.ctx, f.chat.ID, store.ChatPatch{Title: store.Some("mine")})
		require.NoError(t, err)
		mine, err := tx.ChatGet(f.ctx, f.chat.ID)
		require.NoError(t, err)
		require.Equal(t, "mine", mine.Title)
		return nil
	}))
}

// TestAdmissionTryLock: a try takes the admission lock only when no other
// transaction holds it, and does not wait for it.
func TestAdmissionTryLock(t *testing.T) {
	t.Parallel()
	f := setup(t)
	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- f.s.InTx(f.ctx, func(tx store.Tx) error {
			if err := tx.AdmissionLock(f.ctx); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("the holder ended early: %v", err)
	}
	var took bool
	require.NoError(t, f.s.InTx(f.ctx, func(tx store.Tx) error {
		var err error
		took, err = tx.AdmissionTryLock(f.ctx)
		return err
	}))
	close(release)
	require.NoError(t, <-done)
	require.False(t, took, "another transaction holds it")
}
