package stream_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/stream"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// machineRig drives one chat through the real transitions and a Loop over
// StoreSource, so the Source contract is checked on both stores.
type machineRig struct {
	t       *testing.T
	ctx     context.Context
	store   store.Store
	machine *chatstate.Machine
	user    store.User
	chatID  uuid.UUID
	loop    *stream.Loop
	targets []stream.Target
}

func newMachineRig(t *testing.T, s store.Store, input []sdk.ChatMessagePart) *machineRig {
	ctx := context.Background()
	r := &machineRig{t: t, ctx: ctx, store: s, machine: chatstate.New(s, pubsub.NewMemory(), chatstate.Config{})}
	require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
		var err error
		r.user, err = auth.EnsureUser(ctx, tx, "viewer", false, time.Now())
		return err
	}))
	r.do(func(tx *chatstate.Tx) error {
		res, err := tx.Create(chatstate.CreateParams{
			OwnerID: r.user.ID, Title: "rig", TitleSource: store.TitleSourceUser,
			Input: chatstate.UserInput{Content: input, CreatedBy: uuid.NullUUID{UUID: r.user.ID, Valid: true}},
		})
		r.chatID = res.Chat.ID
		return err
	})
	r.loop = stream.NewLoop(r.chatID, func(tg stream.Target) { r.targets = append(r.targets, tg) })
	return r
}

func (r *machineRig) do(fn func(tx *chatstate.Tx) error) {
	r.t.Helper()
	require.NoError(r.t, r.machine.Do(r.ctx, fn))
}

func (r *machineRig) chat() store.Chat {
	r.t.Helper()
	var c store.Chat
	require.NoError(r.t, r.store.ReadTx(r.ctx, func(tx store.Reader) error {
		var err error
		c, err = tx.ChatGet(r.ctx, r.chatID)
		return err
	}))
	return c
}

// sync delivers the poller's hints for the current row.
func (r *machineRig) sync() []sdk.ChatStreamEvent {
	r.t.Helper()
	events, err := r.loop.Sync(r.ctx, stream.StoreSource{Store: r.store}, stream.HintsFromChat(r.chat()))
	require.NoError(r.t, err)
	return events
}

func (r *machineRig) bootstrap() []sdk.ChatStreamEvent {
	r.t.Helper()
	events, err := r.loop.Sync(r.ctx, stream.StoreSource{Store: r.store}, stream.Hints{})
	require.NoError(r.t, err)
	return events
}

func (r *machineRig) input(text string) chatstate.UserInput {
	return chatstate.UserInput{Content: sdk.Text(text), CreatedBy: uuid.NullUUID{UUID: r.user.ID, Valid: true}}
}

func assistantStep(text string) chatstate.Step {
	content, _ := json.Marshal(sdk.Text(text))
	return chatstate.Step{Messages: []store.MessageInsertParams{{Role: store.RoleAssistant, Content: content}}}
}

// TestStoreSourceTurn: a Loop over StoreSource follows a turn driven by the
// real transitions: retry, queue, promotion, edit, error, deletion.
func TestStoreSourceTurn(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := newMachineRig(t, newStore(t), sdk.Text("hello"))
		events := r.bootstrap()
		require.Equal(t, []string{tMessage, tQueue, tStatus, tPreview}, kinds(events))
		require.Equal(t, []string{"hello"}, texts(events))
		first := events[0].Message.ID

		w1, runner := uuid.New(), uuid.New()
		r.do(func(tx *chatstate.Tx) error { _, err := tx.Acquire(r.chatID, w1, runner); return err })
		require.Empty(t, r.sync(), "ownership alone shows nothing")
		r.do(func(tx *chatstate.Tx) error { _, err := tx.RecordGenerationAttempt(r.chatID); return err })
		require.Equal(t, []string{tPreview}, kinds(r.sync()))
		hv := r.chat().HistoryVersion
		require.Equal(t, stream.Target{WorkerID: uuid.NullUUID{UUID: w1, Valid: true}, HistoryVersion: hv, GenerationAttempt: 1},
			r.targets[len(r.targets)-1])

		r.do(func(tx *chatstate.Tx) error { _, err := tx.RecordRetryState(r.chatID, *testRetry); return err })
		events = r.sync()
		require.Equal(t, []string{tRetry}, kinds(events))
		require.Equal(t, testRetry.Attempt, events[0].Retry.Attempt)
		_, err := r.loop.Part(hv, 1, 1, sdk.ChatMessagePart{Type: sdk.PartText, Text: "late"})
		require.NoError(t, err, "a retired attempt's part is dropped, not a gap")

		r.do(func(tx *chatstate.Tx) error { _, err := tx.RecordGenerationAttempt(r.chatID); return err })
		require.Equal(t, []string{tPreview}, kinds(r.sync()))
		e, err := r.loop.Part(hv, 2, 1, sdk.ChatMessagePart{Type: sdk.PartText, Text: "hi"})
		require.NoError(t, err)
		require.NotNil(t, e, "the new attempt is live")

		r.do(func(tx *chatstate.Tx) error {
			_, err := tx.SendMessage(r.chatID, r.input("queued"), chatstate.BusyQueue)
			return err
		})
		events = r.sync()
		require.Equal(t, []string{tQueue}, kinds(events))
		require.Len(t, events[0].QueuedMessages, 1)
		queuedID := events[0].QueuedMessages[0].ID

		r.do(func(tx *chatstate.Tx) error { _, err := tx.CommitStep(r.chatID, assistantStep("hi there")); return err })
		events = r.sync()
		require.Equal(t, []string{tMessage, tPreview}, kinds(events))
		require.Equal(t, []string{"hi there"}, texts(events))

		r.do(func(tx *chatstate.Tx) error { _, err := tx.FinishTurn(r.chatID); return err })
		events = r.sync()
		require.Equal(t, []string{tMessage, tQueue, tPreview}, kinds(events), "the queue head is promoted")
		require.Equal(t, &queuedID, events[0].Message.QueuedMessageID)
		require.Empty(t, events[1].QueuedMessages)

		r.do(func(tx *chatstate.Tx) error {
			_, err := tx.EditMessage(r.chatID, first, r.input("hello, edited"))
			return err
		})
		events = r.sync()
		require.Equal(t, []string{tHistory, tMessage, tPreview}, kinds(events))
		require.Equal(t, []string{"hello, edited"}, texts(events))

		r.do(func(tx *chatstate.Tx) error { _, err := tx.FinishError(r.chatID, testError); return err })
		events = r.sync()
		require.Equal(t, []string{tStatus, tError}, kinds(events))
		require.Equal(t, testError, *events[1].Error)

		r.do(func(tx *chatstate.Tx) error { _, err := tx.Delete(r.chatID); return err })
		_, err = r.loop.Sync(r.ctx, stream.StoreSource{Store: r.store}, stream.Hints{Gone: true})
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// TestStoreSourceActionRequired: pending dynamic tool calls come from the
// same read as the status.
func TestStoreSourceActionRequired(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := newMachineRig(t, newStore(t), sdk.Text("use the tool"))
		r.bootstrap()
		r.do(func(tx *chatstate.Tx) error { _, err := tx.Acquire(r.chatID, uuid.New(), uuid.New()); return err })
		content, err := json.Marshal([]sdk.ChatMessagePart{{Type: sdk.PartToolCall, ToolCallID: "call_1", ToolName: "lookup", Args: json.RawMessage(`{"q":"go"}`)}})
		require.NoError(t, err)
		r.do(func(tx *chatstate.Tx) error {
			if _, err := tx.CommitStep(r.chatID, chatstate.Step{Messages: []store.MessageInsertParams{{Role: store.RoleAssistant, Content: content}}}); err != nil {
				return err
			}
			_, err := tx.EnterRequiresAction(r.chatID)
			return err
		})
		events := r.sync()
		require.Equal(t, []string{tMessage, tStatus, tAction, tPreview}, kinds(events))
		calls := events[2].ActionRequired.ToolCalls
		require.Len(t, calls, 1)
		require.Equal(t, "call_1", calls[0].ToolCallID)
		require.Equal(t, "lookup", calls[0].ToolName)
		require.JSONEq(t, `{"q":"go"}`, calls[0].Args)
	})
}

// TestStoreSourceFirstMessageOfEmptyChat: the first message of a chat
// created empty removes nothing, so it must not be a history_reset (spec:
// "Message synchronization": history_reset only when a fetched row is
// soft-deleted).
func TestStoreSourceFirstMessageOfEmptyChat(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := newMachineRig(t, newStore(t), nil)
		require.Equal(t, []string{tQueue, tStatus}, kinds(r.bootstrap())[:2])
		r.do(func(tx *chatstate.Tx) error {
			_, err := tx.SendMessage(r.chatID, r.input("first"), chatstate.BusyQueue)
			return err
		})
		events := r.sync()
		require.Equal(t, []string{"first"}, texts(events))
		require.Equal(t, []string{tMessage, tStatus, tPreview}, kinds(events))
	})
}

// TestPoller: one poll reads every registered chat and hints each of its
// subscribers; a chat that is gone is reported as Gone; a deregistered
// subscriber hears nothing.
func TestPoller(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		s := newStore(t)
		r := newMachineRig(t, s, sdk.Text("hello"))
		other := newMachineRig(t, s, nil)
		p := stream.NewPoller(s, 0, nil, nil)
		var a, b, c []stream.Hints
		p.Poll(r.ctx) // nothing registered: nothing to read
		stopA := p.Register(r.chatID, func(h stream.Hints) { a = append(a, h) })
		stopB := p.Register(r.chatID, func(h stream.Hints) { b = append(b, h) })
		stopC := p.Register(other.chatID, func(h stream.Hints) { c = append(c, h) })
		defer stopC()

		p.Poll(r.ctx)
		require.Equal(t, []stream.Hints{stream.HintsFromChat(r.chat())}, a)
		require.Equal(t, a, b)
		require.Equal(t, []stream.Hints{stream.HintsFromChat(other.chat())}, c)

		stopA()
		stopA() // idempotent
		other.do(func(tx *chatstate.Tx) error { _, err := tx.Delete(other.chatID); return err })
		p.Poll(r.ctx)
		require.Len(t, a, 1, "deregistered")
		require.Len(t, b, 2)
		require.Len(t, c, 2)
		require.Equal(t, stream.Hints{Gone: true}, c[1], "a deleted chat is Gone")
		stopB()
	})
}

// TestPollerStartStop: between Start and Stop the poller polls once per
// interval of its clock; Stop waits for the loop, and the poller cannot be
// started twice or after Stop.
func TestPollerStartStop(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSQLite(t)
	r := newMachineRig(t, s, sdk.Text("hello"))
	clk := clock.NewFake(time.Now())
	p := stream.NewPoller(s, time.Minute, clk, nil)
	hints := make(chan stream.Hints, 1)
	defer p.Register(r.chatID, func(h stream.Hints) { hints <- h })()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.Start(ctx))
	require.Error(t, p.Start(ctx), "second start")
	require.NoError(t, clk.BlockUntil(ctx, 1), "the loop's ticker")
	clk.Advance(time.Minute - time.Second)
	select {
	case <-hints:
		t.Fatal("polled before the interval passed")
	default:
	}
	clk.Advance(time.Second)
	select {
	case h := <-hints:
		require.Equal(t, stream.HintsFromChat(r.chat()), h)
	case <-ctx.Done():
		t.Fatal("no poll after the interval")
	}

	p.Stop()
	require.Zero(t, clk.Waiters(), "Stop ended the loop and its ticker")
	p.Stop() // idempotent
	require.Error(t, p.Start(ctx), "start after stop")
}
