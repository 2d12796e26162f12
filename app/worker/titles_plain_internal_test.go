package worker

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
)

// TestCleanTitleKeepsOnlyPlainText: a reply that is a title becomes one;
// a reply that is tool-call markup, JSON, code or a tool call is not a
// title ("": the chat keeps its prompt-derived title).
func TestCleanTitleKeepsOnlyPlainText(t *testing.T) {
	text := func(s string) []sdk.ChatMessagePart { return []sdk.ChatMessagePart{{Type: sdk.PartText, Text: s}} }
	for _, tc := range []struct {
		parts []sdk.ChatMessagePart
		want  string
	}{
		{text(`"Capital of France"`), "Capital of France"},
		{text("**Title:** Rust vs Go\nmore"), "Rust vs Go"},
		{text("Title: C++ build errors."), "C++ build errors"},
		{text(`<tool_call>{"name": "current_time", "arguments": {}}</tool_call>`), ""},
		{text(`{"title": "Weather"}`), ""},
		{text("```json"), ""},
		{text("[Weather](http://x)"), ""},
		{text("   "), ""},
		{[]sdk.ChatMessagePart{{Type: sdk.PartText, Text: "Checking"}, {Type: sdk.PartToolCall, ToolCallID: "c", ToolName: "t", Args: json.RawMessage(`{}`)}}, ""},
	} {
		require.Equal(t, tc.want, cleanTitle(tc.parts), "%+v", tc.parts)
	}
}
