package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
)

// turnRequest is the durable request of the current turn, if any: the
// request of the last user message.
func (v view) turnRequest() uuid.NullUUID {
	for i := len(v.active) - 1; i >= 0; i-- {
		if m := v.active[i]; m.Role == store.RoleUser {
			return m.RequestID
		}
	}
	return uuid.NullUUID{}
}

// runTools answers the calls the worker answers itself (toolPlan.answered,
// none waiting for approval) at most as often as their effect class allows
// (the tool-call journal, chatstate.JournalStart):
//
//  1. pre_tool_use is dispatched for each callRun call (preToolUse); a
//     callDenied call gets its denial as the result.
//  2. In one fenced transaction each remaining call is looked up
//     (startCalls): a completed call reuses its stored result; a new call is
//     recorded as started; a started pure or idempotent call (a crash or
//     takeover interrupted it) runs again; a started effectful call must not
//     run again, so the chat stops for review (requires_action without a
//     deadline) and its request becomes unresolved
//     (chatstate.MarkUnresolved).
//  3. The calls run, in parallel (execute).
//  4. One CommitStep inserts every result and marks the calls completed in
//     the same transaction (finishTools), so a result is never lost or
//     recorded twice.
//
// A callReuse call whose tool is gone (its MCP server is not connected
// yet, or no longer configured) is still looked up: a recorded result is
// reused and an effectful call in doubt stops the chat; a call that may run
// again gets an error result saying the tool is unavailable, and is not run.
func (r *runner) runTools(ctx context.Context, f fence, v view, calls toolPlan) error {
	// pre_tool_use may deny calls or replace their input; a failed hook
	// leaves its calls unrun, with error results, and stops the chat below.
	// A call a person denied never runs, and no hook is asked about it.
	asked, notRun, extra, hookErr := r.preToolUse(ctx, v, calls.of(callRun, callReuse))
	for _, c := range calls.of(callDenied) {
		notRun[c.ID] = sdk.ChatMessagePart{
			Type: sdk.PartToolResult, ToolCallID: c.ID, ToolName: c.Name, Result: chatstate.DeniedResult(c.reason), IsError: true,
		}
	}
	if hookErr != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	results, toRun, err := r.startCalls(ctx, f, v, asked, notRun)
	if err != nil || len(toRun) == 0 && len(results) < len(calls) {
		return err // stopped for review, or fenced out
	}
	r.execute(ctx, v, toRun, results)
	if ctx.Err() != nil {
		return ctx.Err() // interrupted: the journal keeps them "started"
	}
	return r.finishTools(ctx, f, v, calls, toRun, results, extra, hookErr)
}

// startCalls looks each call up in the journal in one fenced transaction
// (runTools, step 2). It returns the results known without running
// (notRun's and the reused ones) and the calls to run; when an effectful
// call may have run it marks the request unresolved and returns nothing to
// run, so the results stay short of the calls.
func (r *runner) startCalls(ctx context.Context, f fence, v view, calls toolPlan, notRun map[string]sdk.ChatMessagePart) (
	results map[string]sdk.ChatMessagePart, toRun toolPlan, err error,
) {
	request := v.turnRequest()
	err = r.commit(ctx, f, func(t *chatstate.Tx) error {
		results, toRun = maps.Clone(notRun), nil
		var unresolved []string
		for _, c := range calls {
			decision, e, err := t.JournalStart(r.chatID, chatstate.JournalCall{
				ToolCallID: c.ID, ToolName: c.Name, Effect: c.effect, Args: c.Args, RequestID: request,
			})
			if err != nil {
				return err
			}
			switch decision {
			case chatstate.JournalRun:
				toRun = append(toRun, c)
			case chatstate.JournalReuse:
				results[c.ID] = sdk.ChatMessagePart{Type: sdk.PartToolResult, ToolCallID: c.ID, ToolName: c.Name, Result: e.Result, IsError: e.IsError}
			default: // an effectful call that may have run
				unresolved = append(unresolved, c.ID)
			}
		}
		if len(unresolved) == 0 {
			return nil
		}
		toRun = nil
		r.stepLog(f.ev, request).Warn("effectful tool call may have run before a crash; stopping the chat for review",
			"tool_calls", len(unresolved))
		_, err := t.MarkUnresolved(r.chatID, request, unresolved)
		return err
	})
	return results, toRun, err
}

// execute runs the calls in parallel and adds their results (runTools,
// step 3). A call without a tool (a callReuse call whose tool is gone) gets
// an error result and is not run.
func (r *runner) execute(ctx context.Context, v view, calls toolPlan, results map[string]sdk.ChatMessagePart) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	model, effort := v.modelID(), v.effort()
	for _, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var (
				out    json.RawMessage
				runErr error
			)
			if c.tool != nil {
				callCtx := tools.WithCall(ctx, tools.Call{
					ChatID: r.chatID, OwnerID: v.chat.OwnerID, ToolCallID: c.ID, ModelConfigID: model, ReasoningEffort: effort,
				})
				out, runErr = r.runTool(callCtx, c.tool, c.ID, c.Args)
			} else {
				runErr = fmt.Errorf("tool %q is unavailable: its MCP server is not connected, no longer configured, or not open to this chat's owner; the call was not run", c.Name)
			}
			part := sdk.ChatMessagePart{Type: sdk.PartToolResult, ToolCallID: c.ID, ToolName: c.Name, Result: out}
			if runErr != nil {
				part.Result, _ = json.Marshal(map[string]string{"error": runErr.Error()})
				part.IsError = true
			}
			if len(part.Result) == 0 || !json.Valid(part.Result) {
				part.Result, _ = json.Marshal(string(part.Result))
			}
			mu.Lock()
			results[c.ID] = part
			mu.Unlock()
		}()
	}
	wg.Wait()
}

// finishTools dispatches post_tool_use for the calls that ran and commits
// every call's result in the model's order, completing the journal entries
// of the calls that ran (runTools, step 4). A failed hook keeps the results
// (the calls that ran did) and stops the chat in the same transaction.
func (r *runner) finishTools(ctx context.Context, f fence, v view, calls, ran toolPlan, results map[string]sdk.ChatMessagePart,
	extra []store.MessageInsertParams, hookErr error,
) error {
	var after []store.MessageInsertParams
	if hookErr == nil {
		after, hookErr = r.postToolUse(ctx, v, ran, results)
	}
	if hookErr != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	parts := make([]sdk.ChatMessagePart, 0, len(calls))
	for _, c := range calls {
		parts = append(parts, results[c.ID])
	}
	content, err := chatstate.EncodeParts(parts)
	if err != nil {
		return err
	}
	messages := append([]store.MessageInsertParams{{Role: store.RoleTool, Content: content}}, append(extra, after...)...)
	return r.commit(ctx, f, func(t *chatstate.Tx) error {
		for _, c := range ran {
			p := results[c.ID]
			if err := t.JournalComplete(r.chatID, c.ID, p.Result, p.IsError); err != nil {
				return err
			}
		}
		if _, err := t.CommitStep(r.chatID, chatstate.Step{Messages: messages}); err != nil {
			return err
		}
		if hookErr != nil {
			r.stepLog(f.ev, v.turnRequest()).Warn("lifecycle hook failed; stopping the chat", "err", hookErr)
			_, err := t.FinishError(r.chatID, hookError(hookErr))
			return err
		}
		return nil
	})
}

// awaitApproval stops the chat in requires_action for the calls that need
// a person's approval (EnterApproval); nothing runs until every one of
// them has an answer in the chat's approval round (planCalls reads it).
// The tool's policy is from the MCP config, or CHATD_TOOL_APPROVAL for
// built-in tools, tightened by the chat's own.
func (r *runner) awaitApproval(ctx context.Context, f fence, ask []sdk.ToolApproval) error {
	r.w.log.Info("tool calls await approval", "chat_id", r.chatID, "tool_calls", len(ask))
	return r.commit(ctx, f, func(t *chatstate.Tx) error {
		_, err := t.EnterApproval(r.chatID, ask)
		return err
	})
}

// approvalPolicy is a tool's approval policy: an MCP tool's from the MCP
// config, the deployment's (CHATD_TOOL_APPROVAL) for a built-in one.
func (r *runner) approvalPolicy(tool tools.Tool) string {
	if a, ok := tool.(interface{ Approval() string }); ok {
		return a.Approval()
	}
	return r.w.cfg.ToolApproval
}

// effectOf is the tool's effect class; anything but pure or idempotent
// (an MCP tool reporting nothing, say) is effectful, the class that never
// runs twice.
func effectOf(t tools.Tool) string {
	switch e := t.Effect(); e {
	case store.EffectPure, store.EffectIdempotent:
		return e
	}
	return store.EffectEffectful
}

// runTool runs a tool as one tool_call stage, counted by tool, effect
// class and outcome (error: it failed to run, a Run error or a panic).
func (r *runner) runTool(ctx context.Context, tool tools.Tool, callID string, args json.RawMessage) (json.RawMessage, error) {
	ctx, st := r.stage(ctx, StageToolCall, attribute.String("tool_name", tool.Name()))
	ctx, span := r.w.genai.tool(ctx, tool.Name(), callID, r.spanScope()...)
	out, err := runTool(ctx, tool, args)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	st.end(err)
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	r.w.deps.Metrics.toolCall(tool.Name(), effectOf(tool), outcome)
	return out, err
}

// runTool runs a tool, turning a panic into an error result so one broken
// tool cannot take the process down.
func runTool(ctx context.Context, tool tools.Tool, args json.RawMessage) (out json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("tool %s panicked: %v", tool.Name(), p)
		}
	}()
	return tool.Run(ctx, args)
}
