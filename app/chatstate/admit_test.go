package chatstate_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// fakeAdmitter acquires every chat it is offered for worker, except those
// in refuse (left to the acquisition loop) and those in fail (an error),
// and logs what Do made of each admission.
type fakeAdmitter struct {
	worker uuid.UUID
	refuse map[uuid.UUID]bool
	fail   map[uuid.UUID]bool

	mu                           sync.Mutex
	offered, committed, rolledBk []uuid.UUID
}

func (a *fakeAdmitter) Admit(t *chatstate.Tx, c store.Chat) (chatstate.Admission, error) {
	a.mu.Lock()
	a.offered = append(a.offered, c.ID)
	a.mu.Unlock()
	if a.refuse[c.ID] {
		return chatstate.Admission{}, nil
	}
	if a.fail[c.ID] {
		return chatstate.Admission{}, errors.New("admission failed")
	}
	if _, err := t.Acquire(c.ID, a.worker, uuid.New()); err != nil {
		return chatstate.Admission{}, err
	}
	log := func(into *[]uuid.UUID) func() {
		return func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			*into = append(*into, c.ID)
		}
	}
	return chatstate.Admission{Committed: log(&a.committed), RolledBack: log(&a.rolledBk)}, nil
}

// TestDoAdmits: Do offers its Admitter each chat the bundle leaves
// runnable without a live owner, in the bundle's transaction; an admitted
// chat is owned in the committed row and announced on chat:update only (no
// worker need acquire it), and each admission hears exactly once whether
// its bundle committed.
func TestDoAdmits(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		idle := f.create(t, "")
		a := &fakeAdmitter{worker: f.worker, refuse: map[uuid.UUID]bool{}, fail: map[uuid.UUID]bool{}}
		f.m.SetAdmitter(a)
		f.pub.take()

		// A send to an idle chat: admitted in the send's transaction.
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.SendMessage(idle, f.input("hi"), chatstate.BusyQueue)
			return err
		})
		require.Equal(t, []uuid.UUID{idle}, a.offered)
		require.Equal(t, []uuid.UUID{idle}, a.committed)
		require.Empty(t, a.rolledBk)
		c := f.snap(t, idle).Chat
		require.Equal(t, uuid.NullUUID{UUID: f.worker, Valid: true}, c.WorkerID, "owned when the send committed")
		for _, p := range f.pub.take() {
			require.NotEqual(t, pubsub.ChannelOwnership, p.Channel, "an admitted chat needs no acquisition")
		}

		// A chat the admitter leaves is announced for the loop, as before.
		left := f.create(t, "")
		a.refuse[left] = true
		f.pub.take()
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.SendMessage(left, f.input("hi"), chatstate.BusyQueue)
			return err
		})
		require.False(t, f.snap(t, left).Chat.WorkerID.Valid)
		require.Contains(t, channels(f.pub.take()), pubsub.ChannelOwnership)

		// A bundle that fails after one chat was admitted rolls back, and
		// that admission hears so; nothing is committed.
		one, two := f.create(t, ""), f.create(t, "")
		a.fail[two] = true
		a.committed = nil
		err := f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			for _, id := range []uuid.UUID{one, two} {
				if _, err := tx.SendMessage(id, f.input("hi"), chatstate.BusyQueue); err != nil {
					return err
				}
			}
			return nil
		})
		require.ErrorContains(t, err, "admission failed")
		require.Empty(t, a.committed)
		require.Equal(t, []uuid.UUID{one}, a.rolledBk)
		require.Equal(t, store.ChatStatusWaiting, f.snap(t, one).Chat.Status, "rolled back")

		// An owned chat is not offered.
		a.offered = nil
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.SendMessage(idle, f.input("queued"), chatstate.BusyQueue)
			return err
		})
		require.Empty(t, a.offered, "a chat a live worker owns")
	})
}

func channels(ps []published) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Channel)
	}
	return out
}
