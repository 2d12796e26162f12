package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// testElicitations: a question round-trips, lists while pending (oldest
// first, per chat), is answered once (a second answer changes nothing),
// a renewed hold keeps it from expiring, an ended hold cancels it, and it
// goes with its chat.
func testElicitations(t *testing.T, b *bundle) {
	other := b.newChat(t, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","default":"Ann"}}}`)
	mk := func(chat uuid.UUID, at time.Duration, mode string) store.Elicitation {
		e := store.Elicitation{
			ID: uuid.New(), ChatID: chat, ToolCallID: "call-1", Server: "srv", Mode: mode, Message: "Your name?",
			CreatedAt: b.now.Add(at), HeldUntil: b.now.Add(at + time.Minute),
		}
		if mode == store.ElicitationModeForm {
			e.Schema = schema
		} else {
			e.URL = "https://example.com/consent"
		}
		return e
	}
	second, first, third := mk(b.chat.ID, time.Second, store.ElicitationModeURL), mk(b.chat.ID, 0, store.ElicitationModeForm), mk(other.ID, 0, store.ElicitationModeForm)
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		for _, e := range []store.Elicitation{second, first, third} {
			got, err := tx.ElicitationInsert(b.ctx, e)
			require.NoError(t, err)
			require.Equal(t, store.ElicitationPending, got.State)
			require.Nil(t, got.AnsweredAt)
			require.Nil(t, got.Content)
		}
		return nil
	}))
	err := b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.ElicitationInsert(b.ctx, mk(uuid.New(), 0, store.ElicitationModeForm))
		return err
	})
	require.ErrorIs(t, err, store.ErrForeignKey)

	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		got, err := tx.ElicitationGet(b.ctx, first.ID)
		require.NoError(t, err)
		require.JSONEq(t, string(schema), string(got.Schema))
		require.Equal(t, first.CreatedAt, got.CreatedAt)
		require.Equal(t, "Your name?", got.Message)
		u, err := tx.ElicitationGet(b.ctx, second.ID)
		require.NoError(t, err)
		require.Nil(t, u.Schema)
		require.Equal(t, "https://example.com/consent", u.URL)
		_, err = tx.ElicitationGet(b.ctx, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)
		list, err := tx.ElicitationListPending(b.ctx, b.chat.ID)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{first.ID, second.ID}, elicitationIDs(list))
		return nil
	}))

	answer := store.ElicitationAnswerParams{State: store.ElicitationAccept, Content: json.RawMessage(`{"name":"Bo"}`), Now: b.now.Add(time.Hour)}
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		got, answered, err := tx.ElicitationAnswer(b.ctx, first.ID, answer)
		require.NoError(t, err)
		require.True(t, answered)
		require.Equal(t, store.ElicitationAccept, got.State)
		require.JSONEq(t, `{"name":"Bo"}`, string(got.Content))
		require.Equal(t, b.now.Add(time.Hour), *got.AnsweredAt)
		again, answered, err := tx.ElicitationAnswer(b.ctx, first.ID, store.ElicitationAnswerParams{State: store.ElicitationDecline, Now: b.now})
		require.NoError(t, err)
		require.False(t, answered)
		require.Equal(t, store.ElicitationAccept, again.State)
		_, _, err = tx.ElicitationAnswer(b.ctx, uuid.New(), answer)
		require.ErrorIs(t, err, store.ErrNotFound)
		// The hold of the other chat's question is renewed past the sweep;
		// the URL question's ends before it.
		require.NoError(t, tx.ElicitationRenew(b.ctx, []uuid.UUID{third.ID, first.ID}, b.now.Add(time.Hour)))
		expired, err := tx.ElicitationExpire(b.ctx, b.now.Add(30*time.Minute))
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{second.ID}, elicitationIDs(expired))
		require.Equal(t, store.ElicitationCancel, expired[0].State)
		list, err := tx.ElicitationListPending(b.ctx, b.chat.ID)
		require.NoError(t, err)
		require.Empty(t, list)
		require.NotNil(t, list)
		return nil
	}))

	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		return tx.ChatDelete(b.ctx, other.ID)
	}))
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		_, err := tx.ElicitationGet(b.ctx, third.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))
}

func elicitationIDs(es []store.Elicitation) []uuid.UUID {
	out := []uuid.UUID{}
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

// testElicitationReleasesSlot: a question naming its chat's runner takes
// the chat out of the slot count (it stays owned, not acquirable) until
// its slot is resumed; a question naming another runner (the chat was
// taken over) releases nothing; an ended hold ends the release, also of an
// answered question, while a renewed one keeps it.
func testElicitationReleasesSlot(t *testing.T, b *bundle) {
	self, runner := uuid.New(), uuid.New()
	b.own(t, b.chat.ID, self, runner, b.now)
	p := store.AcquirableParams{Self: self}
	count := func() int64 {
		t.Helper()
		var roots int64
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			roots, _, err = tx.ChatCountOwned(b.ctx, p)
			if err != nil {
				return err
			}
			byOwner, err := tx.ChatCountOwnedByOwner(b.ctx, p)
			require.Equal(t, roots, byOwner[b.user.ID])
			return err
		}))
		return roots
	}
	require.Equal(t, int64(1), count())
	ask := func(slotRunner uuid.UUID) store.Elicitation {
		t.Helper()
		e := store.Elicitation{
			ID: uuid.New(), ChatID: b.chat.ID, ToolCallID: "call-1", Server: "srv", Mode: store.ElicitationModeForm,
			Message: "?", CreatedAt: b.now, HeldUntil: b.now.Add(time.Minute),
			SlotRunnerID: uuid.NullUUID{UUID: slotRunner, Valid: true},
		}
		require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
			got, err := tx.ElicitationInsert(b.ctx, e)
			require.Equal(t, e.SlotRunnerID, got.SlotRunnerID)
			return err
		}))
		return e
	}
	inTx := func(fn func(tx store.Tx) error) { t.Helper(); require.NoError(t, b.s.InTx(b.ctx, fn)) }

	ask(uuid.New())
	require.Equal(t, int64(1), count(), "another runner's question releases nothing")
	e := ask(runner)
	require.Equal(t, int64(0), count(), "the runner's question releases its slot")
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		list, err := tx.ChatListAcquirable(b.ctx, p)
		require.Empty(t, list, "the chat keeps its owner")
		return err
	}))
	inTx(func(tx store.Tx) error {
		_, _, err := tx.ElicitationAnswer(b.ctx, e.ID, store.ElicitationAnswerParams{State: store.ElicitationDecline, Now: b.now})
		return err
	})
	require.Equal(t, int64(0), count(), "an answer alone does not take the slot back")
	inTx(func(tx store.Tx) error { return tx.ElicitationResumeSlot(b.ctx, e.ID) })
	require.Equal(t, int64(1), count())

	answered := ask(runner)
	ask(runner)
	inTx(func(tx store.Tx) error {
		_, _, err := tx.ElicitationAnswer(b.ctx, answered.ID, store.ElicitationAnswerParams{State: store.ElicitationCancel, Now: b.now})
		if err != nil {
			return err
		}
		return tx.ElicitationRenew(b.ctx, []uuid.UUID{answered.ID}, b.now.Add(time.Hour))
	})
	inTx(func(tx store.Tx) error {
		expired, err := tx.ElicitationExpire(b.ctx, b.now.Add(30*time.Minute))
		require.Len(t, expired, 2, "the pending ones, not the answered")
		for _, x := range expired {
			require.False(t, x.SlotRunnerID.Valid)
		}
		return err
	})
	require.Equal(t, int64(0), count(), "the renewed answered question still releases the slot")
	inTx(func(tx store.Tx) error {
		_, err := tx.ElicitationExpire(b.ctx, b.now.Add(2*time.Hour))
		return err
	})
	require.Equal(t, int64(1), count(), "an ended hold ends the release")
}
