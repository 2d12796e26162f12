package worker

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestHookPreToolUseAfterACrash: a runner that stopped after committing a
// step's calls leaves them to the next owner, which sends pre_tool_use
// again, under the same event id, for the call the journal has not
// started, and none for the call the journal had started (it was
// dispatched before it started; the journal judges it).
func TestHookPreToolUseAfterACrash(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g, c, echo := hookRig(t, newStore)
		id := g.create("echo twice")
		prompt := g.messages(id)[0]
		require.Equal(t, store.RoleUser, prompt.Role)

		// The runner before the crash: it committed the step and started
		// call_b through the journal, then died (its lease is given up).
		g.acquire(id)
		content, err := chatstate.EncodeParts([]sdk.ChatMessagePart{
			{Type: sdk.PartToolCall, ToolCallID: "call_a", ToolName: "echo", Args: json.RawMessage(`{"text":"a"}`)},
			{Type: sdk.PartToolCall, ToolCallID: "call_b", ToolName: "echo", Args: json.RawMessage(`{"text":"b"}`)},
		})
		require.NoError(t, err)
		g.do(func(t *chatstate.Tx) error {
			if _, err := t.CommitStep(id, chatstate.Step{Messages: []store.MessageInsertParams{{Role: store.RoleAssistant, Content: content}}}); err != nil {
				return err
			}
			_, _, err := t.JournalStart(id, chatstate.JournalCall{
				ToolCallID: "call_b", ToolName: "echo", Effect: store.EffectIdempotent, Args: json.RawMessage(`{"text":"b"}`),
			})
			return err
		})
		g.do(func(t *chatstate.Tx) error {
			_, err := t.Abandon(id)
			return err
		})

		// The next owner.
		require.Equal(t, 1, g.w.AcquirePass(g.ctx))
		g.provider.next(t)
		require.Equal(t, int32(2), echo.runs.Load(), "both calls ran once after the crash")
		var pre []hooks.Request
		for _, r := range c.Events() {
			if r.Event == hooks.PreToolUse {
				pre = append(pre, r)
			}
		}
		require.Len(t, pre, 1, "pre_tool_use only for the call the journal had not started")
		require.Equal(t, "call_a", pre[0].ToolCallID)
		require.Equal(t, hooks.EventID(id, prompt.ID, hooks.PreToolUse, "call_a"), pre[0].ID,
			"the redelivery has the id the first delivery had")
		g.provider.answer("done")
		eventually(t, func() bool { return g.peek(id).Status == store.ChatStatusWaiting }, "the turn finishes")
	})
}
