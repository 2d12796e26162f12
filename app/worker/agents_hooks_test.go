package worker

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/hooks/hookstest"
	"github.com/chatd/chatd/app/tools/agents"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// A subagent's prompt is a prompt submission like any other (spec:
// "including queued messages and subagent prompts"): a spawn dispatches
// the child's session_start and user_prompt_submit, a message_agent its
// user_prompt_submit; the consumer can replace the prompt or deny it (the
// tool call fails and no child is made), and a re-run of the same call
// repeats the same event ids.
func TestSubagentPromptsGoThroughTheHooks(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		c := hookstest.New(t)
		d, err := hooks.New(hooks.Config{
			URL: c.Server.URL, Secret: base64.StdEncoding.EncodeToString([]byte("secret")), Client: c.Server.Client(),
		})
		require.NoError(t, err)
		routed := &routedProvider{}
		models := &agentModels{m: Model{ID: uuid.New(), Provider: routed, Name: "fake-model"}, bad: uuid.New()}
		g := &agentRig{fixture: setupWith(t, newStore(t), Config{Subagents: true}, func(deps *Deps) {
			deps.Models = models
			deps.Hooks = d
		}), routed: routed, models: models}
		parent := g.create("")

		c.SetAnswer(func(r hooks.Request) (int, string) {
			if r.Event == hooks.UserPromptSubmit {
				return http.StatusOK, `{"updated_prompt":"do it, politely"}`
			}
			return http.StatusOK, ""
		})
		out, err := g.run(parent, "c1", agents.ToolSpawnAgent, `{"prompt":"do it"}`)
		require.NoError(t, err)
		child := uuid.MustParse(out["chat_id"].(string))
		got := c.Events()
		require.Len(t, got, 2)
		require.Equal(t, []hooks.Event{hooks.SessionStart, hooks.UserPromptSubmit}, []hooks.Event{got[0].Event, got[1].Event})
		for _, r := range got {
			require.Equal(t, child, r.ChatID, "the events are the child's")
		}
		var first []map[string]any
		for _, m := range g.peekMessages(child) {
			if m.Role == store.RoleUser {
				require.NoError(t, json.Unmarshal(m.Content, &first))
				break
			}
		}
		require.NotEmpty(t, first)
		require.Equal(t, "do it, politely", first[0]["text"], "the child got the replaced prompt")

		// The same call again (a re-run after a crash): the same event ids.
		_, err = g.run(parent, "c1", agents.ToolSpawnAgent, `{"prompt":"do it"}`)
		require.NoError(t, err)
		again := c.Events()[2:]
		require.Len(t, again, 2)
		require.Equal(t, got[0].ID, again[0].ID)
		require.Equal(t, got[1].ID, again[1].ID)

		// message_agent: user_prompt_submit only.
		_, err = g.run(parent, "c2", agents.ToolMessageAgent, `{"chat_id":"`+child.String()+`","message":"and then?"}`)
		require.NoError(t, err)
		msg := c.Events()[4:]
		require.Len(t, msg, 1)
		require.Equal(t, hooks.UserPromptSubmit, msg[0].Event)
		require.Equal(t, child, msg[0].ChatID)

		// A denial fails the spawn before any child exists.
		c.SetAnswer(func(r hooks.Request) (int, string) {
			if r.Event == hooks.UserPromptSubmit {
				return http.StatusOK, `{"decision":"deny","reason":"no more helpers"}`
			}
			return http.StatusOK, ""
		})
		_, err = g.run(parent, "c3", agents.ToolSpawnAgent, `{"prompt":"another"}`)
		require.ErrorContains(t, err, "no more helpers")
		require.Len(t, g.children(parent), 1, "no child for a denied prompt")
	})
}
