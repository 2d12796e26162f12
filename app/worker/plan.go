package worker

import (
	"context"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
)

// callKind is what the worker does with one outstanding tool call. It is
// decided once per step (planCalls); the gate, the hooks and the runner
// act on it and decide nothing about the call themselves.
type callKind int

const (
	// callRun: a server-side tool the journal has not seen (and a person
	// approved, or it needs no approval): pre_tool_use, then it runs under
	// the journal.
	callRun callKind = iota + 1
	// callReuse: the call has a journal entry, so the journal judges it even
	// when its tool is gone now: a completed call reuses its stored result, a
	// started pure or idempotent one runs again, a started effectful one
	// stops the chat for review. It was approved (or needed no approval) and
	// dispatched to pre_tool_use when it started, so neither happens again.
	callReuse
	// callApproval: a server-side call that needs a person's approval and
	// has no answer in the chat's approval round yet.
	callApproval
	// callDenied: a person denied the call; it never runs and no hook is
	// asked about it.
	callDenied
	// callDynamic: one of the chat's dynamic tools (a dynamic tool wins a
	// name clash with a server-side one): the client answers it.
	callDynamic
	// callUnknown: no tool of this chat has the name; the model gets an
	// error result and can recover.
	callUnknown
)

func (k callKind) String() string {
	switch k {
	case callRun:
		return "run"
	case callReuse:
		return "reuse"
	case callApproval:
		return "approval"
	case callDenied:
		return "denied"
	case callDynamic:
		return "dynamic"
	case callUnknown:
		return "unknown"
	}
	return "invalid"
}

// plannedCall is one outstanding call with what the plan decided for it.
type plannedCall struct {
	chatstate.ToolCall
	kind callKind
	// tool is the server-side tool that runs the call (nil: none has the
	// name in this step, which a callReuse call may be).
	tool tools.Tool
	// effect is the class a new journal entry records: the tool's, else
	// effectful (a callReuse call whose tool is gone has an entry whose
	// recorded class decides; effectful is the safe default regardless).
	effect string
	// reason is why a person denied a callDenied call.
	reason string
}

// answered: the worker answers the call itself in this step (it runs,
// reuses a result, is denied or waits for approval), not the client and
// not with an unknown-tool error.
func (c plannedCall) answered() bool {
	switch c.kind {
	case callRun, callReuse, callApproval, callDenied:
		return true
	}
	return false
}

// toolPlan is what one step does with its outstanding calls, in the
// model's order.
type toolPlan []plannedCall

// of lists the calls of the given kinds, in order.
func (p toolPlan) of(kinds ...callKind) toolPlan {
	var out toolPlan
	for _, c := range p {
		for _, k := range kinds {
			if c.kind == k {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// answered lists the calls the worker answers itself (plannedCall.answered).
func (p toolPlan) answered() toolPlan {
	var out toolPlan
	for _, c := range p {
		if c.answered() {
			out = append(out, c)
		}
	}
	return out
}

// approvals are the requests for the calls that wait for a person.
func (p toolPlan) approvals() []sdk.ToolApproval {
	var out []sdk.ToolApproval
	for _, c := range p.of(callApproval) {
		var server string
		if s, ok := c.tool.(interface{ ServerName() string }); ok {
			server = s.ServerName()
		}
		out = append(out, sdk.ToolApproval{ToolCallID: c.ID, ToolName: c.Name, Server: server, Args: c.Args, Effect: c.effect})
	}
	return out
}

// callFacts are the inputs of a plan: what the step knows about its calls.
type callFacts struct {
	// journaled: the calls with a tool-journal entry, by id.
	journaled map[string]bool
	// dynamic: the names of the chat's dynamic tools.
	dynamic map[string]bool
	// server: the step's server-side tools (nil when none were needed,
	// needsServerTools).
	server toolset
	// approvals reads the chat's approval round; it is read only when the
	// worker answers some call itself.
	approvals func() ([]sdk.ToolApproval, error)
	// policy is a server-side tool's approval policy; chatPolicy the
	// chat's own, which can only tighten it.
	policy     func(tools.Tool) string
	chatPolicy string
}

// needsServerTools: some call may be a server-side one (it is not a
// dynamic tool's, or the journal has it), so the step must list its
// server-side tools before planning.
func needsServerTools(calls []chatstate.ToolCall, journaled, dynamic map[string]bool) bool {
	for _, c := range calls {
		if !dynamic[c.Name] || journaled[c.ID] {
			return true
		}
	}
	return false
}

// planCalls classifies each call once. A call with a journal entry is the
// journal's (callReuse) whatever its tool is now, so it is never answered
// "unknown tool" while it may have run; otherwise a dynamic tool wins its
// name, then a server-side tool (gated by approval), else it is unknown.
func planCalls(calls []chatstate.ToolCall, f callFacts) (toolPlan, error) {
	plan := make(toolPlan, 0, len(calls))
	for _, c := range calls {
		tool, inServer := f.server[c.Name]
		p := plannedCall{ToolCall: c, tool: tool, effect: store.EffectEffectful}
		if inServer {
			p.effect = effectOf(tool)
		}
		switch {
		case f.journaled[c.ID]:
			p.kind = callReuse
		case f.dynamic[c.Name]:
			p.kind, p.tool = callDynamic, nil
		case inServer:
			p.kind = callRun
		default:
			p.kind = callUnknown
		}
		plan = append(plan, p)
	}
	// The approval round is read when the worker answers any call itself
	// (as the gate always has), though only callRun calls consult it.
	if len(plan.answered()) == 0 {
		return plan, nil
	}
	round, err := f.approvals()
	if err != nil {
		return nil, err
	}
	answers := map[string]sdk.ToolApproval{}
	for _, a := range round {
		answers[a.ToolCallID] = a
	}
	for i, p := range plan {
		if p.kind != callRun || !chatstate.ApprovalRequired(p.effect, f.policy(p.tool), f.chatPolicy) {
			continue
		}
		switch a, ok := answers[p.ID]; {
		case ok && a.State == sdk.ApprovalApproved:
		case ok && a.State == sdk.ApprovalDenied:
			plan[i].kind, plan[i].reason = callDenied, a.Reason
		default:
			plan[i].kind = callApproval
		}
	}
	return plan, nil
}

// planToolCalls plans the step's outstanding calls, listing the
// server-side tools first when a call may be one.
func (r *runner) planToolCalls(ctx context.Context, v view) (toolPlan, error) {
	dynamic := v.dynamicNames()
	var server toolset
	if needsServerTools(v.calls, v.journaled, dynamic) {
		server = r.serverTools(ctx, v)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return planCalls(v.calls, callFacts{
		journaled: v.journaled, dynamic: dynamic, server: server,
		approvals: func() ([]sdk.ToolApproval, error) { return chatstate.Approvals(v.chat) },
		policy:    r.approvalPolicy, chatPolicy: v.chat.ToolApproval,
	})
}
