package openai_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
)

var pdfURL = "data:application/pdf;base64," + base64.StdEncoding.EncodeToString([]byte("%PDF-1.4\n%%EOF\n"))

// TestPDFParts: a PDF part goes to Chat Completions as a file content part
// (file_data the data URL, filename) and to the Responses API as an
// input_file; the fake servers check both and refuse data that is not a
// PDF.
func TestPDFParts(t *testing.T) {
	t.Parallel()
	req := func(url string) llm.Request {
		return llm.Request{Model: "gpt-4.1-mini", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{
			{Type: sdk.PartText, Text: "Summarize"},
			{Type: sdk.PartFile, MediaType: llm.MediaTypePDF, Name: "paper.pdf", URL: url},
		}}}}
	}
	b := setup(t)
	_, err := b.p.Stream(context.Background(), req(pdfURL), nil)
	require.NoError(t, err)
	require.JSONEq(t, `[{"role":"user","content":[
		{"type":"text","text":"Summarize"},
		{"type":"file","file":{"file_data":"`+pdfURL+`","filename":"paper.pdf"}}
	]}]`, marshal(t, b.srv.Requests()[0].JSON(t)["messages"]))

	r := setupResponses(t)
	_, err = r.p.Stream(context.Background(), req(pdfURL), nil)
	require.NoError(t, err)
	require.JSONEq(t, `[{"role":"user","content":[
		{"type":"input_text","text":"Summarize"},
		{"type":"input_file","file_data":"`+pdfURL+`","filename":"paper.pdf"}
	]}]`, marshal(t, r.srv.Requests()[0].JSON(t)["input"]))

	notPDF := "data:application/pdf;base64," + base64.StdEncoding.EncodeToString([]byte("plain"))
	for name, f := range map[string]fixture{"chat completions": b, "responses": r} {
		_, err := f.p.Stream(context.Background(), req(notPDF), nil)
		require.ErrorContains(t, err, "PDF", name)
	}
}

const toolMediaResult = `{"content":[{"type":"text","text":"a screenshot"},` +
	`{"type":"image","mimeType":"image/png","bytes":8,"data":"iVBORw0KGgo="},` +
	`{"type":"audio","mimeType":"audio/wav","bytes":4,"data":"UklGRg=="}]}`

// toolMediaText is the result as the model reads it: the blocks without
// their data.
const toolMediaText = `{"content":[{"text":"a screenshot","type":"text"},{"bytes":8,"mimeType":"image/png","type":"image"},{"bytes":4,"mimeType":"audio/wav","type":"audio"}]}`

func toolMediaRequest(model string) llm.Request {
	return llm.Request{Model: model, Messages: []llm.Message{
		{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "look"}}},
		{Role: llm.RoleAssistant, Parts: []sdk.ChatMessagePart{{Type: sdk.PartToolCall, ToolCallID: "call_1", ToolName: "shot", Args: json.RawMessage(`{}`)}}},
		{Role: llm.RoleTool, Parts: []sdk.ChatMessagePart{{Type: sdk.PartToolResult, ToolCallID: "call_1", ToolName: "shot", Result: json.RawMessage(toolMediaResult)}}},
	}}
}

// TestToolResultMedia: Chat Completions tool messages hold text only, so a
// tool's image follows the tool message as a user message, and its audio
// too when the model takes input_audio; the Responses API gets the image
// inside the function_call_output. Each text keeps a description of the
// blocks without their data.
func TestToolResultMedia(t *testing.T) {
	t.Parallel()
	textJSON := marshal(t, toolMediaText)
	head := `{"type":"text","text":"[returned by the tool call call_1 (shot); tool messages hold text only]"}`
	image := `{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}`

	b := setup(t)
	_, err := b.p.Stream(context.Background(), toolMediaRequest("gpt-4.1-mini"), nil)
	require.NoError(t, err)
	msgs := b.srv.Requests()[0].JSON(t)["messages"].([]any)
	require.Len(t, msgs, 4)
	require.JSONEq(t, `{"role":"tool","tool_call_id":"call_1","content":`+textJSON+`}`, marshal(t, msgs[2]))
	require.JSONEq(t, `{"role":"user","content":[`+head+`,`+image+`]}`, marshal(t, msgs[3]))

	_, err = b.p.Stream(context.Background(), toolMediaRequest("gpt-4o-audio-preview"), nil)
	require.NoError(t, err)
	msgs = b.srv.Requests()[1].JSON(t)["messages"].([]any)
	require.JSONEq(t, `{"role":"user","content":[`+head+`,`+image+`,
		{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}}]}`, marshal(t, msgs[3]))

	r := setupResponses(t)
	_, err = r.p.Stream(context.Background(), toolMediaRequest("gpt-4.1-mini"), nil)
	require.NoError(t, err)
	input := r.srv.Requests()[0].JSON(t)["input"].([]any)
	require.Len(t, input, 3)
	require.JSONEq(t, `{"type":"function_call_output","call_id":"call_1","output":[
		{"type":"input_text","text":`+textJSON+`},
		{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"auto"}]}`, marshal(t, input[2]))
}

// TestToolMediaAfterEveryToolMessage: when one step's results come in two
// tool messages (a server tool's and a client tool's), the image of the
// first follows both, as Chat Completions wants the tool messages right
// after the assistant message that called them.
func TestToolMediaAfterEveryToolMessage(t *testing.T) {
	t.Parallel()
	req := toolMediaRequest("gpt-4.1-mini")
	req.Messages[1].Parts = append(req.Messages[1].Parts, sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: "call_2", ToolName: "ask", Args: json.RawMessage(`{}`)})
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, Parts: []sdk.ChatMessagePart{{Type: sdk.PartToolResult, ToolCallID: "call_2", ToolName: "ask", Result: json.RawMessage(`"yes"`)}}})
	b := setup(t)
	_, err := b.p.Stream(context.Background(), req, nil)
	require.NoError(t, err)
	msgs := b.srv.Requests()[0].JSON(t)["messages"].([]any)
	var roles []any
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"])
	}
	require.Equal(t, []any{"user", "assistant", "tool", "tool", "user"}, roles)
	require.Equal(t, "call_2", msgs[3].(map[string]any)["tool_call_id"])
	require.Contains(t, marshal(t, msgs[4]), "image_url")
}
