package worker

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
)

// planMCPTool is an MCP-like tool: a server name and its own approval policy.
type planMCPTool struct {
	tools.Tool
	server, approval string
}

func (t planMCPTool) ServerName() string { return t.server }
func (t planMCPTool) Approval() string   { return t.approval }

func planTool(name, effect string) tools.Tool {
	return &tools.Func{ToolName: name, EffectClass: effect}
}

// TestPlanCalls pins the one classification of outstanding calls: every
// kind, the precedence between them (journal, then dynamic, then server,
// then unknown; approval only for callRun), and the effect and approval
// each call carries to the gate, the hooks and the runner.
func TestPlanCalls(t *testing.T) {
	server := toolset{}
	for _, tool := range []tools.Tool{
		planTool("clock", store.EffectPure),
		planTool("save", store.EffectIdempotent),
		planTool("webhook", store.EffectEffectful),
		planTool("shadowed", store.EffectPure),
		planMCPTool{planTool("fs__write", store.EffectEffectful), "fs", store.ApprovalEffectful},
		planMCPTool{planTool("fs__read", store.EffectPure), "fs", store.ApprovalEffectful},
		planMCPTool{planTool("fs__odd", "sometimes"), "fs", store.ApprovalNever},
		planMCPTool{planTool("gh__any", store.EffectPure), "gh", store.ApprovalAlways},
	} {
		server[tool.Name()] = tool
	}
	dynamic := map[string]bool{"ask_user": true, "shadowed": true}
	round := []sdk.ToolApproval{
		{ToolCallID: "w-approved", State: sdk.ApprovalApproved},
		{ToolCallID: "w-denied", State: sdk.ApprovalDenied, Reason: "not today"},
		{ToolCallID: "w-pending", State: sdk.ApprovalPending},
	}
	policy := func(tl tools.Tool) string {
		if a, ok := tl.(interface{ Approval() string }); ok {
			return a.Approval()
		}
		return store.ApprovalNever // the deployment's, for built-in tools
	}
	type want struct {
		kind   callKind
		effect string
		reason string
		tool   bool
	}
	cases := []struct {
		name, call, tool string
		journaled        bool
		chatPolicy       string
		want             want
	}{
		{"a built-in pure tool runs", "c1", "clock", false, "", want{callRun, store.EffectPure, "", true}},
		{"a built-in effectful tool runs under policy never", "c2", "webhook", false, "", want{callRun, store.EffectEffectful, "", true}},
		{"the chat's policy tightens a built-in tool's", "w-new", "webhook", false, store.ApprovalEffectful, want{callApproval, store.EffectEffectful, "", true}},
		{"the chat's policy spares a pure tool under effectful", "c3", "clock", false, store.ApprovalEffectful, want{callRun, store.EffectPure, "", true}},
		{"always asks even for an idempotent tool", "w-x", "save", false, store.ApprovalAlways, want{callApproval, store.EffectIdempotent, "", true}},
		{"an MCP effectful tool without an answer waits", "w-new2", "fs__write", false, "", want{callApproval, store.EffectEffectful, "", true}},
		{"a pending answer still waits", "w-pending", "fs__write", false, "", want{callApproval, store.EffectEffectful, "", true}},
		{"an approved call runs", "w-approved", "fs__write", false, "", want{callRun, store.EffectEffectful, "", true}},
		{"a denied call is denied with its reason", "w-denied", "fs__write", false, "", want{callDenied, store.EffectEffectful, "not today", true}},
		{"an MCP pure tool under effectful runs", "c4", "fs__read", false, "", want{callRun, store.EffectPure, "", true}},
		{"an MCP policy always asks for a pure tool", "c5", "gh__any", false, "", want{callApproval, store.EffectPure, "", true}},
		{"an unknown effect class is effectful", "c6", "fs__odd", false, "", want{callRun, store.EffectEffectful, "", true}},
		{"an unknown effect class needs approval under effectful", "c6b", "fs__odd", false, store.ApprovalEffectful, want{callApproval, store.EffectEffectful, "", true}},
		{"a journaled call is the journal's", "c7", "clock", true, "", want{callReuse, store.EffectPure, "", true}},
		{"a journaled call is not asked about again", "w-new3", "fs__write", true, store.ApprovalAlways, want{callReuse, store.EffectEffectful, "", true}},
		{"a journaled call whose tool is gone is the journal's, effectful", "c8", "gone__tool", true, "", want{callReuse, store.EffectEffectful, "", false}},
		{"a journaled call beats a dynamic tool of its name", "c9", "ask_user", true, "", want{callReuse, store.EffectEffectful, "", false}},
		{"a dynamic tool", "c10", "ask_user", false, "", want{callDynamic, store.EffectEffectful, "", false}},
		{"a dynamic tool wins a server-side tool's name", "c11", "shadowed", false, store.ApprovalAlways, want{callDynamic, store.EffectPure, "", false}},
		{"no tool of the name is unknown", "c12", "nope", false, store.ApprovalAlways, want{callUnknown, store.EffectEffectful, "", false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			call := chatstate.ToolCall{ID: tc.call, Name: tc.tool, Args: json.RawMessage(`{"x":1}`)}
			plan, err := planCalls([]chatstate.ToolCall{call}, callFacts{
				journaled: map[string]bool{tc.call: tc.journaled}, dynamic: dynamic, server: server,
				approvals: func() ([]sdk.ToolApproval, error) { return round, nil },
				policy:    policy, chatPolicy: tc.chatPolicy,
			})
			require.NoError(t, err)
			require.Len(t, plan, 1)
			got := plan[0]
			require.Equal(t, tc.want.kind, got.kind, "kind (got %s)", got.kind)
			require.Equal(t, tc.want.effect, got.effect, "effect")
			require.Equal(t, tc.want.reason, got.reason, "reason")
			require.Equal(t, tc.want.tool, got.tool != nil, "tool")
			require.Equal(t, call, got.ToolCall, "the call itself")
		})
	}
}

// TestToolPlan checks the plan's views: order kept, what the worker answers
// itself, and the approval requests the gate sends.
func TestToolPlan(t *testing.T) {
	fsWrite := planMCPTool{planTool("fs__write", store.EffectEffectful), "fs", store.ApprovalEffectful}
	clock := planTool("clock", store.EffectPure)
	server := toolset{"fs__write": fsWrite, "clock": clock}
	calls := []chatstate.ToolCall{
		{ID: "a", Name: "ask_user"},
		{ID: "b", Name: "fs__write", Args: json.RawMessage(`{"p":"x"}`)},
		{ID: "c", Name: "nope"},
		{ID: "d", Name: "clock"},
		{ID: "e", Name: "gone"},
		{ID: "f", Name: "fs__write"},
	}
	facts := callFacts{
		journaled: map[string]bool{"e": true}, dynamic: map[string]bool{"ask_user": true}, server: server,
		approvals: func() ([]sdk.ToolApproval, error) {
			return []sdk.ToolApproval{{ToolCallID: "f", State: sdk.ApprovalDenied}}, nil
		},
		policy: func(tl tools.Tool) string {
			if a, ok := tl.(interface{ Approval() string }); ok {
				return a.Approval()
			}
			return store.ApprovalNever
		},
	}
	plan, err := planCalls(calls, facts)
	require.NoError(t, err)
	ids := func(p toolPlan) (out []string) {
		for _, c := range p {
			out = append(out, c.ID+":"+c.kind.String())
		}
		return out
	}
	require.Equal(t, []string{"a:dynamic", "b:approval", "c:unknown", "d:run", "e:reuse", "f:denied"}, ids(plan))
	require.Equal(t, []string{"b:approval", "d:run", "e:reuse", "f:denied"}, ids(plan.answered()))
	require.Equal(t, []string{"d:run", "e:reuse"}, ids(plan.of(callRun, callReuse)))
	require.Equal(t, []sdk.ToolApproval{{ToolCallID: "b", ToolName: "fs__write", Server: "fs", Args: json.RawMessage(`{"p":"x"}`), Effect: store.EffectEffectful}},
		plan.approvals())

	t.Run("the approval round is read only when the worker answers a call", func(t *testing.T) {
		broken := facts
		broken.approvals = func() ([]sdk.ToolApproval, error) { return nil, errors.New("corrupt round") }
		plan, err := planCalls([]chatstate.ToolCall{{ID: "a", Name: "ask_user"}, {ID: "c", Name: "nope"}}, broken)
		require.NoError(t, err)
		require.Equal(t, []string{"a:dynamic", "c:unknown"}, ids(plan))
		_, err = planCalls([]chatstate.ToolCall{{ID: "d", Name: "clock"}}, broken)
		require.ErrorContains(t, err, "corrupt round")
	})

	t.Run("server tools are listed only when a call may be one", func(t *testing.T) {
		dyn := map[string]bool{"ask_user": true}
		require.False(t, needsServerTools([]chatstate.ToolCall{{ID: "a", Name: "ask_user"}}, nil, dyn))
		require.True(t, needsServerTools([]chatstate.ToolCall{{ID: "a", Name: "ask_user"}}, map[string]bool{"a": true}, dyn))
		require.True(t, needsServerTools([]chatstate.ToolCall{{ID: "a", Name: "ask_user"}, {ID: "b", Name: "x"}}, nil, dyn))
	})
}
