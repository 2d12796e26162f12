package chatstate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/chatstate/chatstatetest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

func TestApprovalPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		effect   string
		policies []string
		want     bool
	}{
		{store.EffectEffectful, nil, false},
		{store.EffectEffectful, []string{"never", ""}, false},
		{store.EffectEffectful, []string{"effectful"}, true},
		{store.EffectIdempotent, []string{"effectful"}, false},
		{store.EffectPure, []string{"effectful", "never"}, false},
		{"", []string{"effectful"}, true}, // an unknown class counts as effectful
		{store.EffectPure, []string{"never", "always"}, true},
		{store.EffectPure, []string{"always", "never"}, true}, // a looser policy never loosens a stricter one
		{store.EffectPure, []string{"sometimes"}, true},       // an unknown policy is always
	} {
		require.Equal(t, tc.want, chatstate.ApprovalRequired(tc.effect, tc.policies...), "%s under %v", tc.effect, tc.policies)
	}
	require.Equal(t, "effectful", chatstate.StricterApproval("never", "effectful", ""))
}

func TestApprovalAnswers(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		answer := func(id uuid.UUID, answers ...sdk.ToolApprovalAnswer) error {
			return f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
				_, err := tx.AnswerApproval(id, answers)
				return err
			})
		}
		c := f.build(t, chatstatetest.Spec{State: chatstate.StateA0, Approval: 2})
		id := c.ID
		calls, err := chatstate.PendingApprovals(c.Row)
		require.NoError(t, err)
		require.Len(t, calls, 2)
		first, second := calls[0].ToolCallID, calls[1].ToolCallID
		require.JSONEq(t, `{"q":1}`, string(calls[0].Args))

		// Client results are refused while a call awaits approval.
		err = f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			_, err := tx.CompleteRequiresAction(c.ID, []sdk.ToolResult{
				{ToolCallID: first, Output: json.RawMessage(`1`)}, {ToolCallID: second, Output: json.RawMessage(`2`)},
			}, uuid.NullUUID{UUID: f.user.ID, Valid: true})
			return err
		})
		require.ErrorIs(t, err, chatstate.ErrToolCallAwaitingApproval)

		// Bad answers change nothing.
		before := f.snap(t, c.ID)
		require.ErrorIs(t, answer(id), chatstate.ErrValidation, "no answers")
		require.ErrorIs(t, answer(id, sdk.ToolApprovalAnswer{ToolCallID: "nope", Approved: true}), chatstate.ErrNotAwaitingApproval)
		require.ErrorIs(t, answer(id, sdk.ToolApprovalAnswer{ToolCallID: first, Approved: true}, sdk.ToolApprovalAnswer{ToolCallID: first}), chatstate.ErrValidation, "a duplicate")
		require.ErrorIs(t, answer(id, sdk.ToolApprovalAnswer{ToolCallID: first, Reason: strings.Repeat("x", chatstate.MaxApprovalReason+1)}), chatstate.ErrValidation, "a long reason")
		require.Equal(t, before, f.snap(t, c.ID), "refused answers change nothing")

		// A partial answer waits for the rest; an answered call cannot be
		// answered again.
		require.NoError(t, answer(id, sdk.ToolApprovalAnswer{ToolCallID: first, Approved: true}))
		require.Equal(t, chatstate.StateA0, f.snap(t, c.ID).State)
		err = answer(id, sdk.ToolApprovalAnswer{ToolCallID: first})
		require.ErrorIs(t, err, chatstate.ErrNotAwaitingApproval)
		require.ErrorContains(t, err, "already approved")
		require.NoError(t, answer(id, sdk.ToolApprovalAnswer{ToolCallID: second, Reason: "not today"}))
		after := f.snap(t, c.ID)
		require.Equal(t, chatstate.StateR0, after.State, "the last answer resumes running")
		round, err := chatstate.Approvals(after.Chat)
		require.NoError(t, err)
		require.Equal(t, sdk.ApprovalApproved, round[0].State)
		require.Equal(t, sdk.ApprovalDenied, round[1].State)
		require.Equal(t, "not today", round[1].Reason)
		require.JSONEq(t, `{"error":"denied: not today"}`, string(chatstate.DeniedResult("not today")))
		require.JSONEq(t, `{"error":"denied"}`, string(chatstate.DeniedResult("")))

		// Any history change ends the round: its answers never apply to a
		// later call.
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.CommitStep(c.ID, assistantStep("results"))
			return err
		})
		round, err = chatstate.Approvals(f.snap(t, c.ID).Chat)
		require.NoError(t, err)
		require.Nil(t, round)

		// A dynamic call's requires_action has no approvals to answer.
		dyn := f.build(t, chatstatetest.Spec{State: chatstate.StateA0})
		require.ErrorIs(t, answer(dyn.ID, sdk.ToolApprovalAnswer{ToolCallID: dyn.Call, Approved: true}), chatstate.ErrNotAwaitingApproval)

		// An interrupt answers the calls (cancelled) and ends the round.
		intr := f.build(t, chatstatetest.Spec{State: chatstate.StateA0, Approval: 1})
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.Interrupt(intr.ID)
			return err
		})
		round, err = chatstate.Approvals(f.snap(t, intr.ID).Chat)
		require.NoError(t, err)
		require.Nil(t, round)

		// The chat's own policy is validated.
		err = f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			_, err := tx.Create(chatstate.CreateParams{OwnerID: f.user.ID, ToolApproval: "sometimes", Input: f.input("hi")})
			return err
		})
		require.ErrorIs(t, err, chatstate.ErrValidation)
		policy := "sometimes"
		err = f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			_, err := tx.UpdateMetadata(c.ID, chatstate.MetadataChange{ToolApproval: &policy})
			return err
		})
		require.ErrorIs(t, err, chatstate.ErrValidation)
		policy = store.ApprovalAlways
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.UpdateMetadata(c.ID, chatstate.MetadataChange{ToolApproval: &policy})
			return err
		})
		require.Equal(t, store.ApprovalAlways, f.snap(t, c.ID).Chat.ToolApproval)
	})
}
