package worker

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Automatic compaction (spec: "Compaction model selection", "Manual
// compaction"). The worker evaluates it before every generation, each
// model step of a tool loop included, so a turn that grows past the
// trigger with tool results is summarized before its next call instead of
// ending in the provider's context-length error.

// compactTrigger is the binding automatic compaction trigger. chatd has
// one, the spec's chat trigger: the model config's compression_threshold
// (else the deployment's CHATD_COMPACT_THRESHOLD_PERCENT) of the chat
// model's window; there is no organization override model.
type compactTrigger struct {
	percent int   // threshold_percent
	limit   int64 // trigger_context_limit_tokens
}

func (r *runner) compactTrigger(m Model) compactTrigger {
	return compactTrigger{percent: m.compactThreshold(r.w.cfg.CompactThresholdPercent), limit: m.ContextLimit}
}

// reached: usage u is at or past the trigger point. A disabled trigger
// (100%) or an unknown window never is.
func (t compactTrigger) reached(u *store.Usage) bool {
	if u == nil || t.limit <= 0 || t.percent >= 100 {
		return false
	}
	return (u.InputTokens+u.OutputTokens)*100 >= t.limit*int64(t.percent)
}

// summaryOutputPercent bounds a summary's output by the summarizer's own
// window: a longer summary could not bring the prompt back under an
// automatic trigger, and the window still has to hold the summarizer's
// input.
const summaryOutputPercent = 20

// summaryMaxOutput is the output cap of a summary call on m: the model's
// own cap, bounded by summaryOutputPercent of its window (when known).
func summaryMaxOutput(m Model) int {
	if m.ContextLimit <= 0 {
		return m.MaxOutputTokens
	}
	limit := max(int(m.ContextLimit*summaryOutputPercent/100), 1)
	if m.MaxOutputTokens > 0 && m.MaxOutputTokens < limit {
		return m.MaxOutputTokens
	}
	return limit
}

// summaryResult is the chat_summarized tool result of a compaction: every
// summary, automatic or manual, records the binding trigger it ran under
// (threshold_percent, trigger_context_limit_tokens) and the chat model's
// window (context_limit_tokens).
type summaryResult struct {
	Source           string `json:"source"`
	Summary          string `json:"summary"`
	ContextLimit     int64  `json:"context_limit_tokens"`
	ThresholdPercent *int   `json:"threshold_percent"`
	TriggerLimit     *int64 `json:"trigger_context_limit_tokens"`
}

func newSummaryResult(source, summary string, m Model, t compactTrigger) summaryResult {
	return summaryResult{Source: source, Summary: summary, ContextLimit: m.ContextLimit, ThresholdPercent: &t.percent, TriggerLimit: &t.limit}
}

// under reports whether the summary was recorded under trigger t (a
// summary from before these fields were recorded was not).
func (s summaryResult) under(t compactTrigger) bool {
	return s.ThresholdPercent != nil && s.TriggerLimit != nil && *s.ThresholdPercent == t.percent && *s.TriggerLimit == t.limit
}

// latestSummary is the result of the summary that starts the view (its
// latest boundary, when that is a compaction) and the usage of the first
// assistant reply after it (nil: none yet).
func (v view) latestSummary() (res summaryResult, first *store.Usage, ok bool) {
	for _, m := range v.active {
		switch {
		case !ok && m.Role == store.RoleTool && m.Compressed:
			var parts []sdk.ChatMessagePart
			if json.Unmarshal(m.Content, &parts) != nil {
				continue
			}
			for _, p := range parts {
				if p.Type == sdk.PartToolResult && p.ToolName == chatstate.ToolChatSummarized {
					ok = json.Unmarshal(p.Result, &res) == nil
				}
			}
		case ok && m.Role == store.RoleAssistant && !m.Compressed && m.Usage != nil:
			return res, m.Usage, true
		}
	}
	return res, nil, ok
}

// autoCompaction decides, before a generation, whether the history must be
// summarized first. over is set instead when the latest summary, recorded
// under the same trigger, did not bring the prompt under it (the first
// reply after it already reached the trigger): compacting again would
// repeat at every step and turn, so the chat stops with a clear error. A
// summary recorded under another threshold or window is not a failed
// compaction: the chat compacts again. A 0% threshold ("always compact")
// skips the check.
func (r *runner) autoCompaction(v view, m Model) (compact bool, over *sdk.ChatError) {
	t := r.compactTrigger(m)
	if !t.reached(v.lastUsage()) || !chatstate.SomethingToCompact(v.active) {
		return false, nil
	}
	if res, first, ok := v.latestSummary(); ok && t.percent > 0 && res.under(t) && t.reached(first) {
		return false, stillOverLimit(first, t)
	}
	return true, nil
}

// stillOverLimit is the terminal error of a chat its summary did not bring
// under the automatic compaction trigger; it names what can clear it.
func stillOverLimit(first *store.Usage, t compactTrigger) *sdk.ChatError {
	return &sdk.ChatError{
		Kind:    sdk.ChatErrorConfig,
		Message: "The conversation is still over the context limit after compaction.",
		Detail: fmt.Sprintf("The first reply after the summary used %d tokens, at or past the automatic compaction point "+
			"(%d%% of the model's %d-token window), so compacting again would not help. Raise the model's compression "+
			"threshold (or CHATD_COMPACT_THRESHOLD_PERCENT), choose a model with a larger window, or clear the context.",
			first.InputTokens+first.OutputTokens, t.percent, t.limit),
	}
}

// midTurnNote ends the summary the model reads after a compaction inside a
// turn: the turn's prompt follows it again, and the model should go on,
// not start over.
const midTurnNote = "This summary was written while you were working on the request that follows; " +
	"it records what you have done so far. Continue the work from there instead of starting over."

// isPrompt: m is a user message that asks for a turn (a person's, a
// request's, or any the users see), not hook context or an anchor.
func isPrompt(m store.Message) bool {
	return m.Role == store.RoleUser && !chatstate.IsBoundaryAnchor(m) &&
		(m.CreatedBy.Valid || m.RequestID.Valid || m.Visibility != store.VisibilityModel)
}

// midTurnPrompt is the index of the prompt of a turn already under way
// (the model has answered it, so it lies before the pending input that
// starts at cut), or -1 when the pending input holds the prompt (the turn
// starts now). An automatic compaction inside a turn re-commits that
// prompt after the summary, so the turn's request stays findable and the
// model still has the request verbatim.
func (v view) midTurnPrompt(cut int) int {
	if slices.ContainsFunc(v.active[cut:], isPrompt) {
		return -1
	}
	for i := cut - 1; i >= 0; i-- {
		m := v.active[i]
		if isPrompt(m) {
			return i
		}
		if chatstate.IsBoundaryAnchor(m) {
			// An earlier compaction replayed an authorless prompt right
			// after this boundary's triplet.
			if j := i + 3; j < cut && v.active[j].Role == store.RoleUser && !v.active[j].Compressed {
				return j
			}
			return -1
		}
	}
	return -1
}
