package chatstate_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/chatstate/chatstatetest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// An interruption answers, in the transaction that ends the turn, every
// call the turn leaves open, by what its journal says: a pure call that
// was running is cancelled and its entry completed with that result (a
// later turn reuses it, never reruns it); an effectful one that was
// running may have had its effect, so it is under review and unresolved,
// with its request; a call of the partial step never started and is
// cancelled. A /compact afterwards finds nothing outstanding.
func TestFinishInterruptionAnswersRunningCalls(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		d := f.durableChat(t)
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.CommitStep(d.chat, assistantStep("reply 1"))
			return err
		})
		pure := f.toolCall(t, d, store.EffectPure)
		effectful := f.toolCall(t, d, store.EffectEffectful)
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.Interrupt(d.chat)
			return err
		})
		partial := toolCallStep("partial-call", "never_started").Messages
		f.do(t, func(tx *chatstate.Tx) error {
			res, err := tx.FinishInterruption(d.chat, partial)
			if err == nil {
				require.Equal(t, chatstate.StateW, res.State)
			}
			return err
		})

		after := f.snap(t, d.chat)
		require.Equal(t, chatstate.StateW, after.State)
		require.NoError(t, chatstatetest.CheckToolResults(after.Messages, true))
		last := after.Messages[len(after.Messages)-1]
		require.Equal(t, store.RoleTool, last.Role, "one tool message answers them all")
		got := map[string]sdk.ChatMessagePart{}
		for _, p := range partsOf(t, last) {
			require.True(t, p.IsError, "a synthetic answer is an error result")
			got[p.ToolCallID] = p
		}
		require.Len(t, got, 3)
		for _, id := range []string{pure, "partial-call"} {
			var c chatstate.CancelledResult
			require.NoError(t, json.Unmarshal(got[id].Result, &c))
			require.True(t, c.Cancelled, "%s is cancelled", id)
			require.Contains(t, c.Error, "interrupted")
		}
		var u chatstate.UnderReviewResult
		require.NoError(t, json.Unmarshal(got[effectful].Result, &u))
		require.True(t, u.UnderReview, "a running effectful call may have run: under review, not cancelled")
		require.Equal(t, "unknown", u.Outcome)

		require.NoError(t, f.s.ReadTx(f.ctx, func(tx store.Reader) error {
			e, err := tx.JournalGet(f.ctx, d.chat, pure)
			require.NoError(t, err)
			require.Equal(t, store.JournalCompleted, e.State, "the pure call's entry holds its answer")
			require.True(t, e.IsError)
			require.JSONEq(t, string(got[pure].Result), string(e.Result))
			e, err = tx.JournalGet(f.ctx, d.chat, effectful)
			require.NoError(t, err)
			require.Equal(t, store.JournalUnresolved, e.State, "the effectful call waits for an operator")
			_, err = tx.JournalGet(f.ctx, d.chat, "partial-call")
			require.ErrorIs(t, err, store.ErrNotFound, "a call that never started has no entry")
			inv, err := tx.InvocationGet(f.ctx, d.request)
			require.NoError(t, err)
			require.Equal(t, store.InvocationUnresolved, inv.State, "the turn's request is under review")
			return nil
		}))

		// A /compact now runs no tool: nothing is outstanding, and the
		// journal would reuse the pure call's answer rather than rerun it.
		f.do(t, func(tx *chatstate.Tx) error {
			if _, err := tx.RequestCompaction(d.chat); err != nil {
				return err
			}
			calls, err := tx.OutstandingToolCalls(d.chat)
			require.NoError(t, err)
			require.Empty(t, calls, "a compaction after an interrupt finds no outstanding call")
			decision, _, err := tx.JournalStart(d.chat, chatstate.JournalCall{ToolCallID: pure, ToolName: "hook", Effect: store.EffectPure})
			require.NoError(t, err)
			require.Equal(t, chatstate.JournalReuse, decision)
			return nil
		})
	})
}
