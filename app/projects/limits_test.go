package projects_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/projects"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

func TestLimitsDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, projects.Limits{MaxProjectsPerUser: projects.DefaultMaxProjectsPerUser, MaxMemoriesPerUser: projects.DefaultMaxMemoriesPerUser},
		projects.Limits{}.WithDefaults())
	require.Equal(t, projects.Limits{MaxProjectsPerUser: -1, MaxMemoriesPerUser: 7}, projects.Limits{MaxProjectsPerUser: -1, MaxMemoriesPerUser: 7}.WithDefaults())
}

// TestProjectsPerUserCap: a user at MaxProjectsPerUser cannot create
// another until one is deleted; other users are not counted; concurrent
// creates at the cap land exactly up to it; a negative cap is unlimited.
func TestProjectsPerUserCap(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		s := newStore(t)
		f := setup(t, s)
		f.svc = projects.New(s, f.clock, projects.Limits{MaxProjectsPerUser: 3})
		var first store.Project
		for i := range 2 {
			p, err := f.svc.Create(f.ctx, f.alice.UserID, fmt.Sprint("p", i), "")
			require.NoError(t, err)
			first = p
		}
		_, err := f.svc.Create(f.ctx, f.bob.UserID, "bob's", "")
		require.NoError(t, err, "bob's projects are his own")

		const writers = 5
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() { _, errs[i] = f.svc.Create(f.ctx, f.alice.UserID, fmt.Sprint("c", i), "") })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, projects.ErrLimitReached):
				t.Fatalf("unexpected error: %v", err)
			}
		}
		require.Equal(t, 1, ok, "one slot was left")

		_, err = f.svc.Create(f.ctx, f.alice.UserID, "one more", "")
		require.ErrorIs(t, err, projects.ErrLimitReached)
		require.ErrorContains(t, err, "you have 3 projects; at most 3")
		require.NoError(t, f.svc.Delete(f.ctx, f.alice, first.ID))
		_, err = f.svc.Create(f.ctx, f.alice.UserID, "after a delete", "")
		require.NoError(t, err)

		unlimited := projects.New(s, f.clock, projects.Limits{MaxProjectsPerUser: -1})
		_, err = unlimited.Create(f.ctx, f.alice.UserID, "beyond", "")
		require.NoError(t, err)
	})
}

// TestMemoriesPerUserCap: the memories of all a user's projects count
// together; at the cap a new name is refused in any of them, replacing an
// existing memory is not, and a delete frees a place.
func TestMemoriesPerUserCap(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		s := newStore(t)
		f := setup(t, s)
		f.svc = projects.New(s, f.clock, projects.Limits{MaxMemoriesPerUser: 3})
		a, err := f.svc.Create(f.ctx, f.alice.UserID, "A", "")
		require.NoError(t, err)
		b, err := f.svc.Create(f.ctx, f.alice.UserID, "B", "")
		require.NoError(t, err)
		theirs, err := f.svc.Create(f.ctx, f.bob.UserID, "bob's", "")
		require.NoError(t, err)
		for _, save := range []struct {
			project uuid.UUID
			name    string
		}{{a.ID, "a1"}, {a.ID, "a2"}, {b.ID, "b1"}, {theirs.ID, "t1"}} {
			_, err := f.svc.SaveMemory(f.ctx, save.project, save.name, "x", uuid.NullUUID{})
			require.NoError(t, err)
		}
		_, err = f.svc.SaveMemory(f.ctx, b.ID, "b2", "x", uuid.NullUUID{})
		require.ErrorIs(t, err, projects.ErrLimitReached)
		require.ErrorContains(t, err, "your projects hold 3 memories together; at most 3")
		res, err := f.svc.SaveMemory(f.ctx, a.ID, "a1", "replaced", uuid.NullUUID{})
		require.NoError(t, err, "replacing is not a new memory")
		require.False(t, res.Created)
		_, err = f.svc.SaveMemory(f.ctx, theirs.ID, "t2", "x", uuid.NullUUID{})
		require.NoError(t, err, "bob's memories are counted apart")

		existed, _, err := f.svc.DeleteMemory(f.ctx, a.ID, "a2")
		require.NoError(t, err)
		require.True(t, existed)
		_, err = f.svc.SaveMemory(f.ctx, b.ID, "b2", "x", uuid.NullUUID{})
		require.NoError(t, err)
	})
}
