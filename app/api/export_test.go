package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// TestMarkdownExportNotesMedia: the Markdown export shows an image or
// audio block a tool returned as a note of its size, not its base64, and
// keeps every other field of the result; results without media are
// printed as they are.
func TestMarkdownExportNotesMedia(t *testing.T) {
	image := strings.Repeat("iVBORw0KGgo", 100)
	result := json.RawMessage(`{"content":[{"type":"text","text":"here it is"},` +
		`{"type":"image","mimeType":"image/png","data":"` + image + `"},` +
		`{"type":"audio","mimeType":"audio/wav","data":"UklGRg=="}],"isError":false}`)
	md := exportMarkdown(sdk.ChatExport{Messages: []sdk.ChatExportMessage{
		{Role: store.RoleTool, Visibility: store.VisibilityBoth, Content: []sdk.ChatMessagePart{
			{Type: sdk.PartToolResult, ToolName: "get_image", ToolCallID: "call_1", Result: result},
			{Type: sdk.PartToolResult, ToolName: "plain", ToolCallID: "call_2", Result: json.RawMessage(`{"data":"kept","type":"image"}`)},
		}},
	}})
	require.NotContains(t, md, image)
	require.Contains(t, md, `"data": "[1100 characters of base64]"`)
	require.Contains(t, md, `"data": "[8 characters of base64]"`)
	require.Contains(t, md, `"mimeType": "image/png"`)
	require.Contains(t, md, `"text": "here it is"`)
	require.Contains(t, md, `"isError": false`)
	require.Contains(t, md, `"data": "kept"`, "a result that is not MCP content is printed as it is")
}
