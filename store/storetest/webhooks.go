package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

func testWebhooks(t *testing.T, b *bundle) {
	other := b.newChat(t, nil)
	var mine, global, forOther, stranger store.Webhook
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		bob, err := tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: "bob", Now: b.now})
		require.NoError(t, err)
		insert := func(owner, chat uuid.NullUUID, at time.Time) store.Webhook {
			w, err := tx.WebhookInsert(b.ctx, store.Webhook{ID: uuid.New(), OwnerID: owner, ChatID: chat, URL: "https://example.com/hook",
				Events: []string{store.EventTurnCompleted}, Secret: "s3cret", CreatedBy: b.user.ID, CreatedAt: at})
			require.NoError(t, err)
			return w
		}
		me := uuid.NullUUID{UUID: b.user.ID, Valid: true}
		mine = insert(me, uuid.NullUUID{}, b.now)
		global = insert(uuid.NullUUID{}, uuid.NullUUID{}, b.now.Add(time.Second))
		forOther = insert(me, uuid.NullUUID{UUID: other.ID, Valid: true}, b.now.Add(2*time.Second))
		stranger = insert(uuid.NullUUID{UUID: bob.ID, Valid: true}, uuid.NullUUID{}, b.now.Add(3*time.Second))
		return nil
	}))
	require.Equal(t, []string{store.EventTurnCompleted}, mine.Events)
	require.Equal(t, "s3cret", mine.Secret)
	ids := func(ws []store.Webhook) []uuid.UUID {
		out := []uuid.UUID{}
		for _, w := range ws {
			out = append(out, w.ID)
		}
		return out
	}
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		got, err := tx.WebhookListForChat(b.ctx, b.user.ID, b.chat.ID)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{mine.ID, global.ID}, ids(got))
		got, err = tx.WebhookListForChat(b.ctx, b.user.ID, other.ID)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{mine.ID, global.ID, forOther.ID}, ids(got))
		all, err := tx.WebhookList(b.ctx, store.WebhookListParams{})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{mine.ID, global.ID, forOther.ID, stranger.ID}, ids(all))
		n, err := tx.WebhookCountByOwner(b.ctx, b.user.ID)
		require.Equal(t, int64(2), n)
		return err
	}))

	// Three deliveries for one chat, one for another: only each chat's
	// oldest pending one is due.
	var ds []store.WebhookDelivery
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		for i, chat := range []uuid.UUID{b.chat.ID, b.chat.ID, other.ID, b.chat.ID} {
			d, err := tx.WebhookDeliveryInsert(b.ctx, store.WebhookDelivery{ID: uuid.New(), WebhookID: mine.ID, ChatID: chat,
				Event: store.EventTurnCompleted, Payload: json.RawMessage(`{"n":` + string(rune('0'+i)) + `}`),
				NextAttemptAt: b.now, CreatedAt: b.now})
			require.NoError(t, err)
			require.Equal(t, store.WebhookDeliveryPending, d.Status)
			ds = append(ds, d)
		}
		return nil
	}))
	require.Less(t, ds[0].Seq, ds[1].Seq)
	due := func(now time.Time) []int64 {
		var seqs []int64
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			got, err := tx.WebhookDeliveryListDue(b.ctx, now, 10)
			for _, d := range got {
				seqs = append(seqs, d.Seq)
			}
			return err
		}))
		return seqs
	}
	require.Equal(t, []int64{ds[0].Seq, ds[2].Seq}, due(b.now))
	require.Empty(t, due(b.now.Add(-time.Second)))

	retry := b.now.Add(time.Minute)
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		ok, err := tx.WebhookDeliveryClaim(b.ctx, ds[0].Seq, b.now, retry)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = tx.WebhookDeliveryClaim(b.ctx, ds[0].Seq, b.now, retry)
		require.NoError(t, err)
		require.False(t, ok, "a claimed delivery is not claimed twice")
		return nil
	}))
	require.Equal(t, []int64{ds[2].Seq}, due(b.now), "the chat waits for its head's retry")
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		next, ok, err := tx.WebhookDeliveryNextDue(b.ctx)
		require.True(t, ok)
		require.Equal(t, b.now, next)
		return err
	}))
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		d, err := tx.WebhookDeliveryUpdate(b.ctx, ds[0].Seq, store.WebhookDeliveryPatch{Status: store.Some(store.WebhookDeliveryDelivered),
			LastStatus: store.Some(int64(204)), DeliveredAt: store.Some(&retry)})
		require.NoError(t, err)
		require.Equal(t, int64(1), d.Attempts)
		require.Equal(t, retry, *d.DeliveredAt)
		return nil
	}))
	require.Equal(t, []int64{ds[1].Seq, ds[2].Seq}, due(b.now), "the next of the chat is due once its head is delivered")
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		got, err := tx.WebhookDeliveryList(b.ctx, mine.ID, 10)
		require.Len(t, got, 4)
		require.Equal(t, ds[3].Seq, got[0].Seq, "newest first")
		require.JSONEq(t, `{"n":3}`, string(got[0].Payload))
		return err
	}))
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		n, err := tx.WebhookDelete(b.ctx, mine.ID)
		require.Equal(t, int64(1), n)
		return err
	}))
	require.Empty(t, due(b.now), "deliveries go with their webhook")
}
