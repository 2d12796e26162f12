package anthropic_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
)

var pdfData = base64.StdEncoding.EncodeToString([]byte("%PDF-1.4\n%%EOF\n"))

// TestPDFParts: a PDF part goes to the Messages API as a document block
// with a base64 application/pdf source titled with the file's name; the
// fake server checks the block and refuses data that is not a PDF.
func TestPDFParts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	req := llm.Request{Model: "claude-test", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{
		{Type: sdk.PartText, Text: "Summarize"},
		{Type: sdk.PartFile, MediaType: llm.MediaTypePDF, Name: "paper.pdf", URL: "data:application/pdf;base64," + pdfData},
	}}}}
	_, err := b.p.Stream(context.Background(), req, nil)
	require.NoError(t, err)
	raw, err := json.Marshal(b.srv.Requests()[0].JSON(t)["messages"])
	require.NoError(t, err)
	require.JSONEq(t, `[{"role":"user","content":[
		{"type":"text","text":"Summarize"},
		{"type":"document","title":"paper.pdf","source":{"type":"base64","media_type":"application/pdf","data":"`+pdfData+`"}}
	]}]`, string(raw))

	req.Messages[0].Parts[1].URL = "data:application/pdf;base64," + base64.StdEncoding.EncodeToString([]byte("not a pdf"))
	_, err = b.p.Stream(context.Background(), req, nil)
	require.ErrorContains(t, err, "PDF")
}

// TestToolResultImages: the images a tool returned go inside the
// tool_result's content as image blocks after its text, which keeps a
// description of each block without the data; audio stays a description.
func TestToolResultImages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	result := `{"content":[{"type":"text","text":"a screenshot"},` +
		`{"type":"image","mimeType":"image/png","bytes":8,"data":"iVBORw0KGgo="},` +
		`{"type":"audio","mimeType":"audio/wav","bytes":4,"data":"UklGRg=="}]}`
	req := llm.Request{Model: "claude-test", Messages: []llm.Message{
		{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "look"}}},
		{Role: llm.RoleAssistant, Parts: []sdk.ChatMessagePart{{Type: sdk.PartToolCall, ToolCallID: "toolu_1", ToolName: "shot", Args: json.RawMessage(`{}`)}}},
		{Role: llm.RoleTool, Parts: []sdk.ChatMessagePart{{Type: sdk.PartToolResult, ToolCallID: "toolu_1", ToolName: "shot", Result: json.RawMessage(result)}}},
	}}
	_, err := b.p.Stream(context.Background(), req, nil)
	require.NoError(t, err)
	msgs := b.srv.Requests()[0].JSON(t)["messages"].([]any)
	raw, err := json.Marshal(msgs[2])
	require.NoError(t, err)
	text := `{"content":[{"text":"a screenshot","type":"text"},{"bytes":8,"mimeType":"image/png","type":"image"},{"bytes":4,"mimeType":"audio/wav","type":"audio"}]}`
	want, err := json.Marshal(map[string]any{"role": "user", "content": []any{map[string]any{
		"type": "tool_result", "tool_use_id": "toolu_1", "content": []any{
			map[string]any{"type": "text", "text": text},
			map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
		},
	}}})
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(raw))
}
