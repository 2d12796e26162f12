package e2e_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/mcp/mcptest"
	"github.com/chatd/chatd/app/modelconfig"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// mediaRig is an app whose models are served by fake provider APIs:
// Anthropic (claude-sonnet-4-5), OpenAI over Chat Completions (gpt-4o,
// use_responses_api false) and over the Responses API (gpt-6-astra), and
// the demo model.
type mediaRig struct {
	h                     *apptest.Harness
	ctx                   context.Context
	anthropic, chat, resp *llmtest.Server
	// models by name: "claude", "gpt-4o", "astra", "demo".
	models map[string]uuid.UUID
}

func newMediaRig(t *testing.T, newStore func(t testing.TB) store.Store, mcpConfig string) *mediaRig {
	t.Helper()
	r := &mediaRig{anthropic: llmtest.NewAnthropic(t), chat: llmtest.NewOpenAI(t), resp: llmtest.NewOpenAIResponses(t)}
	cfg := config.Config{AnthropicBaseURL: r.anthropic.URL, Models: []string{"anthropic/claude-sonnet-4-5"}, Worker: apptest.FastWorker()}
	if mcpConfig != "" {
		cfg.MCPConfig = writeMCPConfig(t, mcpConfig)
	}
	r.h = apptest.Start(t, apptest.Options{Store: newStore, Config: cfg})
	ctx, cancel := context.WithTimeout(r.h.Ctx, 2*time.Minute)
	t.Cleanup(cancel)
	r.ctx = ctx
	r.models = map[string]uuid.UUID{
		"claude": modelconfig.ModelID("anthropic", "claude-sonnet-4-5"),
		"demo":   modelconfig.ModelID("demo", "demo"),
	}
	// OpenAI itself (not an OpenAI-compatible server): a provider of type
	// openai at each fake's URL.
	for name, m := range map[string]struct {
		srv       *llmtest.Server
		model     string
		responses bool
	}{"gpt-4o": {r.chat, "gpt-4o", false}, "astra": {r.resp, "gpt-6-astra", true}} {
		var p sdk.ChatProviderConfig
		require.NoError(t, r.h.Admin.Do(ctx, http.MethodPost, "/chats/providers",
			map[string]any{"provider": "openai", "display_name": "OpenAI " + name, "base_url": m.srv.URL, "api_key": "sk-test"}, &p))
		var mc sdk.ChatModelConfig
		require.NoError(t, r.h.Admin.Do(ctx, http.MethodPost, "/chats/model-configs",
			map[string]any{"ai_provider_id": p.ID, "model": m.model, "model_config": map[string]any{"openai_config": map[string]any{"use_responses_api": m.responses}}}, &mc))
		r.models[name] = mc.ID
	}
	return r
}

// fakePDF is the start of a PDF: the bytes the server sniffs as one.
var fakePDF = []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n")

// send uploads a PDF and starts a chat on model with it; the error is the
// create's.
func (r *mediaRig) send(t *testing.T, model, name string) (uuid.UUID, error) {
	t.Helper()
	up, err := r.h.Admin.UploadFile(r.ctx, name, "application/pdf", bytes.NewReader(fakePDF))
	require.NoError(t, err)
	require.Equal(t, "application/pdf", up.MediaType)
	id := r.models[model]
	chat, err := r.h.Admin.CreateChat(r.ctx, sdk.CreateChatRequest{Title: "a PDF", ModelConfigID: &id, Content: []sdk.ChatMessagePart{
		{Type: sdk.PartText, Text: "Summarize this."}, {Type: sdk.PartFile, FileID: &up.ID},
	}})
	return chat.ID, err
}

// lastBody is the JSON body of the last request srv got.
func lastBody(t *testing.T, srv *llmtest.Server) map[string]any {
	t.Helper()
	reqs := srv.Requests()
	require.NotEmpty(t, reqs)
	return reqs[len(reqs)-1].JSON(t)
}

// userContent is the content list of the last user message of a Chat
// Completions or Anthropic body.
func userContent(t *testing.T, body map[string]any, key string) []any {
	t.Helper()
	msgs, _ := body[key].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] == "user" {
			content, _ := m["content"].([]any)
			return content
		}
	}
	t.Fatalf("no user message in %v", body)
	return nil
}

func blockOf(t *testing.T, content []any, typ string) map[string]any {
	t.Helper()
	for _, c := range content {
		if b, _ := c.(map[string]any); b["type"] == typ {
			return b
		}
	}
	t.Fatalf("no %s block in %v", typ, content)
	return nil
}

// TestPDFReachesProviders: a PDF uploaded through the API and sent in a
// message reaches Anthropic as a document block, Chat Completions as a
// file part and the Responses API as input_file, each with the PDF's bytes
// as base64; a send of a PDF to a model that does not read PDFs (the demo
// model) is 400 VALIDATION naming the model, and no request is made. GET
// /files/limits and GET /chats/models say so beforehand. On both stores.
func TestPDFReachesProviders(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := newMediaRig(t, newStore, "")
		want := base64.StdEncoding.EncodeToString(fakePDF)

		limits, err := r.h.Admin.FileLimits(r.ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"application/pdf"}, limits.DocumentTypes)
		models, err := r.h.Admin.Models(r.ctx)
		require.NoError(t, err)
		pdf := map[uuid.UUID]bool{}
		for _, m := range models.Models {
			pdf[m.ID] = m.PDFInput
		}
		require.Equal(t, map[uuid.UUID]bool{r.models["claude"]: true, r.models["gpt-4o"]: true, r.models["astra"]: true, r.models["demo"]: false}, pdf)

		// Anthropic: a document block with a base64 source, titled.
		chat, err := r.send(t, "claude", "paper.pdf")
		require.NoError(t, err)
		waitStatus(t, r.ctx, r.h.Admin, chat, sdk.ChatStatusWaiting)
		doc := blockOf(t, userContent(t, lastBody(t, r.anthropic), "messages"), "document")
		require.Equal(t, map[string]any{"type": "base64", "media_type": "application/pdf", "data": want}, doc["source"])
		require.Equal(t, "paper.pdf", doc["title"])

		// Chat Completions: a file part with the data URL.
		chat, err = r.send(t, "gpt-4o", "report.pdf")
		require.NoError(t, err)
		waitStatus(t, r.ctx, r.h.Admin, chat, sdk.ChatStatusWaiting)
		file := blockOf(t, userContent(t, lastBody(t, r.chat), "messages"), "file")
		require.Equal(t, map[string]any{"file_data": "data:application/pdf;base64," + want, "filename": "report.pdf"}, file["file"])

		// The Responses API: input_file in the user message.
		chat, err = r.send(t, "astra", "memo.pdf")
		require.NoError(t, err)
		waitStatus(t, r.ctx, r.h.Admin, chat, sdk.ChatStatusWaiting)
		input := userContent(t, map[string]any{"input": lastBody(t, r.resp)["input"]}, "input")
		f := blockOf(t, input, "input_file")
		require.Equal(t, "data:application/pdf;base64,"+want, f["file_data"])
		require.Equal(t, "memo.pdf", f["filename"])

		// The demo model reads no PDFs: refused, with the reason.
		before := len(r.anthropic.Requests()) + len(r.chat.Requests()) + len(r.resp.Requests())
		_, err = r.send(t, "demo", "notes.pdf")
		var apiErr *sdk.Error
		require.True(t, errors.As(err, &apiErr), "%v", err)
		require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
		require.Equal(t, sdk.CodeValidation, apiErr.Code)
		require.Contains(t, apiErr.Message, "does not accept PDF files")
		require.Contains(t, apiErr.Message, `"notes.pdf"`)
		require.Equal(t, before, len(r.anthropic.Requests())+len(r.chat.Requests())+len(r.resp.Requests()))
	})
}

// TestToolImagesReachProviders: server-everything's get-tiny-image (a
// real MCP server over stdio) returns text and a PNG; the image reaches
// Anthropic inside the tool_result's content as an image block, Chat
// Completions as an image_url part of a user message after the tool
// message, and the Responses API as input_image inside the
// function_call_output, each with the server's bytes; the history keeps
// the image's data in the tool result. On both stores.
func TestToolImagesReachProviders(t *testing.T) {
	t.Parallel()
	everything := mcptest.NPMServer(t, "server-everything")
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"everything": map[string]any{"command": "node", "args": []string{everything, "stdio"}},
		}})
		require.NoError(t, err)
		r := newMediaRig(t, newStore, string(mcpConfig))
		const tool = "everything__get-tiny-image"

		run := func(model string, srv *llmtest.Server, call string) string {
			t.Helper()
			srv.Enqueue(llmtest.ToolCall(call, tool, `{}`))
			srv.Enqueue(llmtest.TextChunks("It is the MCP logo."))
			id := r.models[model]
			chat, err := r.h.Admin.CreateChat(r.ctx, sdk.CreateChatRequest{Title: "an image", ModelConfigID: &id, Content: sdk.Text("show me the image")})
			require.NoError(t, err)
			waitStatus(t, r.ctx, r.h.Admin, chat.ID, sdk.ChatStatusWaiting)
			res := resultOf(t, r.ctx, r.h.Admin, chat.ID, call)
			require.False(t, res.IsError, "%s", res.Result)
			var stored struct {
				Content []struct{ Type, MimeType, Data string } `json:"content"`
			}
			require.NoError(t, json.Unmarshal(res.Result, &stored))
			for _, b := range stored.Content {
				if b.Type == "image" {
					require.Equal(t, "image/png", b.MimeType)
					raw, err := base64.StdEncoding.DecodeString(b.Data)
					require.NoError(t, err)
					require.True(t, bytes.HasPrefix(raw, []byte("\x89PNG")), "the stored data is the PNG")
					return b.Data
				}
			}
			t.Fatalf("no image in the stored result %s", res.Result)
			return ""
		}

		// Anthropic: an image block inside the tool_result.
		png := run("claude", r.anthropic, "toolu_img")
		var result map[string]any
		for _, c := range userContent(t, lastBody(t, r.anthropic), "messages") {
			if b, _ := c.(map[string]any); b["type"] == "tool_result" && b["tool_use_id"] == "toolu_img" {
				result = b
			}
		}
		require.NotNil(t, result, "the tool_result")
		content, _ := result["content"].([]any)
		img := blockOf(t, content, "image")
		require.Equal(t, map[string]any{"type": "base64", "media_type": "image/png", "data": png}, img["source"])
		text := blockOf(t, content, "text")["text"].(string)
		require.Contains(t, text, "Here's the image you requested")
		require.NotContains(t, text, png, "the image is not in the text too")

		// Chat Completions: the tool message (text), then a user message
		// with the image.
		png = run("gpt-4o", r.chat, "call_img")
		msgs, _ := lastBody(t, r.chat)["messages"].([]any)
		var toolAt = -1
		for i, m := range msgs {
			if mm, _ := m.(map[string]any); mm["role"] == "tool" && mm["tool_call_id"] == "call_img" {
				toolAt = i
				require.NotContains(t, mm["content"], png)
			}
		}
		require.GreaterOrEqual(t, toolAt, 0, "the tool message")
		require.Greater(t, len(msgs), toolAt+1, "a message follows the tool message")
		follow, _ := msgs[toolAt+1].(map[string]any)
		require.Equal(t, "user", follow["role"])
		parts, _ := follow["content"].([]any)
		require.Contains(t, blockOf(t, parts, "text")["text"], "call_img")
		require.Equal(t, map[string]any{"url": "data:image/png;base64," + png}, blockOf(t, parts, "image_url")["image_url"])

		// The Responses API: input_image inside the function_call_output.
		png = run("astra", r.resp, "call_resp_img")
		var output []any
		items, _ := lastBody(t, r.resp)["input"].([]any)
		for _, it := range items {
			if m, _ := it.(map[string]any); m["type"] == "function_call_output" && m["call_id"] == "call_resp_img" {
				output, _ = m["output"].([]any)
			}
		}
		require.NotEmpty(t, output, "the function_call_output is a list")
		require.Equal(t, "data:image/png;base64,"+png, blockOf(t, output, "input_image")["image_url"])
		require.False(t, strings.Contains(blockOf(t, output, "input_text")["text"].(string), png))
	})
}
