package e2e_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/mcp"
	"github.com/chatd/chatd/app/mcp/mcptest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// mcpResourcesHarness starts an app with the reference server-everything
// configured three times over stdio: "everything" anyone may use, "vault"
// (an env secret: admins only by default) and "off" (disabled), and
// server-filesystem as "fs" (tools only: no resources, no prompts).
func mcpResourcesHarness(t *testing.T, newStore func(t testing.TB) store.Store, llmURL string) *apptest.Harness {
	t.Helper()
	everything := mcptest.NPMServer(t, "server-everything")
	filesystem := mcptest.NPMServer(t, "server-filesystem")
	mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{everything, "stdio"}},
		"vault":      map[string]any{"command": "node", "args": []string{everything, "stdio"}, "env": map[string]string{"VAULT_KEY": "k"}},
		"off":        map[string]any{"command": "node", "args": []string{everything, "stdio"}, "disabled": true},
		"fs":         map[string]any{"command": "node", "args": []string{filesystem, t.TempDir()}},
	}})
	require.NoError(t, err)
	return apptest.Start(t, apptest.Options{Store: newStore, Config: config.Config{
		OpenAIBaseURL: llmURL, DefaultModel: "openai/test-model",
		MCPConfig: writeMCPConfig(t, string(mcpConfig)), Worker: apptest.FastWorker(),
	}})
}

// TestMCPResourcesAndPrompts: a user lists server-everything's resources
// (its static documents, and its dynamic templates), reads a text and a
// blob resource, lists its prompts and renders one with arguments; bad
// input gets clear 4xx answers, a server the user may not use is 404 on
// every route (an admin reads it), a disabled one 409
// MCP_SERVER_UNAVAILABLE and one without prompts or resources 409
// MCP_UNSUPPORTED. Both stores.
func TestMCPResourcesAndPrompts(t *testing.T) {
	t.Parallel()
	mcptest.NPMServer(t, "server-everything")
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := mcpResourcesHarness(t, newStore, llmtest.NewOpenAI(t).URL)
		alice := h.NewUser(t, "alice")
		ctx := t.Context()
		everything, vault := mcp.ServerID("everything"), mcp.ServerID("vault")

		list, err := alice.MCPResources(ctx, everything, "")
		require.NoError(t, err)
		i := slices.IndexFunc(list.Resources, func(r sdk.MCPResource) bool {
			return r.URI == "demo://resource/static/document/architecture.md"
		})
		require.GreaterOrEqual(t, i, 0, "architecture.md is not listed: %+v", list.Resources)
		require.Equal(t, "text/markdown", list.Resources[i].MIMEType)
		var templates []string
		for _, tm := range list.Templates {
			templates = append(templates, tm.URITemplate)
		}
		require.Contains(t, templates, "demo://resource/dynamic/text/{resourceId}")
		require.Contains(t, templates, "demo://resource/dynamic/blob/{resourceId}")
		require.Empty(t, list.NextCursor, "server-everything lists all in one page")

		text, err := alice.ReadMCPResource(ctx, everything, "demo://resource/dynamic/text/7")
		require.NoError(t, err)
		require.Len(t, text.Contents, 1)
		require.Equal(t, "text/plain", text.Contents[0].MIMEType)
		require.Contains(t, text.Contents[0].Text, "Resource 7: This is a plaintext resource")
		blob, err := alice.ReadMCPResource(ctx, everything, "demo://resource/dynamic/blob/8")
		require.NoError(t, err)
		require.Len(t, blob.Contents, 1)
		require.Empty(t, blob.Contents[0].Text)
		require.Contains(t, string(blob.Contents[0].Blob), "Resource 8: This is a base64 blob")
		_, err = alice.ReadMCPResource(ctx, everything, "demo://no/such/resource")
		requireCode(t, err, http.StatusNotFound, sdk.CodeNotFound)
		_, err = alice.ReadMCPResource(ctx, everything, "")
		requireCode(t, err, http.StatusBadRequest, sdk.CodeValidation)

		prompts, err := alice.MCPPrompts(ctx, everything, "")
		require.NoError(t, err)
		j := slices.IndexFunc(prompts.Prompts, func(p sdk.MCPPrompt) bool { return p.Name == "args-prompt" })
		require.GreaterOrEqual(t, j, 0, "args-prompt is not listed: %+v", prompts.Prompts)
		args := prompts.Prompts[j].Arguments
		require.Len(t, args, 2)
		require.Equal(t, sdk.MCPPromptArgument{Name: "city", Description: "Name of the city", Required: true}, args[0])
		require.Equal(t, "state", args[1].Name)
		require.False(t, args[1].Required)
		got, err := alice.GetMCPPrompt(ctx, everything, "args-prompt", map[string]string{"city": "Lyon", "state": "Rhône"})
		require.NoError(t, err)
		require.Len(t, got.Messages, 1)
		require.Equal(t, "user", got.Messages[0].Role)
		require.Equal(t, []sdk.MCPContentPart{{Type: "text", Text: "What's weather in Lyon, Rhône?"}}, got.Messages[0].Content)
		_, err = alice.GetMCPPrompt(ctx, everything, "args-prompt", map[string]string{"state": "Rhône"})
		requireCode(t, err, http.StatusBadRequest, sdk.CodeValidation)
		_, err = alice.GetMCPPrompt(ctx, everything, "args-prompt", map[string]string{"city": "Lyon", "country": "FR"})
		requireCode(t, err, http.StatusBadRequest, sdk.CodeValidation)
		_, err = alice.GetMCPPrompt(ctx, everything, "no-such-prompt", nil)
		requireCode(t, err, http.StatusNotFound, sdk.CodeNotFound)

		// vault: alice may not use it, so it does not exist for her.
		_, err = alice.MCPResources(ctx, vault, "")
		requireCode(t, err, http.StatusNotFound, sdk.CodeNotFound)
		_, err = alice.ReadMCPResource(ctx, vault, "demo://resource/dynamic/text/1")
		requireCode(t, err, http.StatusNotFound, sdk.CodeNotFound)
		_, err = alice.MCPPrompts(ctx, vault, "")
		requireCode(t, err, http.StatusNotFound, sdk.CodeNotFound)
		_, err = alice.GetMCPPrompt(ctx, vault, "simple-prompt", nil)
		requireCode(t, err, http.StatusNotFound, sdk.CodeNotFound)
		_, err = alice.MCPPrompts(ctx, uuid.New(), "")
		requireCode(t, err, http.StatusNotFound, sdk.CodeNotFound)
		adminList, err := h.Admin.MCPPrompts(ctx, vault, "")
		require.NoError(t, err)
		require.NotEmpty(t, adminList.Prompts)

		// A disabled server is unavailable; one without prompts or
		// resources says so.
		_, err = alice.MCPResources(ctx, mcp.ServerID("off"), "")
		requireCode(t, err, http.StatusConflict, sdk.CodeMCPServerUnavailable)
		_, err = alice.MCPPrompts(ctx, mcp.ServerID("fs"), "")
		requireCode(t, err, http.StatusConflict, sdk.CodeMCPUnsupported)
		_, err = alice.MCPResources(ctx, mcp.ServerID("fs"), "")
		requireCode(t, err, http.StatusConflict, sdk.CodeMCPUnsupported)
	})
}

// TestMCPResourceAttachmentReachesModel: a message with an mcp_resource
// part is stored with the resource's contents as a file part (no
// mcp_resource part remains), and the resource's text reaches the model
// in the turn's request; later turns replay it from the file. A resource
// of a server the user may not use, or a part without its uri, is a 400
// and admits nothing; a durable request sent again replays without
// reading the resource; an edit attaches one too. Both stores.
func TestMCPResourceAttachmentReachesModel(t *testing.T) {
	t.Parallel()
	mcptest.NPMServer(t, "server-everything")
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		llm := llmtest.NewOpenAI(t)
		llm.Enqueue(llmtest.TextChunks("I read it."))
		llm.Enqueue(llmtest.TextChunks("Still there."))
		h := mcpResourcesHarness(t, newStore, llm.URL)
		alice := h.NewUser(t, "alice")
		ctx := t.Context()
		everything, vault := mcp.ServerID("everything"), mcp.ServerID("vault")

		_, err := alice.CreateChat(ctx, sdk.CreateChatRequest{Title: "t", Content: []sdk.ChatMessagePart{
			{Type: sdk.PartText, Text: "summarise"}, sdk.MCPResourcePart(vault, "demo://resource/dynamic/text/1"),
		}})
		e := requireCode(t, err, http.StatusBadRequest, sdk.CodeValidation)
		require.Equal(t, "content[1].server_id", e.Validations[0].Field)
		_, err = alice.CreateChat(ctx, sdk.CreateChatRequest{Title: "t", Content: []sdk.ChatMessagePart{
			{Type: sdk.PartText, Text: "summarise"}, {Type: sdk.PartMCPResource, ServerID: &everything},
		}})
		requireCode(t, err, http.StatusBadRequest, sdk.CodeValidation)
		_, err = alice.CreateChat(ctx, sdk.CreateChatRequest{Title: "t", Content: []sdk.ChatMessagePart{
			{Type: sdk.PartText, Text: "summarise"}, sdk.MCPResourcePart(everything, "demo://no/such/thing"),
		}})
		e = requireCode(t, err, http.StatusBadRequest, sdk.CodeValidation)
		require.Equal(t, "content[1].uri", e.Validations[0].Field)
		chats, err := alice.ListChats(ctx, sdk.ListChatsOptions{})
		require.NoError(t, err)
		require.Empty(t, chats, "a refused message admits nothing")

		chat, err := alice.CreateChat(ctx, sdk.CreateChatRequest{Title: "t", Content: []sdk.ChatMessagePart{
			{Type: sdk.PartText, Text: "summarise this"}, sdk.MCPResourcePart(everything, "demo://resource/dynamic/text/42"),
		}})
		require.NoError(t, err)
		waitChatStatus(t, alice, chat.ID, sdk.ChatStatusWaiting)
		reqs := llm.Requests()
		require.Len(t, reqs, 1)
		require.Contains(t, string(reqs[0].Body), "Resource 42: This is a plaintext resource")

		page, err := alice.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		var types []string
		var file sdk.ChatMessagePart
		for _, p := range page.Messages[0].Content {
			types = append(types, p.Type)
			if p.Type == sdk.PartFile {
				file = p
			}
		}
		require.Equal(t, []string{sdk.PartText, sdk.PartFile}, types)
		require.Equal(t, "42", file.Name)
		require.NotNil(t, file.FileID)

		// The next turn replays the resource from the stored file.
		_, err = alice.SendMessage(ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("and again?")})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return len(llm.Requests()) == 2 }, time.Minute, 10*time.Millisecond)
		waitChatStatus(t, alice, chat.ID, sdk.ChatStatusWaiting)
		require.Contains(t, string(llm.Requests()[1].Body), "Resource 42: This is a plaintext resource")
		require.True(t, strings.Contains(string(llm.Requests()[1].Body), "I read it."))

		// A durable request sent again is answered from its claim: the
		// resource is not read (nor stored) a second time.
		llm.Enqueue(llmtest.TextChunks("Durable."))
		requestID := uuid.New()
		durable := sdk.CreateChatRequest{Title: "d", RequestID: &requestID, Content: []sdk.ChatMessagePart{
			{Type: sdk.PartText, Text: "keep this"}, sdk.MCPResourcePart(everything, "demo://resource/static/document/features.md"),
		}}
		var first, again sdk.CreateChatResponse
		require.NoError(t, alice.Do(ctx, http.MethodPost, "/chats", durable, &first))
		require.False(t, *first.Replayed)
		waitChatStatus(t, alice, first.ID, sdk.ChatStatusWaiting)
		limits, err := alice.FileLimits(ctx)
		require.NoError(t, err)
		require.NoError(t, alice.Do(ctx, http.MethodPost, "/chats", durable, &again))
		require.True(t, *again.Replayed)
		require.Equal(t, first.ID, again.ID)
		after, err := alice.FileLimits(ctx)
		require.NoError(t, err)
		require.Equal(t, limits.UsedBytes, after.UsedBytes, "the replay stored no file")

		// An edit takes an mcp_resource part too.
		llm.Enqueue(llmtest.TextChunks("Edited."))
		var userMsg int64
		firstPage, err := alice.ChatMessages(ctx, first.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		for _, m := range firstPage.Messages {
			if m.Role == "user" {
				userMsg = m.ID
			}
		}
		require.NotZero(t, userMsg)
		edited, err := alice.EditMessage(ctx, first.ID, userMsg, sdk.EditChatMessageRequest{Content: []sdk.ChatMessagePart{
			{Type: sdk.PartText, Text: "this one instead"}, sdk.MCPResourcePart(everything, "demo://resource/dynamic/text/77"),
		}})
		require.NoError(t, err)
		require.Len(t, edited.Message.Content, 2)
		require.Equal(t, sdk.PartFile, edited.Message.Content[1].Type)
		waitChatStatus(t, alice, first.ID, sdk.ChatStatusWaiting)
		require.Contains(t, string(llm.Requests()[len(llm.Requests())-1].Body), "Resource 77: This is a plaintext resource")
	})
}

func waitChatStatus(t *testing.T, c *sdk.Client, chat uuid.UUID, status sdk.ChatStatus) {
	t.Helper()
	require.Eventually(t, func() bool {
		got, err := c.Chat(t.Context(), chat)
		return err == nil && got.Status == status
	}, time.Minute, 10*time.Millisecond, "the chat never became %s", status)
}
