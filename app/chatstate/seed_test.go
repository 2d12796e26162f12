package chatstate_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// Every state can be reached through real transitions (the matrix test
// relies on this).
func TestSeedReachesEveryState(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		for _, st := range chatstate.AllStates {
			id := f.seed(t, st)
			require.Equal(t, st, f.snap(t, id).State, "seeding %s", st)
		}
	})
}
