package worker

import (
	"context"
	"encoding/json"
	"time"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Lifecycle hooks in the worker (spec: "Lifecycle hooks"): pre_tool_use
// before a server-side call the journal has not started (it may deny the
// call or replace its input), post_tool_use once it ran, and stop when a
// turn completes. A hook that fails stops the operation: the chat finishes
// in error with a message naming the hook, and the next prompt or retry
// dispatches again, so the chat recovers once the consumer does.

// hookTurn numbers the turn for event ids: the history id of the latest
// user message a person wrote (hook context has no author), else of the
// latest user message that is not model-only. A compaction inside a turn
// re-commits its prompt after the boundary, which renumbers the turn.
func (v view) hookTurn() int64 {
	var fallback int64
	for i := len(v.active) - 1; i >= 0; i-- {
		m := v.active[i]
		if m.Role != store.RoleUser {
			continue
		}
		if m.CreatedBy.Valid {
			return m.ID
		}
		if fallback == 0 && m.Visibility != store.VisibilityModel {
			fallback = m.ID
		}
	}
	return fallback
}

// hookRequest is the part of an event every dispatch of this view shares.
func (r *runner) hookRequest(v view, e hooks.Event) hooks.Request {
	return hooks.Request{Event: e, ChatID: r.chatID, Turn: v.hookTurn(), OwnerID: v.chat.OwnerID}
}

// hookContext turns a response's context into history messages: model
// context is a model-only user message, user context a user message
// everyone sees.
func hookContext(resp hooks.Response) ([]store.MessageInsertParams, error) {
	var out []store.MessageInsertParams
	for _, c := range []struct{ text, visibility string }{
		{resp.ModelContext, store.VisibilityModel}, {resp.UserContext, store.VisibilityBoth},
	} {
		if c.text == "" {
			continue
		}
		content, err := chatstate.EncodeParts(sdk.Text(c.text))
		if err != nil {
			return nil, err
		}
		out = append(out, store.MessageInsertParams{Role: store.RoleUser, Visibility: c.visibility, Content: content})
	}
	return out, nil
}

// hookFailed stops the chat after a failed dispatch outside a tool step:
// it finishes in error naming the hook (fail closed).
func (r *runner) hookFailed(ctx context.Context, f fence, err error) error {
	r.log.Warn("lifecycle hook failed; stopping the chat", "history_version", f.ev.HistoryVersion, "err", err)
	return r.commit(ctx, f, func(t *chatstate.Tx) error {
		_, ferr := t.FinishError(r.chatID, hookError(err))
		return ferr
	})
}

func hookError(err error) sdk.ChatError {
	return sdk.ChatError{Message: err.Error(), Kind: sdk.ChatErrorGeneric, Retryable: true}
}

// preToolUse dispatches pre_tool_use for each callRun call (a callReuse
// call was dispatched before it started). It returns
// the calls to go on with (with any replaced input), the results of the
// calls that do not run (denied, or not dispatched because the hook
// failed) and the context to add after the results. A failed dispatch is
// returned as err: the calls it did not clear get an error result and the
// caller stops the chat.
func (r *runner) preToolUse(ctx context.Context, v view, calls toolPlan) (
	run toolPlan, notRun map[string]sdk.ChatMessagePart, extra []store.MessageInsertParams, err error,
) {
	notRun = map[string]sdk.ChatMessagePart{}
	if !r.w.deps.Hooks.Enabled() {
		return calls, notRun, nil, nil
	}
	errorResult := func(c plannedCall, msg string) {
		result, _ := json.Marshal(map[string]string{"error": msg})
		notRun[c.ID] = sdk.ChatMessagePart{Type: sdk.PartToolResult, ToolCallID: c.ID, ToolName: c.Name, Result: result, IsError: true}
	}
	for _, c := range calls {
		if c.kind == callReuse {
			run = append(run, c)
			continue
		}
		if err != nil {
			errorResult(c, "not run: "+err.Error())
			continue
		}
		req := r.hookRequest(v, hooks.PreToolUse)
		req.ToolCallID, req.ToolName, req.ToolInput = c.ID, c.Name, c.Args
		var resp hooks.Response
		resp, err = r.w.deps.Hooks.Dispatch(ctx, hooks.Admitted, req)
		if err == nil {
			var more []store.MessageInsertParams
			more, err = hookContext(resp)
			extra = append(extra, more...)
		}
		switch {
		case err != nil:
			errorResult(c, "not run: "+err.Error())
		case resp.Denied():
			reason := resp.Reason
			if reason == "" {
				reason = "a lifecycle hook denied the call"
			}
			errorResult(c, "denied: "+reason)
		default:
			if len(resp.UpdatedInput) > 0 {
				c.Args = resp.UpdatedInput
			}
			run = append(run, c)
		}
	}
	return run, notRun, extra, err
}

// postToolUse dispatches post_tool_use for each call that ran, with its
// result, and returns the context to add after the results.
func (r *runner) postToolUse(ctx context.Context, v view, ran toolPlan, results map[string]sdk.ChatMessagePart) ([]store.MessageInsertParams, error) {
	if !r.w.deps.Hooks.Enabled() {
		return nil, nil
	}
	var extra []store.MessageInsertParams
	for _, c := range ran {
		p := results[c.ID]
		req := r.hookRequest(v, hooks.PostToolUse)
		req.ToolCallID, req.ToolName, req.ToolInput = c.ID, c.Name, c.Args
		req.ToolResult, req.ToolIsError = p.Result, p.IsError
		resp, err := r.w.deps.Hooks.Dispatch(ctx, hooks.Admitted, req)
		if err != nil {
			return nil, err
		}
		more, err := hookContext(resp)
		if err != nil {
			return nil, err
		}
		extra = append(extra, more...)
	}
	return extra, nil
}

// stopTurn ends a completed turn: the stop hook runs first; its model
// context is recorded and the turn finishes, while user context continues
// the turn (the history has a new prompt to answer).
func (r *runner) stopTurn(ctx context.Context, f fence, v view) error {
	if !r.w.deps.Hooks.Enabled() {
		return r.finishTurn(ctx, f)
	}
	resp, err := r.w.deps.Hooks.Dispatch(ctx, hooks.Admitted, r.hookRequest(v, hooks.Stop))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return r.hookFailed(ctx, f, err)
	}
	extra, err := hookContext(resp)
	if err != nil {
		return err
	}
	finished, queuedAt := false, (*time.Time)(nil)
	err = r.commit(ctx, f, func(t *chatstate.Tx) error {
		if len(extra) > 0 {
			if _, err := t.CommitStep(r.chatID, chatstate.Step{Messages: extra}); err != nil {
				return err
			}
			if resp.UserContext != "" {
				return nil
			}
		}
		res, err := r.finishTurnTx(t)
		finished, queuedAt = err == nil, res.PromotedQueuedAt
		return err
	})
	if err == nil && finished {
		r.turns.finish(ctx, OutcomeCompleted)
		r.recordQueueWait(ctx, queuedAt)
	}
	return err
}

// preCompact dispatches pre_compact; its context guides the summary
// instead of joining the conversation, so it is returned as text for the
// summarizer's instruction.
func (r *runner) preCompact(ctx context.Context, v view, source string) (string, error) {
	if !r.w.deps.Hooks.Enabled() {
		return "", nil
	}
	req := r.hookRequest(v, hooks.PreCompact)
	req.Source = source
	resp, err := r.w.deps.Hooks.Dispatch(ctx, hooks.Admitted, req)
	if err != nil {
		return "", err
	}
	guide := resp.ModelContext
	if resp.UserContext != "" {
		if guide != "" {
			guide += "\n\n"
		}
		guide += resp.UserContext
	}
	return guide, nil
}

// postCompact dispatches post_compact and returns its model context (for
// the summary) and its user context (messages after the compaction).
func (r *runner) postCompact(ctx context.Context, v view, source string) (string, []store.MessageInsertParams, error) {
	if !r.w.deps.Hooks.Enabled() {
		return "", nil, nil
	}
	req := r.hookRequest(v, hooks.PostCompact)
	req.Source = source
	resp, err := r.w.deps.Hooks.Dispatch(ctx, hooks.Admitted, req)
	if err != nil {
		return "", nil, err
	}
	user, err := hookContext(hooks.Response{UserContext: resp.UserContext})
	return resp.ModelContext, user, err
}
