package projects_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/projects"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

type fixture struct {
	ctx   context.Context
	s     store.Store
	svc   *projects.Service
	clock *clock.Fake
	alice projects.Viewer
	bob   projects.Viewer
	admin projects.Viewer
}

func setup(t *testing.T, s store.Store) *fixture {
	t.Helper()
	f := &fixture{ctx: context.Background(), s: s, clock: clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))}
	f.svc = projects.New(s, f.clock, projects.Limits{})
	for _, v := range []*projects.Viewer{&f.alice, &f.bob, &f.admin} {
		v.UserID = uuid.New()
	}
	f.admin.Admin = true
	require.NoError(t, s.InTx(f.ctx, func(tx store.Tx) error {
		for i, v := range []projects.Viewer{f.alice, f.bob, f.admin} {
			if _, err := tx.UserInsert(f.ctx, store.UserInsertParams{ID: v.UserID, Name: fmt.Sprint("u", i), Admin: v.Admin, Now: f.clock.Now()}); err != nil {
				return err
			}
		}
		return nil
	}))
	return f
}

func TestProjectsVisibility(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore(t))
		p, err := f.svc.Create(f.ctx, f.alice.UserID, "A", "")
		require.NoError(t, err)
		_, err = f.svc.Get(f.ctx, f.bob, p.ID)
		require.ErrorIs(t, err, projects.ErrNotFound)
		_, err = f.svc.Update(f.ctx, f.bob, p.ID, projects.Change{Name: ptr("B")})
		require.ErrorIs(t, err, projects.ErrNotFound)
		require.ErrorIs(t, f.svc.Delete(f.ctx, f.bob, p.ID), projects.ErrNotFound)
		got, err := f.svc.Get(f.ctx, f.admin, p.ID)
		require.NoError(t, err)
		require.Equal(t, p, got)
		list, err := f.svc.List(f.ctx, f.bob, 0)
		require.NoError(t, err)
		require.Empty(t, list)

		f.clock.Advance(time.Minute)
		up, err := f.svc.Update(f.ctx, f.alice, p.ID, projects.Change{Instructions: ptr("x")})
		require.NoError(t, err)
		require.Equal(t, f.clock.Now(), up.UpdatedAt)
		require.Equal(t, p.CreatedAt, up.CreatedAt)
		require.NoError(t, f.svc.Delete(f.ctx, f.admin, p.ID))
	})
}

func TestSaveMemoryCap(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore(t))
		p, err := f.svc.Create(f.ctx, f.alice.UserID, "A", "")
		require.NoError(t, err)
		chat := uuid.NullUUID{UUID: uuid.New(), Valid: true} // a record, not a reference
		for i := range projects.MaxMemories {
			res, err := f.svc.SaveMemory(f.ctx, p.ID, fmt.Sprintf("m%03d", i), "x", chat)
			require.NoError(t, err)
			require.True(t, res.Created)
			require.EqualValues(t, i+1, res.Count)
		}
		_, err = f.svc.SaveMemory(f.ctx, p.ID, "new", "x", chat)
		require.ErrorIs(t, err, projects.ErrMemoryFull)
		res, err := f.svc.SaveMemory(f.ctx, p.ID, "m000", "y", uuid.NullUUID{})
		require.NoError(t, err)
		require.False(t, res.Created)
		require.EqualValues(t, projects.MaxMemories, res.Count)
		require.False(t, res.Memory.ChatID.Valid)
		existed, n, err := f.svc.DeleteMemory(f.ctx, p.ID, "m000")
		require.NoError(t, err)
		require.True(t, existed)
		require.EqualValues(t, projects.MaxMemories-1, n)
		_, err = f.svc.SaveMemory(f.ctx, uuid.New(), "m000", "y", chat)
		require.ErrorIs(t, err, projects.ErrNotFound)
		var ie *projects.InputError
		_, err = f.svc.SaveMemory(f.ctx, p.ID, "Bad Name", "y", chat)
		require.ErrorAs(t, err, &ie)
		require.Equal(t, "name", ie.Field)
	})
}

// TestSaveMemoryCapUnderConcurrency: concurrent saves of new names into a
// project one short of the cap: exactly one lands.
func TestSaveMemoryCapUnderConcurrency(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore(t))
		p, err := f.svc.Create(f.ctx, f.alice.UserID, "A", "")
		require.NoError(t, err)
		for i := range projects.MaxMemories - 1 {
			_, err := f.svc.SaveMemory(f.ctx, p.ID, fmt.Sprintf("m%03d", i), "x", uuid.NullUUID{})
			require.NoError(t, err)
		}
		const writers = 6
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				_, errs[i] = f.svc.SaveMemory(f.ctx, p.ID, fmt.Sprintf("new%d", i), "x", uuid.NullUUID{})
			})
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, projects.ErrMemoryFull):
				t.Fatalf("unexpected error: %v", err)
			}
		}
		require.Equal(t, 1, ok)
		ms, err := f.svc.Memories(f.ctx, p.ID)
		require.NoError(t, err)
		require.Len(t, ms, projects.MaxMemories)
	})
}

func TestDeleteProjectWithChats(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore(t))
		p, err := f.svc.Create(f.ctx, f.alice.UserID, "A", "")
		require.NoError(t, err)
		require.NoError(t, f.s.InTx(f.ctx, func(tx store.Tx) error {
			_, err := tx.ChatInsert(f.ctx, store.ChatInsertParams{
				ID: uuid.New(), OwnerID: f.alice.UserID, Status: store.ChatStatusWaiting, Now: f.clock.Now(),
				ProjectID: uuid.NullUUID{UUID: p.ID, Valid: true},
			})
			return err
		}))
		require.ErrorIs(t, f.svc.Delete(f.ctx, f.alice, p.ID), projects.ErrNotEmpty)
		_, err = f.svc.Get(f.ctx, f.alice, p.ID)
		require.NoError(t, err)
	})
}

func ptr[T any](v T) *T { return &v }
