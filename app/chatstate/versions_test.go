package chatstate_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// textsOf is the first text part of each message.
func textsOf(t *testing.T, ms []store.Message) []string {
	t.Helper()
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, partsOf(t, m)[0].Text)
	}
	return out
}

// reply commits an assistant reply to a running chat and finishes its turn.
func (f *fixture) reply(t *testing.T, id uuid.UUID, s string) store.Message {
	t.Helper()
	var m store.Message
	f.do(t, func(tx *chatstate.Tx) error {
		res, err := tx.CommitStep(id, assistantStep(s))
		if err != nil {
			return err
		}
		m = res.Messages[0]
		_, err = tx.FinishTurn(id)
		return err
	})
	return m
}

// activeTexts is the text of the active branch, as the model reads it.
func (f *fixture) activeTexts(t *testing.T, id uuid.UUID) []string {
	t.Helper()
	var ms []store.Message
	require.NoError(t, f.s.ReadTx(f.ctx, func(tx store.Reader) error {
		var err error
		ms, err = chatstate.FromBoundary(f.ctx, tx, id)
		return err
	}))
	return textsOf(t, ms)
}

// TestVersions: edit and regenerate add versions instead of deleting,
// SwitchBranch moves between them only while the chat is idle (bumping
// its versions and publishing), and the model reads the active branch.
func TestVersions(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		id := f.create(t, "question")
		u1 := f.snap(t, id).active()[0]
		a1 := f.reply(t, id, "answer")

		// Edit: a sibling of u1; u1 and its reply leave the active branch.
		var edit chatstate.Result
		f.do(t, func(tx *chatstate.Tx) (err error) {
			edit, err = tx.EditMessage(id, u1.ID, f.input("question, better"))
			return err
		})
		require.Equal(t, []int64{u1.ID, a1.ID}, edit.DeletedIDs)
		u2 := *edit.Message
		require.Equal(t, u1.ParentID, u2.ParentID)
		require.Equal(t, []int64{u1.ID, u2.ID}, u2.SiblingIDs)
		a2 := f.reply(t, id, "better answer")
		require.Equal(t, []string{"question, better", "better answer"}, f.activeTexts(t, id))

		// Regenerate a2: a sibling reply from the same context, on the model
		// the request names.
		model := uuid.NullUUID{UUID: uuid.New(), Valid: true}
		var regen chatstate.Result
		f.do(t, func(tx *chatstate.Tx) (err error) {
			regen, err = tx.RegenerateMessage(id, a2.ID, chatstate.RegenerateInput{ModelConfigID: model, ReasoningEffort: "high"})
			return err
		})
		require.Equal(t, chatstate.StateR0, regen.State)
		require.Equal(t, []int64{a2.ID}, regen.DeletedIDs)
		require.Equal(t, []string{"question, better"}, f.activeTexts(t, id), "the model sees the context of the old reply, not the reply")
		turn := f.snap(t, id).active()[0]
		require.Equal(t, model, turn.ModelConfigID, "the turn asks for the named model")
		require.Equal(t, "high", turn.ReasoningEffort)
		require.Equal(t, model, regen.Chat.LastModelConfigID)
		a3 := f.reply(t, id, "another answer")
		require.Equal(t, &u2.ID, a3.ParentID)
		require.Equal(t, []int64{a2.ID, a3.ID}, a3.SiblingIDs)

		// Only assistant replies on the active branch can be regenerated.
		err := f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			_, err := tx.RegenerateMessage(id, u2.ID, chatstate.RegenerateInput{})
			return err
		})
		require.ErrorIs(t, err, chatstate.ErrValidation)
		err = f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			_, err := tx.RegenerateMessage(id, a1.ID, chatstate.RegenerateInput{})
			return err
		})
		require.ErrorIs(t, err, chatstate.ErrNotFound)

		// Switch to the first version: down to its newest leaf.
		before := f.snap(t, id)
		f.pub.take()
		var sw chatstate.Result
		f.do(t, func(tx *chatstate.Tx) (err error) {
			sw, err = tx.SwitchBranch(id, u1.ID)
			return err
		})
		after := f.snap(t, id)
		require.Equal(t, chatstate.StateW, sw.State)
		require.Equal(t, []int64{u2.ID, a3.ID}, sw.DeletedIDs)
		require.Equal(t, []string{"question", "answer"}, f.activeTexts(t, id))
		require.Equal(t, before.Chat.SnapshotVersion+1, after.Chat.SnapshotVersion)
		require.Equal(t, after.Chat.SnapshotVersion, after.Chat.HistoryVersion, "a switch is a history change")
		var channels []string
		for _, p := range f.pub.take() {
			channels = append(channels, p.Channel)
		}
		require.Contains(t, channels, pubsub.ChannelUpdate(id.String()))

		// ...and back through a3's branch: a3 is the newest below u2.
		f.do(t, func(tx *chatstate.Tx) (err error) {
			sw, err = tx.SwitchBranch(id, u2.ID)
			return err
		})
		require.Equal(t, []int64{u1.ID, a1.ID}, sw.DeletedIDs)
		require.Equal(t, []string{"question, better", "another answer"}, f.activeTexts(t, id))
		// The branch through a2 reads without switching.
		var branch []store.Message
		require.NoError(t, f.s.ReadTx(f.ctx, func(tx store.Reader) (err error) {
			branch, err = chatstate.BranchThrough(f.ctx, tx, id, a2.ID)
			return err
		}))
		require.Equal(t, []string{"question, better", "better answer"}, textsOf(t, branch))
		require.Equal(t, []string{"question, better", "another answer"}, f.activeTexts(t, id))

		// A switch while the chat runs is refused and changes nothing.
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.SendMessage(id, f.input("more"), chatstate.BusyQueue)
			return err
		})
		running := f.snap(t, id)
		f.pub.take()
		err = f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			_, err := tx.SwitchBranch(id, u1.ID)
			return err
		})
		require.ErrorIs(t, err, chatstate.ErrTransitionNotAllowed)
		require.Equal(t, running, f.snap(t, id))
		require.Empty(t, f.pub.take())

		// A message in no branch is not found.
		f.reply(t, id, "done")
		err = f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			_, err := tx.SwitchBranch(id, 1<<40)
			return err
		})
		require.ErrorIs(t, err, chatstate.ErrNotFound)
	})
}

// TestFork: a fork is a new waiting chat of the source's owner with a copy
// of the branch up to the message; the source does not change, and a tool
// call the copy leaves open gets a result.
func TestFork(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		id := f.create(t, "question")
		u1 := f.snap(t, id).active()[0]
		a1 := f.reply(t, id, "answer")
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.EditMessage(id, u1.ID, f.input("other question"))
			return err
		})
		f.reply(t, id, "other answer")
		source := f.snap(t, id)

		var fork chatstate.Result
		f.do(t, func(tx *chatstate.Tx) (err error) {
			fork, err = tx.Fork(chatstate.ForkParams{Source: id, MessageID: a1.ID, Title: "fork"})
			return err
		})
		require.Equal(t, chatstate.StateW, fork.State)
		require.Equal(t, f.user.ID, fork.Chat.OwnerID)
		require.Equal(t, "fork", fork.Chat.Title)
		require.NotEqual(t, id, fork.Chat.ID)
		require.Equal(t, []string{"question", "answer"}, f.activeTexts(t, fork.Chat.ID), "the branch through a1, not the active one")
		require.Equal(t, source, f.snap(t, id), "the source does not change")

		// Up to a user message: still waiting, no turn starts.
		f.do(t, func(tx *chatstate.Tx) (err error) {
			fork, err = tx.Fork(chatstate.ForkParams{Source: id, MessageID: u1.ID})
			return err
		})
		require.Equal(t, chatstate.StateW, fork.State)
		require.Equal(t, source.Chat.Title, fork.Chat.Title)
		require.Equal(t, []string{"question"}, f.activeTexts(t, fork.Chat.ID))

		// Up to a tool call without a result: the copy answers it.
		id2 := f.create(t, "use a tool")
		var call store.Message
		f.do(t, func(tx *chatstate.Tx) error {
			res, err := tx.CommitStep(id2, toolCallStep("call_1", "lookup"))
			call = res.Messages[0]
			return err
		})
		f.do(t, func(tx *chatstate.Tx) (err error) {
			fork, err = tx.Fork(chatstate.ForkParams{Source: id2, MessageID: call.ID})
			return err
		})
		var open []chatstate.ToolCall
		require.NoError(t, f.s.ReadTx(f.ctx, func(tx store.Reader) (err error) {
			open, err = chatstate.OutstandingToolCalls(f.ctx, tx, fork.Chat.ID)
			return err
		}))
		require.Empty(t, open)
		require.Len(t, f.snap(t, fork.Chat.ID).active(), 3)

		err := f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			_, err := tx.Fork(chatstate.ForkParams{Source: id, MessageID: 1 << 40})
			return err
		})
		require.ErrorIs(t, err, chatstate.ErrNotFound)
	})
}
