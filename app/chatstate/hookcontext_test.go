package chatstate_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// A prompt's lifecycle hook context enters history just before the prompt,
// as authorless user messages (model-only or for everyone), on create,
// send and edit, and when a queued prompt is promoted; it is never a user
// turn of the result (Promoted, Message).
func TestHookContextEntersHistoryBeforeThePrompt(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		withContext := func(s string) chatstate.UserInput {
			in := f.input(s)
			in.Context = []chatstate.HookContext{
				{Text: "model note " + s, Visibility: store.VisibilityModel},
				{Text: "user note " + s, Visibility: store.VisibilityBoth},
			}
			return in
		}
		// checkTail: the last three active messages are the two notes and the prompt.
		checkTail := func(id uuid.UUID, s string) store.Message {
			t.Helper()
			active := f.snap(t, id).active()
			require.GreaterOrEqual(t, len(active), 3)
			model, user, prompt := active[len(active)-3], active[len(active)-2], active[len(active)-1]
			require.Equal(t, "model note "+s, partsOf(t, model)[0].Text)
			require.Equal(t, store.VisibilityModel, model.Visibility)
			require.Equal(t, "user note "+s, partsOf(t, user)[0].Text)
			require.Equal(t, store.VisibilityBoth, user.Visibility)
			for _, m := range []store.Message{model, user} {
				require.Equal(t, store.RoleUser, m.Role)
				require.False(t, m.CreatedBy.Valid, "hook context has no author")
			}
			require.Equal(t, s, partsOf(t, prompt)[0].Text)
			require.True(t, prompt.CreatedBy.Valid)
			return prompt
		}

		var res chatstate.Result
		f.do(t, func(tx *chatstate.Tx) error {
			var err error
			res, err = tx.Create(chatstate.CreateParams{OwnerID: f.user.ID, Title: "t", Input: withContext("first")})
			return err
		})
		id := res.Chat.ID
		prompt := checkTail(id, "first")
		require.Equal(t, prompt.ID, res.Message.ID)

		// A busy chat queues the prompt with its context; promotion brings both.
		var sent chatstate.Result
		f.do(t, func(tx *chatstate.Tx) error {
			var err error
			sent, err = tx.SendMessage(id, withContext("second"), chatstate.BusyQueue)
			return err
		})
		require.NotNil(t, sent.Queued)
		require.NotNil(t, sent.Queued.HookContext)
		require.Equal(t, "first", partsOf(t, f.snap(t, id).active()[len(f.snap(t, id).active())-1])[0].Text, "queued context waits with its prompt")
		f.acquire(t, id)
		f.do(t, func(tx *chatstate.Tx) error {
			var err error
			res, err = tx.PromoteQueuedMessage(id, sent.Queued.ID)
			return err
		})
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.FinishInterruption(id, nil)
			return err
		})
		prompt = checkTail(id, "second")
		require.NotNil(t, prompt.QueuedMessageID)

		// An edit replaces the turn: context, then the new prompt.
		f.do(t, func(tx *chatstate.Tx) error {
			var err error
			res, err = tx.EditMessage(id, prompt.ID, withContext("edited"))
			return err
		})
		prompt = checkTail(id, "edited")
		require.Equal(t, prompt.ID, res.Message.ID)
		require.Len(t, res.Promoted, 1, "hook context is not a user turn")
		require.Equal(t, prompt.ID, res.Promoted[0].ID)

		// An empty chat keeps its session context for the first prompt.
		f.do(t, func(tx *chatstate.Tx) error {
			var err error
			res, err = tx.Create(chatstate.CreateParams{OwnerID: f.user.ID, Title: "t", Input: chatstate.UserInput{
				Context: []chatstate.HookContext{{Text: "session", Visibility: store.VisibilityModel}},
			}})
			return err
		})
		require.Equal(t, chatstate.StateW, res.State)
		active := f.snap(t, res.Chat.ID).active()
		require.Len(t, active, 1)
		require.Equal(t, store.VisibilityModel, active[0].Visibility)

		// Bad context is refused.
		err := f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			in := f.input("x")
			in.Context = []chatstate.HookContext{{Text: "x", Visibility: "sideways"}}
			_, err := tx.SendMessage(id, in, chatstate.BusyQueue)
			return err
		})
		require.Error(t, err)
	})
}

// TestHookContextInsideATurnKeepsTheRequest: hook context committed inside
// a turn (post_tool_use, stop: authorless user messages after the prompt)
// does not hide the turn's durable request: finishing the turn still
// records its outcome, with the replies people see.
func TestHookContextInsideATurnKeepsTheRequest(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		d := f.durableChat(t)
		note, err := chatstate.EncodeParts(text("policy note"))
		require.NoError(t, err)
		notice, err := chatstate.EncodeParts(text("a notice"))
		require.NoError(t, err)
		f.do(t, func(tx *chatstate.Tx) error {
			if _, err := tx.CommitStep(d.chat, assistantStep("first")); err != nil {
				return err
			}
			_, err := tx.CommitStep(d.chat, chatstate.Step{Messages: []store.MessageInsertParams{
				{Role: store.RoleUser, Visibility: store.VisibilityModel, Content: note},
				{Role: store.RoleUser, Visibility: store.VisibilityBoth, Content: notice},
			}})
			if err != nil {
				return err
			}
			_, err = tx.CommitStep(d.chat, assistantStep("second"))
			return err
		})
		require.NoError(t, f.finishTurn(d))
		inv, ok := f.invocation(t, d.request)
		require.True(t, ok)
		require.Equal(t, store.InvocationCompleted, inv.State, "the turn's request has its outcome")
		var o chatstate.Outcome
		require.NoError(t, json.Unmarshal(inv.Outcome, &o))
		require.Equal(t, chatstate.OutcomeCompleted, o.Status)
		var want []int64
		for _, m := range f.snap(t, d.chat).active() {
			if m.Role != store.RoleSystem && m.Visibility != store.VisibilityModel {
				want = append(want, m.ID)
			}
		}
		require.Equal(t, want, o.MessageIDs, "the prompt and everything people see after it")
	})
}
