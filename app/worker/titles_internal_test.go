package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestGeneratedTitleNeverOverridesAConcurrentUserTitle: a user title that
// commits while the generated title is being written wins (titles rank
// fallback < generated < user; chatstate.Tx.WriteTitle). The user's write
// lands between the title transaction's read of title_source and its
// update. On SQLite the writer lock serialises the two, so the user's
// write can only follow; on Postgres nothing holds the chat row, and the
// generated write must not overwrite the newer user title.
func TestGeneratedTitleNeverOverridesAConcurrentUserTitle(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		s := newStore(t)
		hooked := &titleRaceStore{Store: s}
		g := setupOn(t, hooked, Config{})
		var id uuid.UUID
		g.do(func(t *chatstate.Tx) error {
			res, err := t.Create(chatstate.CreateParams{
				OwnerID: g.owner, Title: "hello", TitleSource: store.TitleSourceFallback,
				Input: chatstate.UserInput{Content: sdk.Text("hello")},
			})
			id = res.Chat.ID
			return err
		})

		userWrite := func() error {
			return g.machine.Do(g.ctx, func(t *chatstate.Tx) error {
				if _, _, err := t.Peek(id); err != nil {
					return err
				}
				_, err := t.WriteTitle(id, "My title", store.TitleSourceUser)
				return err
			})
		}
		done := make(chan error, 1)
		fired := false
		hooked.arm(id, func() {
			fired = true
			go func() { done <- userWrite() }()
			if s.Dialect() == "postgres" {
				// Nothing blocks the user's write: let it commit inside
				// the window.
				require.NoError(t, <-done)
				done <- nil
			}
		})

		g.provider.answer("Generated title")
		require.NoError(t, g.w.generateTitle(g.ctx, id))
		if !fired {
			// The title transaction locked the chat before reading it, so
			// there is no window: the user's write simply comes later.
			hooked.arm(uuid.Nil, nil)
			go func() { done <- userWrite() }()
		}
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the user's title write did not finish")
		}
		c := g.chat(id)
		require.Equal(t, store.TitleSourceUser, c.TitleSource, "the generated title overwrote the user's title")
		require.Equal(t, "My title", c.Title)
	})
}

// titleRaceStore runs a hook inside the first write transaction that reads
// the armed chat without having locked it, right after that read.
type titleRaceStore struct {
	store.Store
	mu   sync.Mutex
	id   uuid.UUID
	hook func()
}

func (s *titleRaceStore) arm(id uuid.UUID, hook func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id, s.hook = id, hook
}

func (s *titleRaceStore) take(id uuid.UUID) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hook == nil || id != s.id {
		return nil
	}
	h := s.hook
	s.hook = nil
	return h
}

func (s *titleRaceStore) InTx(ctx context.Context, fn func(store.Tx) error) error {
	return s.Store.InTx(ctx, func(tx store.Tx) error {
		return fn(&titleRaceTx{Tx: tx, s: s, locked: map[uuid.UUID]bool{}})
	})
}

type titleRaceTx struct {
	store.Tx
	s      *titleRaceStore
	locked map[uuid.UUID]bool
}

func (t *titleRaceTx) ChatLock(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	t.locked[id] = true
	return t.Tx.ChatLock(ctx, id)
}

func (t *titleRaceTx) ChatLockShared(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	t.locked[id] = true
	return t.Tx.ChatLockShared(ctx, id)
}

func (t *titleRaceTx) ChatGet(ctx context.Context, id uuid.UUID) (store.Chat, error) {
	c, err := t.Tx.ChatGet(ctx, id)
	if t.locked[id] || err != nil {
		return c, err
	}
	if h := t.s.take(id); h != nil {
		h()
	}
	return c, err
}
