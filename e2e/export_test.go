package e2e_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// systemTexts are the system messages of a provider request (OpenAI's
// chat completions: content a string or a list of text parts).
func systemTexts(t *testing.T, r llmtest.Request) []string {
	t.Helper()
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	r.Decode(t, &body)
	var out []string
	for _, m := range body.Messages {
		if m.Role != "system" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			out = append(out, s)
			continue
		}
		var parts []struct {
			Text string `json:"text"`
		}
		require.NoError(t, json.Unmarshal(m.Content, &parts))
		for _, p := range parts {
			out = append(out, p.Text)
		}
	}
	return out
}

// TestChatSystemPromptEndToEnd: on both stores, a chat's system prompt is
// in its Chat, a PATCH changes it without touching the chat's state or
// history, and the provider gets the new prompt from the next turn on
// (and none once it is cleared).
func TestChatSystemPromptEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		d := setup(t, newStore)
		ctx := d.ctx
		d.llm.Enqueue(llmtest.TextChunks("one"))
		chat, err := d.alice.CreateChat(ctx, sdk.CreateChatRequest{Title: "prompt", Content: sdk.Text("first"), SystemPrompt: "Be brief."})
		require.NoError(t, err)
		require.Equal(t, "Be brief.", chat.SystemPrompt)
		before := waitStatus(t, ctx, d.alice, chat.ID, sdk.ChatStatusWaiting)
		require.Equal(t, []string{"Be brief."}, systemTexts(t, d.llm.Requests()[0]))

		got, err := d.alice.Chat(ctx, chat.ID)
		require.NoError(t, err)
		require.Equal(t, "Be brief.", got.SystemPrompt)

		prompt := "Answer in French."
		require.NoError(t, d.alice.UpdateChat(ctx, chat.ID, sdk.UpdateChatRequest{SystemPrompt: &prompt}))
		after, err := d.alice.Chat(ctx, chat.ID)
		require.NoError(t, err)
		require.Equal(t, prompt, after.SystemPrompt)
		require.Equal(t, before.Status, after.Status, "a system prompt is metadata")
		page, err := d.alice.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		require.Equal(t, []string{"first", "one"}, textsOfMessages(t, page.Messages), "the history does not change")

		d.llm.Enqueue(llmtest.TextChunks("deux"))
		_, err = d.alice.SendMessage(ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("second")})
		require.NoError(t, err)
		waitStatus(t, ctx, d.alice, chat.ID, sdk.ChatStatusWaiting)
		reqs := d.llm.Requests()
		require.Equal(t, []string{prompt}, systemTexts(t, reqs[len(reqs)-1]), "the next turn has the new prompt")

		// null clears it; the next turn has no system message.
		require.NoError(t, d.alice.Do(ctx, http.MethodPatch, "/chats/"+chat.ID.String(), map[string]any{"system_prompt": nil}, nil))
		cleared, err := d.alice.Chat(ctx, chat.ID)
		require.NoError(t, err)
		require.Empty(t, cleared.SystemPrompt)
		d.llm.Enqueue(llmtest.TextChunks("three"))
		_, err = d.alice.SendMessage(ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("third")})
		require.NoError(t, err)
		waitStatus(t, ctx, d.alice, chat.ID, sdk.ChatStatusWaiting)
		reqs = d.llm.Requests()
		require.Empty(t, systemTexts(t, reqs[len(reqs)-1]))

		err = d.alice.Do(ctx, http.MethodPatch, "/chats/"+chat.ID.String(), map[string]any{"system_prompt": 7}, nil)
		requireCode(t, err, http.StatusBadRequest, sdk.CodeValidation)
		err = d.bob.UpdateChat(ctx, chat.ID, sdk.UpdateChatRequest{SystemPrompt: &prompt})
		requireCode(t, err, http.StatusNotFound, sdk.CodeNotFound)
	})
}

// TestExportImportEndToEnd: on both stores, a chat with a system prompt,
// a file and a tool call round-trips through a JSON export into a new
// chat of another user (new ids, files inline), a second import of the
// export answers the same chat, the Markdown export reads, and bad
// requests get their 4xx.
func TestExportImportEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		d := setup(t, newStore)
		ctx := d.ctx
		file, err := d.alice.UploadFile(ctx, "notes.txt", "text/plain", strings.NewReader("the notes\n"))
		require.NoError(t, err)
		d.llm.Enqueue(llmtest.Join(llmtest.TextChunks("Let me check."), llmtest.ToolCall("call_1", "get_weather", `{"city":"Paris"}`)))
		chat, err := d.alice.CreateChat(ctx, sdk.CreateChatRequest{
			Title: "Weather & notes", SystemPrompt: "Be brief.", Labels: map[string]string{"k": "v"},
			Content: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "Weather in Paris?"}, {Type: sdk.PartFile, FileID: &file.ID}},
			UnsafeDynamicTools: []sdk.DynamicTool{{Name: "get_weather", Description: "Weather of a city",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
		})
		require.NoError(t, err)
		waitStatus(t, ctx, d.alice, chat.ID, sdk.ChatStatusRequiresAction)
		d.llm.Enqueue(llmtest.TextChunks("Sunny."))
		require.NoError(t, d.alice.SubmitToolResults(ctx, chat.ID, sdk.SubmitToolResultsRequest{
			Results: []sdk.ToolResult{{ToolCallID: "call_1", Output: json.RawMessage(`{"sky":"sunny"}`)}}}))
		waitStatus(t, ctx, d.alice, chat.ID, sdk.ChatStatusWaiting)
		page, err := d.alice.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		original := page.Messages

		// JSON by reference.
		exp, err := d.alice.ExportChat(ctx, chat.ID, false)
		require.NoError(t, err)
		require.Equal(t, sdk.ExportFormat, exp.Format)
		require.Equal(t, sdk.ExportVersion, exp.Version)
		require.NotEqual(t, uuid.Nil, exp.ExportID)
		require.Equal(t, "Weather & notes", exp.Chat.Title)
		require.Equal(t, "Be brief.", exp.Chat.SystemPrompt)
		require.Equal(t, map[string]string{"k": "v"}, exp.Chat.Labels)
		require.Len(t, exp.Chat.UnsafeDynamicTools, 1)
		require.Len(t, exp.Messages, len(original))
		require.Equal(t, []sdk.ChatExportFile{{ID: file.ID, Name: "notes.txt", MediaType: file.MediaType, Size: file.Size}}, exp.Files)
		var call, result bool
		for _, m := range exp.Messages {
			for _, p := range m.Content {
				call = call || (p.Type == sdk.PartToolCall && p.ToolCallID == "call_1" && p.ToolName == "get_weather")
				result = result || (p.Type == sdk.PartToolResult && p.ToolCallID == "call_1" && strings.Contains(string(p.Result), "sunny"))
			}
		}
		require.True(t, call && result, "the export holds the tool call and its result")
		again, err := d.alice.ExportChat(ctx, chat.ID, false)
		require.NoError(t, err)
		require.NotEqual(t, exp.ExportID, again.ExportID, "every export has its own id")

		// Markdown.
		md, name, err := d.alice.ExportChatRaw(ctx, chat.ID, sdk.ExportOptions{Format: "markdown"})
		require.NoError(t, err)
		require.Regexp(t, `^chat-weather-notes-\d{4}-\d{2}-\d{2}\.md$`, name)
		for _, want := range []string{"# Weather & notes", "> Be brief.", "Weather in Paris?", "notes.txt", "`get_weather`", `"sky": "sunny"`, "Sunny."} {
			require.Contains(t, string(md), want)
		}

		// Bad requests.
		_, _, err = d.bob.ExportChatRaw(ctx, chat.ID, sdk.ExportOptions{})
		requireCode(t, err, http.StatusNotFound, sdk.CodeNotFound)
		_, _, err = d.alice.ExportChatRaw(ctx, chat.ID, sdk.ExportOptions{Format: "xml"})
		requireCode(t, err, http.StatusBadRequest, sdk.CodeValidation)

		// Bob imports the inline export: a new chat of his, same history.
		inline, err := d.alice.ExportChat(ctx, chat.ID, true)
		require.NoError(t, err)
		require.Equal(t, []byte("the notes\n"), inline.Files[0].Content)
		imported, created, err := d.bob.ImportChat(ctx, inline)
		require.NoError(t, err)
		require.True(t, created)
		require.NotEqual(t, chat.ID, imported.ID)
		require.Equal(t, d.bobID(t), imported.OwnerID)
		require.Equal(t, "Weather & notes", imported.Title)
		require.Equal(t, "Be brief.", imported.SystemPrompt)
		require.Equal(t, sdk.ChatStatusWaiting, imported.Status)
		page, err = d.bob.ChatMessages(ctx, imported.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		require.Equal(t, textsOfMessages(t, original), textsOfMessages(t, page.Messages))
		require.Equal(t, roles(original), roles(page.Messages))
		var fileID *uuid.UUID
		for _, m := range page.Messages {
			require.NotEqual(t, chat.ID, m.ChatID)
			parts, err := m.Parts()
			require.NoError(t, err)
			for _, p := range parts {
				if p.Type == sdk.PartFile {
					fileID = p.FileID
				}
			}
		}
		require.NotNil(t, fileID)
		require.NotEqual(t, file.ID, *fileID, "an inline file is stored anew")
		raw, _, err := d.bob.File(ctx, *fileID)
		require.NoError(t, err)
		require.Equal(t, "the notes\n", string(raw))

		// The same export again: the same chat, 200.
		second, created, err := d.bob.ImportChat(ctx, inline)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, imported.ID, second.ID)

		// By reference, a file bob cannot read becomes a note; alice's own
		// import keeps the reference.
		byRef, created, err := d.bob.ImportChat(ctx, exp)
		require.NoError(t, err)
		require.True(t, created)
		page, err = d.bob.ChatMessages(ctx, byRef.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		require.Contains(t, allText(t, page.Messages), "notes.txt (text/plain) was not imported")
		mine, _, err := d.alice.ImportChat(ctx, exp)
		require.NoError(t, err)
		page, err = d.alice.ChatMessages(ctx, mine.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		require.NotContains(t, allText(t, page.Messages), "was not imported")

		// The imported chat goes on: the provider gets its prompt and history.
		d.llm.Enqueue(llmtest.TextChunks("Still sunny."))
		_, err = d.bob.SendMessage(ctx, imported.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("And now?")})
		require.NoError(t, err)
		waitStatus(t, ctx, d.bob, imported.ID, sdk.ChatStatusWaiting)
		reqs := d.llm.Requests()
		last := reqs[len(reqs)-1]
		require.Equal(t, []string{"Be brief."}, systemTexts(t, last))
		require.Contains(t, string(last.Body), "call_1")

		// Bad imports.
		bad := inline
		bad.Format = "something"
		_, _, err = d.bob.ImportChat(ctx, bad)
		requireCode(t, err, http.StatusBadRequest, sdk.CodeImportUnsupported)
		bad = inline
		bad.ExportID = uuid.New()
		bad.Messages = []sdk.ChatExportMessage{{Role: "wizard", Content: sdk.Text("x")}}
		_, _, err = d.bob.ImportChat(ctx, bad)
		requireCode(t, err, http.StatusBadRequest, sdk.CodeValidation)
		require.Equal(t, http.StatusBadRequest, d.postRaw(t, d.bob, "/chats/import", []byte(`{"format":`)))
		huge := bytes.Repeat([]byte("a"), 60<<20)
		err = d.bob.Do(ctx, http.MethodPost, "/chats/import", map[string]any{"format": sdk.ExportFormat, "pad": string(huge)}, nil)
		requireCode(t, err, http.StatusRequestEntityTooLarge, sdk.CodeTooLarge)
	})
}

// TestSystemPromptPatchLimit: PATCH /chats/{chat} holds system_prompt to
// CHATD_MAX_SYSTEM_PROMPT_BYTES as POST /chats does.
func TestSystemPromptPatchLimit(t *testing.T) {
	t.Parallel()
	l := setupLimits(t, newSQLite, api.Limits{MaxSystemPromptBytes: 10})
	chat, err := l.alice.CreateChat(l.ctx, sdk.CreateChatRequest{})
	require.NoError(t, err)
	ok, long := strings.Repeat("x", 10), strings.Repeat("x", 11)
	require.NoError(t, l.alice.UpdateChat(l.ctx, chat.ID, sdk.UpdateChatRequest{SystemPrompt: &ok}))
	err = l.alice.UpdateChat(l.ctx, chat.ID, sdk.UpdateChatRequest{SystemPrompt: &long})
	requireCode(t, err, http.StatusRequestEntityTooLarge, sdk.CodeTooLarge)
	got, err := l.alice.Chat(l.ctx, chat.ID)
	require.NoError(t, err)
	require.Equal(t, ok, got.SystemPrompt)
}

func roles(ms []sdk.ChatMessage) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Role)
	}
	return out
}

func allText(t *testing.T, ms []sdk.ChatMessage) string {
	t.Helper()
	var b strings.Builder
	for _, m := range ms {
		parts, err := m.Parts()
		require.NoError(t, err)
		for _, p := range parts {
			b.WriteString(p.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func (d *fixture) bobID(t *testing.T) uuid.UUID {
	t.Helper()
	var me sdk.User
	require.NoError(t, d.bob.Do(d.ctx, http.MethodGet, "/users/me", nil, &me))
	return me.ID
}

// postRaw posts body as JSON and returns the answer's status.
func (d *fixture) postRaw(t *testing.T, c *sdk.Client, path string, body []byte) int {
	t.Helper()
	req, err := http.NewRequestWithContext(d.ctx, http.MethodPost, c.BaseURL+"/api/v2"+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode
}
