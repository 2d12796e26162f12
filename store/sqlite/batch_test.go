package sqlite

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

func (b *batcher) state() (queued, txs int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue), b.txs
}

func insertUser(ctx context.Context, tx store.Tx, id uuid.UUID, name string) error {
	_, err := tx.UserInsert(ctx, store.UserInsertParams{ID: id, Name: name, Now: time.Now()})
	return err
}

func userExists(t *testing.T, s *Store, id uuid.UUID) bool {
	t.Helper()
	ctx := context.Background()
	err := s.ReadTx(ctx, func(tx store.Reader) error {
		_, err := tx.UserGet(ctx, id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

// batchBehind holds the writer in one transaction until n more InTx calls
// are queued behind it, then lets every call run; the queued ones share
// the next transaction. It returns each call's result by index.
func batchBehind(t *testing.T, s *Store, fns []func(store.Tx) error, ctxs []context.Context) ([]error, []any) {
	t.Helper()
	release := make(chan struct{})
	held := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		require.NoError(t, s.InTx(context.Background(), func(store.Tx) error {
			close(held)
			<-release
			return nil
		}))
	})
	<-held
	errs, panics := make([]error, len(fns)), make([]any, len(fns))
	for i, fn := range fns {
		ctx := context.Background()
		if i < len(ctxs) && ctxs[i] != nil {
			ctx = ctxs[i]
		}
		wg.Go(func() {
			defer func() { panics[i] = recover() }()
			errs[i] = s.InTx(ctx, fn)
		})
	}
	require.Eventually(t, func() bool { q, _ := s.batch.state(); return q == len(fns) }, 10*time.Second, time.Millisecond,
		"every call queues behind the held transaction")
	close(release)
	wg.Wait()
	return errs, panics
}

// Concurrent write transactions share one commit; each caller still gets
// its own result, and a failing or panicking function is rolled back
// alone, as is one whose caller gave up before it ran.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestStore(t)
	ids := make([]uuid.UUID, 6)
	for i := range ids {
		ids[i] = uuid.New()
	}
	errFail := errors.New("fail")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	// The queued calls run in the order they reach the queue, which is not
	// the order they were started in, so the conflicting name is taken first.
	require.NoError(t, s.InTx(ctx, func(tx store.Tx) error { return insertUser(ctx, tx, uuid.New(), "taken") }))
	fns := []func(store.Tx) error{
		func(tx store.Tx) error { return insertUser(ctx, tx, ids[0], "u0") },
		func(tx store.Tx) error {
			if err := insertUser(ctx, tx, ids[1], "u1"); err != nil {
				return err
			}
			return errFail // rolled back: u1 is not written
		},
		func(tx store.Tx) error { return insertUser(ctx, tx, ids[2], "u2") },
		func(tx store.Tx) error {
			if err := insertUser(ctx, tx, ids[3], "u3"); err != nil {
				return err
			}
			panic("boom")
		},
		func(tx store.Tx) error { return insertUser(ctx, tx, ids[4], "u4") }, // its caller gave up
		func(tx store.Tx) error {
			// A constraint error inside a batch: a name already taken.
			return insertUser(ctx, tx, ids[5], "taken")
		},
	}
	_, before := s.batch.state()
	errs, panics := batchBehind(t, s, fns, []context.Context{4: cancelled})
	_, after := s.batch.state()
	require.Equal(t, before+2, after, "the held transaction, then one for the six queued calls")

	require.NoError(t, errs[0])
	require.True(t, userExists(t, s, ids[0]))
	require.ErrorIs(t, errs[1], errFail)
	require.False(t, userExists(t, s, ids[1]), "a failed member's writes are rolled back")
	require.NoError(t, errs[2])
	require.True(t, userExists(t, s, ids[2]))
	require.Equal(t, "boom", panics[3], "the panic reaches its own caller")
	require.False(t, userExists(t, s, ids[3]))
	require.ErrorIs(t, errs[4], context.Canceled)
	require.False(t, userExists(t, s, ids[4]))
	require.ErrorIs(t, errs[5], store.ErrConflict)
	require.False(t, userExists(t, s, ids[5]))
}

// A member that fills the database fails with ErrStorageFull; every call
// that returned nil has its writes durable and every call that failed has
// none, whether SQLite rolled back the member or the whole transaction.
func TestGroupCommitStorageFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestStore(t)
	var pages int64
	require.NoError(t, s.InTx(ctx, func(stx store.Tx) error {
		return stx.(*tx).tx.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages)
	}))
	require.NoError(t, s.InTx(ctx, func(stx store.Tx) error {
		_, err := rawExec(ctx, stx, "PRAGMA max_page_count = "+strconv.FormatInt(pages+4, 10))
		return err
	}))
	ids := make([]uuid.UUID, 5)
	fns := make([]func(store.Tx) error, len(ids))
	for i := range ids {
		ids[i] = uuid.New()
		name := fmt.Sprintf("small %d", i)
		if i == 2 {
			name = strings.Repeat("u", 200_000)
		}
		fns[i] = func(tx store.Tx) error { return insertUser(ctx, tx, ids[i], name) }
	}
	errs, _ := batchBehind(t, s, fns, nil)
	require.ErrorIs(t, errs[2], store.ErrStorageFull)
	for i, id := range ids {
		require.Equal(t, errs[i] == nil, userExists(t, s, id), "call %d: %v", i, errs[i])
	}
	// The store goes on: a small write after it commits.
	require.NoError(t, s.InTx(ctx, func(tx store.Tx) error { return insertUser(ctx, tx, uuid.New(), "after") }))
}

// A function that ends its goroutine (runtime.Goexit, as a failing test's
// FailNow does) inside a batch fails the batch instead of leaving the
// other callers and the writer waiting forever: its members hear
// errGoexit, their writes are rolled back, and the store goes on. The same
// in a read transaction gives its connection back.
func TestGroupCommitSurvivesGoexit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestStore(t)
	ids := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	fns := []func(store.Tx) error{
		func(tx store.Tx) error { return insertUser(ctx, tx, ids[0], "g0") },
		func(tx store.Tx) error {
			if err := insertUser(ctx, tx, ids[1], "g1"); err != nil {
				return err
			}
			runtime.Goexit()
			return nil
		},
		func(tx store.Tx) error { return insertUser(ctx, tx, ids[2], "g2") },
	}
	errs, _ := batchBehind(t, s, fns, nil)
	for i, id := range ids {
		require.False(t, userExists(t, s, id), "call %d", i)
	}
	// Whichever ran after the exit, and the one that was answered at the
	// commit that never came, heard errGoexit; the exiting caller itself
	// never returned.
	n := 0
	for _, err := range errs {
		if errors.Is(err, errGoexit) {
			n++
		}
	}
	require.GreaterOrEqual(t, n, 1)
	require.NoError(t, s.InTx(ctx, func(tx store.Tx) error { return insertUser(ctx, tx, uuid.New(), "after") }))

	bounded, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for range 6 { // more than the read pool's connections
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = s.ReadTx(bounded, func(store.Reader) error { runtime.Goexit(); return nil })
		}()
		<-done
	}
	require.NoError(t, s.ReadTx(bounded, func(tx store.Reader) error {
		_, err := tx.UserCount(ctx)
		return err
	}), "a connection is left to read with")
}
