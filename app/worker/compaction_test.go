package worker

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// TestAutoCompactionDecision holds the spec's post-compaction check:
// before a generation, usage past the trigger compacts, unless the first
// reply after the latest summary, recorded under the same trigger, was
// already past it (the terminal "still over" error). A summary recorded
// under another threshold or window, or before the trigger was recorded,
// is not a failed compaction, and a 0% threshold skips the check.
func TestAutoCompactionDecision(t *testing.T) {
	usage := func(n int64) *store.Usage { return &store.Usage{InputTokens: n} }
	summary := func(result string) []store.Message {
		anchor := store.Message{Role: store.RoleUser, Visibility: store.VisibilityModel, Compressed: true}
		content, err := chatstate.EncodeParts([]sdk.ChatMessagePart{{Type: sdk.PartToolResult, ToolName: chatstate.ToolChatSummarized, Result: json.RawMessage(result)}})
		require.NoError(t, err)
		res := store.Message{Role: store.RoleTool, Visibility: store.VisibilityUser, Compressed: true, Content: content}
		return []store.Message{anchor, {Role: store.RoleAssistant, Compressed: true}, res, {Role: store.RoleUser, Visibility: store.VisibilityModel}}
	}
	reply := func(n int64) store.Message { return store.Message{Role: store.RoleAssistant, Usage: usage(n)} }
	plain := []store.Message{{Role: store.RoleUser}}
	same := `{"threshold_percent":50,"trigger_context_limit_tokens":1000}`
	for _, tc := range []struct {
		name          string
		percent       int
		active        []store.Message
		compact, over bool
	}{
		{"under the trigger", 50, append(plain, reply(400)), false, false},
		{"past the trigger", 50, append(plain, reply(500)), true, false},
		{"disabled", 100, append(plain, reply(999)), false, false},
		{"first reply after the summary under it, a later one past it", 50, append(summary(same), reply(300), reply(600)), true, false},
		{"first reply after the summary past it", 50, append(summary(same), reply(600)), false, true},
		{"still past it later in the turn", 50, append(summary(same), reply(600), reply(700)), false, true},
		{"summary under another threshold", 50, append(summary(`{"threshold_percent":40,"trigger_context_limit_tokens":1000}`), reply(600)), true, false},
		{"summary under another window", 50, append(summary(`{"threshold_percent":50,"trigger_context_limit_tokens":2000}`), reply(600)), true, false},
		{"summary without the recorded trigger", 50, append(summary(`{"context_limit_tokens":1000}`), reply(600)), true, false},
		{"0% skips the check", 0, append(summary(`{"threshold_percent":0,"trigger_context_limit_tokens":1000}`), reply(600)), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner{w: &Worker{cfg: Config{CompactThresholdPercent: 80}}}
			m := Model{ContextLimit: 1000, CompactThresholdPercent: tc.percent}
			if tc.percent == 0 {
				// A 0% threshold is not expressible through the model's
				// setting (0 means "the deployment's"): set it there.
				r.w.cfg.CompactThresholdPercent = 0
			}
			compact, over := r.autoCompaction(view{active: tc.active}, m)
			require.Equal(t, tc.compact, compact, "compact")
			require.Equal(t, tc.over, over != nil, "still over: %v", over)
			if over != nil {
				require.Equal(t, sdk.ChatErrorConfig, over.Kind)
				require.Contains(t, over.Message, "still over the context limit")
			}
		})
	}
}

// TestSummaryMaxOutput: a summary's output cap is the summarizer's own
// cap, bounded by a fifth of its window.
func TestSummaryMaxOutput(t *testing.T) {
	require.Equal(t, 200, summaryMaxOutput(Model{ContextLimit: 1000}))
	require.Equal(t, 150, summaryMaxOutput(Model{ContextLimit: 1000, MaxOutputTokens: 150}))
	require.Equal(t, 200, summaryMaxOutput(Model{ContextLimit: 1000, MaxOutputTokens: 4000}))
	require.Equal(t, 4000, summaryMaxOutput(Model{MaxOutputTokens: 4000}), "an unknown window bounds nothing")
}
