package worker_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/projects"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// toolDescriptions maps the tools a provider request offers to their
// descriptions (OpenAI nests them under "function").
func toolDescriptions(t testing.TB, r llmtest.Request) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tool := range asList(r.JSON(t)["tools"]) {
		m := asMap(tool)
		if fn := asMap(m["function"]); fn != nil {
			m = fn
		}
		name, _ := m["name"].(string)
		out[name], _ = m["description"].(string)
	}
	return out
}

// field reads one key of a JSON object tool result (nil when absent).
func field(t testing.TB, result, key string) any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(result), &m), "result %s", result)
	return m[key]
}

// systemText joins the system messages of a request.
func (r wireRequest) systemText() string {
	var b strings.Builder
	for _, m := range r.Messages {
		if m.Role == "system" {
			b.WriteString(m.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestProjectMemoryEndToEnd: a model's save_memory lands in the project's
// memory, and the next step's read_memory description shows it in the
// index; the project's instructions are in the system prompt.
func TestProjectMemoryEndToEnd(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		for _, prov := range providers {
			t.Run(prov.name, func(t *testing.T) {
				t.Parallel()
				e := setup(t, newStore(t), prov, []llmtest.Reply{
					llmtest.ToolCall("call_1", "save_memory", `{"name":"user.name","content":"The user is Ada.\nShe likes tea."}`),
					llmtest.TextChunks("Noted."),
				})
				p, err := e.c.CreateProject(e.ctx, sdk.CreateProjectRequest{Name: "Tea", Instructions: "Answer in French."})
				require.NoError(t, err)
				_, err = e.c.PutMemory(e.ctx, p.ID, "style", "Terse answers.")
				require.NoError(t, err)

				chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("I am Ada."), SystemPrompt: "Be kind.", ProjectID: &p.ID})
				done := e.waitStatus(chat.ID, sdk.ChatStatusWaiting)
				require.Nil(t, done.LastError)

				reqs := e.llm.Requests()
				require.Len(t, reqs, 2)
				first, second := decodeRequest(t, reqs[0]), decodeRequest(t, reqs[1])
				sys := first.systemText()
				require.Contains(t, sys, "Answer in French.")
				require.Contains(t, sys, "durable memory")
				require.Contains(t, sys, "Be kind.")
				require.Less(t, strings.Index(sys, "Answer in French."), strings.Index(sys, "Be kind."), "the project's block comes first")
				require.Equal(t, sys, second.systemText(), "the system prompt does not change with the memory")
				require.ElementsMatch(t, []string{"delete_memory", "read_memory", "save_memory"}, first.Tools)

				before, after := toolDescriptions(t, reqs[0])["read_memory"], toolDescriptions(t, reqs[1])["read_memory"]
				require.Contains(t, before, "- style: Terse answers.")
				require.NotContains(t, before, "user.name")
				require.Contains(t, after, "- style: Terse answers.")
				require.Contains(t, after, "- user.name: The user is Ada.")
				require.NotContains(t, after, "tea", "the index has the first line only")

				result, ok := second.toolResult("call_1")
				require.True(t, ok)
				require.Equal(t, true, field(t, result, "created"))
				require.Nil(t, field(t, result, "reminder"))

				m, err := e.c.Memory(e.ctx, p.ID, "user.name")
				require.NoError(t, err)
				require.Equal(t, "The user is Ada.\nShe likes tea.", m.Content)
				require.Equal(t, &chat.ID, m.ChatID, "the memory names the chat that wrote it")
			})
		}
	})
}

// TestMemoryCapAndReminder: from 180 memories a save carries a reminder;
// at 200 a save of a new name is an error result that says to delete or
// merge, and replacing an existing name still works.
func TestMemoryCapAndReminder(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		prov := providers[0]
		e := setup(t, newStore(t), prov, []llmtest.Reply{
			llmtest.ToolCall("call_1", "save_memory", `{"name":"last","content":"the 200th"}`),
			llmtest.ToolCall("call_2", "save_memory", `{"name":"too-many","content":"x"}`),
			llmtest.ToolCall("call_3", "save_memory", `{"name":"m001","content":"replaced"}`),
			llmtest.ToolCall("call_4", "delete_memory", `{"name":"m002"}`),
			llmtest.ToolCall("call_5", "read_memory", `{"name":"m001"}`),
			llmtest.TextChunks("Pruned."),
		})
		p, err := e.c.CreateProject(e.ctx, sdk.CreateProjectRequest{Name: "Full"})
		require.NoError(t, err)
		svc := projects.New(e.app.Internals().Store, nil, projects.Limits{})
		for i := range projects.MaxMemories - 1 {
			_, err := svc.SaveMemory(e.ctx, p.ID, fmt.Sprintf("m%03d", i), "x", uuid.NullUUID{})
			require.NoError(t, err)
		}
		chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("Save things."), ProjectID: &p.ID})
		done := e.waitStatus(chat.ID, sdk.ChatStatusWaiting)
		require.Nil(t, done.LastError)
		reqs := e.llm.Requests()
		require.Len(t, reqs, 6)
		result := func(i int, id string) string {
			r, ok := decodeRequest(t, reqs[i]).toolResult(id)
			require.True(t, ok, "request %d carries the result of %s", i, id)
			return r
		}
		require.EqualValues(t, 200, field(t, result(1, "call_1"), "count"))
		require.Contains(t, field(t, result(1, "call_1"), "reminder"), "Prune now")
		full := result(2, "call_2")
		require.Contains(t, full, "memory is full")
		require.Contains(t, full, "delete")
		require.Contains(t, full, "fold")
		require.Equal(t, false, field(t, result(3, "call_3"), "created"))
		require.NotNil(t, field(t, result(3, "call_3"), "reminder"))
		require.Equal(t, true, field(t, result(4, "call_4"), "existed"))
		require.EqualValues(t, 199, field(t, result(4, "call_4"), "count"))
		require.Contains(t, result(5, "call_5"), "replaced")
		require.Contains(t, toolDescriptions(t, reqs[1])["read_memory"], "200 of at most 200")

		// The journal records each tool's effect class: a save or delete
		// re-run after a crash is harmless, a read is pure.
		want := map[string]string{"call_1": store.EffectIdempotent, "call_4": store.EffectIdempotent, "call_5": store.EffectPure}
		require.NoError(t, e.app.Internals().Store.ReadTx(e.ctx, func(tx store.Reader) error {
			for id, effect := range want {
				entry, err := tx.JournalGet(e.ctx, chat.ID, id)
				require.NoError(t, err)
				require.Equal(t, effect, entry.Effect, id)
				require.Equal(t, store.JournalCompleted, entry.State, id)
			}
			return nil
		}))

		_, err = e.c.Memory(e.ctx, p.ID, "too-many")
		var apiErr *sdk.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, sdk.CodeNotFound, apiErr.Code)
	})
}

// TestMemoryToolsOnlyInProjects: chats outside a project have no memory
// tools and no project block; a subagent chat in a project gets the
// project's instructions but no memory (only root chats have it).
func TestMemoryToolsOnlyInProjects(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		e := setup(t, newStore(t), providers[0], []llmtest.Reply{llmtest.TextChunks("Hi."), llmtest.TextChunks("Salut.")})
		chat := e.create(sdk.CreateChatRequest{Content: sdk.Text("hello")})
		e.waitStatus(chat.ID, sdk.ChatStatusWaiting)
		r := decodeRequest(t, e.llm.Requests()[0])
		require.Empty(t, r.Tools)
		require.Empty(t, r.systemText())

		p, err := e.c.CreateProject(e.ctx, sdk.CreateProjectRequest{Name: "P", Instructions: "Answer in French."})
		require.NoError(t, err)
		root := e.create(sdk.CreateChatRequest{ProjectID: &p.ID}) // waiting: no model call
		child := e.create(sdk.CreateChatRequest{Content: sdk.Text("hello"), ParentChatID: &root.ID})
		require.Equal(t, &p.ID, child.ProjectID)
		e.waitStatus(child.ID, sdk.ChatStatusWaiting)
		reqs := e.llm.Requests()
		require.Len(t, reqs, 2)
		r = decodeRequest(t, reqs[1])
		require.Empty(t, r.Tools, "no memory tools for a subagent chat")
		require.Contains(t, r.systemText(), "Answer in French.")
		require.NotContains(t, r.systemText(), "durable memory")
	})
}
