package stream_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// awaitApproval stops the world's chat on a person's approval of calls, as
// chatstate.EnterApproval writes it (the round of the current history),
// with the first `answered` of them already answered.
func (w *world) awaitApproval(t *testing.T, answered int, calls ...sdk.ToolApproval) {
	t.Helper()
	for i := range calls {
		calls[i].State = sdk.ApprovalPending
		if i < answered {
			calls[i].State = sdk.ApprovalApproved
		}
	}
	raw, err := json.Marshal(map[string]any{"history_version": w.chat.HistoryVersion, "calls": calls})
	require.NoError(t, err)
	w.status(store.ChatStatusRequiresAction)
	w.chat.ToolApprovals = raw
	w.pending = testCalls // the calls are outstanding in history too
}

// TestLoopApprovalRequired: calls awaiting approval are sent as
// approval_required, with what a UI needs for its card, and never as
// action_required; a partial answer sends the rest again.
func TestLoopApprovalRequired(t *testing.T) {
	t.Parallel()
	w, h, _ := streaming(t)
	ask := func() []sdk.ToolApproval {
		var out []sdk.ToolApproval
		for _, c := range testCalls {
			out = append(out, sdk.ToolApproval{
				ToolCallID: c.ID, ToolName: "shop__" + c.Name, Server: "shop", Args: json.RawMessage(`{"sku":"a"}`), Effect: store.EffectEffectful,
			})
		}
		return out
	}
	events := h.sync(w.tx(func() {
		w.message(store.RoleAssistant, "calling")
		w.awaitApproval(t, 0, ask()...)
	}))
	require.Equal(t, []string{tMessage, tStatus, sdk.StreamApprovalRequired, tPreview}, kinds(events))
	got := events[2].ApprovalRequired
	require.NotNil(t, got)
	require.Len(t, got.ToolCalls, len(testCalls))
	first := got.ToolCalls[0]
	require.Equal(t, testCalls[0].ID, first.ToolCallID)
	require.Equal(t, "shop", first.Server)
	require.Equal(t, store.EffectEffectful, first.Effect)
	require.JSONEq(t, `{"sku":"a"}`, string(first.Args))
	frame, err := json.Marshal(events[2])
	require.NoError(t, err)
	require.Contains(t, string(frame), `"approval_required":{"tool_calls":[{"tool_call_id":`)

	require.Empty(t, h.sync(w.tx(func() { w.awaitApproval(t, 0, ask()...) })), "the same pending set is sent once")
	events = h.sync(w.tx(func() { w.awaitApproval(t, 1, ask()...) }))
	require.Equal(t, []string{sdk.StreamApprovalRequired}, kinds(events), "a partial answer")
	require.Len(t, events[0].ApprovalRequired.ToolCalls, len(testCalls)-1)
	require.Equal(t, []string{tStatus}, kinds(h.sync(w.tx(func() { w.status(store.ChatStatusRunning) }))),
		fmt.Sprintf("the last answer: running, no event for %d approved calls", len(testCalls)))
}
