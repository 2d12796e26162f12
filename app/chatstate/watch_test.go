package chatstate_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// Every chat:update is mirrored on the owner's chat:watch channel with the
// same payload; a title write, which is not a state change, is published
// on the watch channel only; a rolled-back bundle publishes on neither.
func TestWatchChannel(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		watchCh := "chat:watch:" + f.user.ID.String()

		id := f.create(t, "hello")
		updates, watch := f.pub.take(), f.pub.takeWatch()
		var mirrored []published
		for _, p := range updates {
			if p.Channel == "chat:update:"+id.String() {
				mirrored = append(mirrored, published{watchCh, p.Payload})
			}
		}
		require.NotEmpty(t, mirrored)
		require.Equal(t, mirrored, watch, "the same payloads on the owner's watch channel")

		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.WriteTitle(id, "a title", store.TitleSourceGenerated)
			return err
		})
		require.Empty(t, f.pub.take(), "a title write is no chat:update")
		watch = f.pub.takeWatch()
		require.Len(t, watch, 1)
		require.Equal(t, watchCh, watch[0].Channel)
		require.Contains(t, string(watch[0].Payload), id.String())

		// A user title outranks a generated one: the refused write says nothing.
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.WriteTitle(id, "mine", store.TitleSourceUser)
			return err
		})
		f.pub.takeWatch()
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.WriteTitle(id, "generated", store.TitleSourceGenerated)
			return err
		})
		require.Empty(t, f.pub.takeWatch(), "a refused title write publishes nothing")

		boom := errors.New("boom")
		require.ErrorIs(t, f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			if _, err := tx.WriteTitle(id, "rolled back", store.TitleSourceUser); err != nil {
				return err
			}
			return boom
		}), boom)
		require.Empty(t, f.pub.takeWatch(), "a rollback publishes nothing")
		require.Empty(t, f.pub.take())
	})
}
