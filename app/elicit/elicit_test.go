package elicit_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/chatstate/chatstatetest"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/elicit"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const hold = 30 * time.Second

type fixture struct {
	ctx   context.Context
	s     store.Store
	m     *chatstate.Machine
	clock *clock.Fake
	svc   *elicit.Service
	chat  uuid.UUID
}

func setup(t *testing.T, s store.Store) *fixture {
	f := &fixture{ctx: t.Context(), s: s, clock: clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	f.m = chatstate.New(s, pubsub.NewMemory(), chatstate.Config{Clock: f.clock})
	f.svc = elicit.New(f.m, s, pubsub.NewMemory(), f.clock, slog.New(slog.NewTextHandler(io.Discard, nil)),
		elicit.Config{Timeout: 10 * time.Minute, Hold: hold})
	var owner store.User
	require.NoError(t, s.InTx(f.ctx, func(tx store.Tx) error {
		var err error
		owner, err = tx.UserInsert(f.ctx, store.UserInsertParams{ID: uuid.New(), Name: "owner", Now: f.clock.Now()})
		return err
	}))
	f.chat = chatstatetest.Seed(t, f.m, s, chatstatetest.Spec{State: chatstate.StateR0, Owner: owner.ID}).ID
	return f
}

// ask runs Ask in the background and returns the pending question once it
// is stored, and the channel of Ask's outcome.
func (f *fixture) ask(t *testing.T, ctx context.Context) (store.Elicitation, <-chan askResult) {
	t.Helper()
	out := make(chan askResult, 1)
	go func() {
		a, err := f.svc.Ask(ctx, elicit.Question{
			ChatID: f.chat, ToolCallID: "call-1", Server: "srv", Mode: sdk.ElicitationModeForm, Message: "Name?",
			Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","default":"Ann"}}}`),
		})
		out <- askResult{a, err}
	}()
	// Ask's timeout timer and renewal ticker: it stored the question.
	require.NoError(t, f.clock.BlockUntil(ctx, 2))
	pending := f.pending(t)
	require.Len(t, pending, 1)
	return pending[0], out
}

type askResult struct {
	a   elicit.Answer
	err error
}

func (f *fixture) pending(t *testing.T) []store.Elicitation {
	t.Helper()
	var out []store.Elicitation
	require.NoError(t, f.s.ReadTx(f.ctx, func(tx store.Reader) error {
		var err error
		out, err = tx.ElicitationListPending(f.ctx, f.chat)
		return err
	}))
	return out
}

func (f *fixture) answer(r sdk.ElicitationResponse) (store.Elicitation, error) {
	var e store.Elicitation
	err := f.m.Do(f.ctx, func(t *chatstate.Tx) error {
		var err error
		e, err = t.AnswerElicitation(f.chat, r)
		return err
	})
	return e, err
}

func (f *fixture) get(t *testing.T, id uuid.UUID) store.Elicitation {
	t.Helper()
	var e store.Elicitation
	require.NoError(t, f.s.ReadTx(f.ctx, func(tx store.Reader) error {
		var err error
		e, err = tx.ElicitationGet(f.ctx, id)
		return err
	}))
	return e
}

// A question waits durably until a person answers it; the answer reaches
// the asker, once; bad answers are refused without a change.
func TestAskWaitsForTheAnswer(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore(t))
		q, out := f.ask(t, f.ctx)
		require.Equal(t, "call-1", q.ToolCallID)
		require.Equal(t, store.ElicitationPending, q.State)

		for _, bad := range []sdk.ElicitationResponse{
			{ElicitationID: q.ID, Action: "maybe"},
			{ElicitationID: q.ID, Action: sdk.ElicitationDecline, Content: json.RawMessage(`{"name":"x"}`)},
			{ElicitationID: q.ID, Action: sdk.ElicitationAccept, Content: json.RawMessage(`[1]`)},
		} {
			_, err := f.answer(bad)
			require.ErrorIs(t, err, chatstate.ErrValidation, "%+v", bad)
		}
		_, err := f.answer(sdk.ElicitationResponse{ElicitationID: uuid.New(), Action: sdk.ElicitationCancel})
		require.ErrorIs(t, err, store.ErrNotFound)
		require.Len(t, f.pending(t), 1)

		e, err := f.answer(sdk.ElicitationResponse{ElicitationID: q.ID, Action: sdk.ElicitationAccept, Content: json.RawMessage(`{"name":"Bo"}`)})
		require.NoError(t, err)
		f.svc.Answered(f.ctx, e)
		r := <-out
		require.NoError(t, r.err)
		require.Equal(t, elicit.Answer{Action: sdk.ElicitationAccept, Content: map[string]any{"name": "Bo"}}, r.a)
		_, err = f.answer(sdk.ElicitationResponse{ElicitationID: q.ID, Action: sdk.ElicitationDecline})
		require.ErrorIs(t, err, chatstate.ErrElicitationAnswered)
		require.Empty(t, f.pending(t))
	})
}

// An answer whose hint is lost is found at the next renewal; a question
// nobody answers is cancelled at the timeout.
func TestAskTimesOut(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore(t))
		q, out := f.ask(t, f.ctx)
		_, err := f.answer(sdk.ElicitationResponse{ElicitationID: q.ID, Action: sdk.ElicitationDecline})
		require.NoError(t, err) // no Answered: the hint is lost
		f.clock.Advance(hold / 3)
		r := <-out
		require.NoError(t, r.err)
		require.Equal(t, sdk.ElicitationDecline, r.a.Action)

		q, out = f.ask(t, f.ctx)
		f.clock.Advance(10 * time.Minute)
		r = <-out
		require.NoError(t, r.err)
		require.Equal(t, sdk.ElicitationCancel, r.a.Action)
		require.Equal(t, store.ElicitationCancel, f.get(t, q.ID).State)
	})
}

// A tool call that ends (its context) takes its question with it.
func TestAskEndsWithTheCall(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore(t))
		ctx, cancel := context.WithCancel(f.ctx)
		q, out := f.ask(t, ctx)
		cancel()
		r := <-out
		require.True(t, errors.Is(r.err, context.Canceled), "%v", r.err)
		require.Equal(t, store.ElicitationCancel, f.get(t, q.ID).State)
	})
}

// After a restart a question whose holder is gone is answered cancel by
// the sweep, once its hold ended; one still held is left alone.
func TestSweepCancelsOrphans(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore(t))
		var orphan, held store.Elicitation
		require.NoError(t, f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			var err error
			orphan, err = tx.AskElicitation(store.Elicitation{ID: uuid.New(), ChatID: f.chat, ToolCallID: "a", Server: "s",
				Mode: store.ElicitationModeForm, Message: "?", HeldUntil: f.clock.Now().Add(hold)})
			if err != nil {
				return err
			}
			held, err = tx.AskElicitation(store.Elicitation{ID: uuid.New(), ChatID: f.chat, ToolCallID: "b", Server: "s",
				Mode: store.ElicitationModeURL, Message: "?", URL: "https://example.com", HeldUntil: f.clock.Now().Add(3 * hold)})
			return err
		}))
		f.svc.Sweep(f.ctx)
		require.Len(t, f.pending(t), 2)
		f.clock.Advance(hold + time.Second)
		f.svc.Sweep(f.ctx)
		require.Equal(t, store.ElicitationCancel, f.get(t, orphan.ID).State)
		require.Equal(t, store.ElicitationPending, f.get(t, held.ID).State)
	})
}
