package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/modelconfig"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

func chatIDs(cs []sdk.Chat) []uuid.UUID {
	out := []uuid.UUID{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func TestListChats(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		create := func(title string, labels map[string]string) uuid.UUID {
			c, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{Title: title, Labels: labels})
			require.NoError(t, err)
			return c.ID
		}
		alpha := create("Alpha report", map[string]string{"team": "blue", "env": "prod"})
		beta := create("beta REPORT", map[string]string{"team": "blue", "env": "dev"})
		gamma := create("Gamma", map[string]string{"team": "red"})
		percent := create("50% off", nil)
		underscore := create("under_score", map[string]string{"team": "a:b"})
		archived := create("Archived report", map[string]string{"team": "blue"})
		require.NoError(t, h.alice.UpdateChat(h.ctx, archived, sdk.UpdateChatRequest{Archived: ptr(true)}))
		// Bob's chats never show up in alice's listings.
		bob, _, _ := h.newUser(t, "bob")
		_, err := bob.CreateChat(h.ctx, sdk.CreateChatRequest{Title: "Bob's report", Labels: map[string]string{"team": "blue"}})
		require.NoError(t, err)

		list := func(opts sdk.ListChatsOptions) []uuid.UUID {
			t.Helper()
			cs, err := h.alice.ListChats(h.ctx, opts)
			require.NoError(t, err)
			return chatIDs(cs)
		}
		unarchived := []uuid.UUID{alpha, beta, gamma, percent, underscore}

		t.Run("archived filter", func(t *testing.T) {
			require.ElementsMatch(t, unarchived, list(sdk.ListChatsOptions{}), "archived chats are excluded by default")
			require.ElementsMatch(t, unarchived, list(sdk.ListChatsOptions{Archived: "false"}))
			require.Equal(t, []uuid.UUID{archived}, list(sdk.ListChatsOptions{Archived: "true"}))
			require.ElementsMatch(t, append(unarchived, archived), list(sdk.ListChatsOptions{Archived: "all"}))
		})

		t.Run("newest first, paged with after_id", func(t *testing.T) {
			all := list(sdk.ListChatsOptions{Archived: "all"})
			require.Len(t, all, 6)
			// updated_at descending: the last created comes first, except the
			// archived one, which archiving touched last.
			require.Equal(t, archived, all[0])
			require.Equal(t, []uuid.UUID{underscore, percent, gamma, beta, alpha}, all[1:])
			var paged []uuid.UUID
			after := uuid.Nil
			for range 10 {
				page := list(sdk.ListChatsOptions{Archived: "all", Limit: 4, AfterID: after})
				require.LessOrEqual(t, len(page), 4)
				if len(page) == 0 {
					break
				}
				paged = append(paged, page...)
				after = page[len(page)-1]
			}
			require.Equal(t, all, paged)
			require.Len(t, list(sdk.ListChatsOptions{Archived: "all", Limit: 1}), 1)
			require.Empty(t, list(sdk.ListChatsOptions{Archived: "all", AfterID: alpha}), "nothing after the oldest")
			require.Empty(t, list(sdk.ListChatsOptions{Archived: "all", AfterID: uuid.New()}), "an unknown cursor selects nothing")
		})

		t.Run("q is a case-insensitive title substring", func(t *testing.T) {
			require.ElementsMatch(t, []uuid.UUID{alpha, beta}, list(sdk.ListChatsOptions{Query: "report"}))
			require.ElementsMatch(t, []uuid.UUID{alpha, beta}, list(sdk.ListChatsOptions{Query: "RePoRt"}))
			require.ElementsMatch(t, []uuid.UUID{alpha, beta, archived}, list(sdk.ListChatsOptions{Query: "report", Archived: "all"}))
			require.Equal(t, []uuid.UUID{gamma}, list(sdk.ListChatsOptions{Query: "amm"}))
			require.Empty(t, list(sdk.ListChatsOptions{Query: "nothing like this"}))
			// LIKE wildcards are literal.
			require.Equal(t, []uuid.UUID{percent}, list(sdk.ListChatsOptions{Query: "%"}))
			require.Equal(t, []uuid.UUID{underscore}, list(sdk.ListChatsOptions{Query: "_"}))
			require.Equal(t, []uuid.UUID{underscore}, list(sdk.ListChatsOptions{Query: `r_s`}))
		})

		t.Run("q takes Coder's search terms", func(t *testing.T) {
			require.Equal(t, []uuid.UUID{archived}, list(sdk.ListChatsOptions{Query: "archived:true"}))
			require.Equal(t, []uuid.UUID{archived}, list(sdk.ListChatsOptions{Query: "report archived:true"}))
			require.ElementsMatch(t, []uuid.UUID{alpha, beta}, list(sdk.ListChatsOptions{Query: "archived:false report"}))
			require.ElementsMatch(t, append(unarchived, archived), list(sdk.ListChatsOptions{Query: "archived:true", Archived: "all"}),
				"the archived parameter wins over the term")
			require.ElementsMatch(t, []uuid.UUID{alpha, beta}, list(sdk.ListChatsOptions{Query: "source:created_by_me report"}))
			// An admin lists everyone's chats, unless asking for their own.
			all, err := h.admin.ListChats(h.ctx, sdk.ListChatsOptions{Query: "report"})
			require.NoError(t, err)
			require.Len(t, all, 3, "alice's two and bob's")
			own, err := h.admin.ListChats(h.ctx, sdk.ListChatsOptions{Query: "report source:created_by_me"})
			require.NoError(t, err)
			require.Empty(t, own)
		})

		t.Run("q folds non-ASCII case", func(t *testing.T) {
			h2 := setup(t, newStore)
			c, err := h2.alice.CreateChat(h2.ctx, sdk.CreateChatRequest{Title: "Ärger im Büro"})
			require.NoError(t, err)
			cs, err := h2.alice.ListChats(h2.ctx, sdk.ListChatsOptions{Query: "ärger"})
			require.NoError(t, err)
			require.Equal(t, []uuid.UUID{c.ID}, chatIDs(cs), "both stores must agree (DESIGN.md rule 3)")
		})

		t.Run("label filter", func(t *testing.T) {
			require.ElementsMatch(t, []uuid.UUID{alpha, beta}, list(sdk.ListChatsOptions{Labels: map[string]string{"team": "blue"}}))
			require.Equal(t, []uuid.UUID{alpha}, list(sdk.ListChatsOptions{Labels: map[string]string{"team": "blue", "env": "prod"}}), "every label must match")
			require.Equal(t, []uuid.UUID{underscore}, list(sdk.ListChatsOptions{Labels: map[string]string{"team": "a:b"}}), "the value may hold ':'")
			require.Empty(t, list(sdk.ListChatsOptions{Labels: map[string]string{"team": "green"}}))
			require.Empty(t, list(sdk.ListChatsOptions{Labels: map[string]string{"nope": "blue"}}))
			require.Equal(t, []uuid.UUID{archived}, list(sdk.ListChatsOptions{Labels: map[string]string{"team": "blue"}, Archived: "true"}))
		})

		t.Run("labels and pins round-trip", func(t *testing.T) {
			require.NoError(t, h.alice.UpdateChat(h.ctx, gamma, sdk.UpdateChatRequest{
				PinOrder: ptr(int64(1)), Labels: &map[string]string{"team": "green"},
			}))
			c, err := h.alice.Chat(h.ctx, gamma)
			require.NoError(t, err)
			require.Equal(t, int64(1), c.PinOrder)
			require.Equal(t, map[string]string{"team": "green"}, c.Labels)
			require.NoError(t, h.alice.UpdateChat(h.ctx, gamma, sdk.UpdateChatRequest{PinOrder: ptr(int64(0)), Labels: &map[string]string{}}))
			c, err = h.alice.Chat(h.ctx, gamma)
			require.NoError(t, err)
			require.Equal(t, int64(0), c.PinOrder)
			require.Empty(t, c.Labels)
		})
	})
}

func TestMessagesPaging(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		s := h.seed(t, W) // user, assistant
		for range 3 {
			_, err := h.alice.SendMessage(h.ctx, s.id, sdk.CreateChatMessageRequest{Content: sdk.Text("more")})
			require.NoError(t, err)
			h.acquire(t, s.id)
			h.commitAssistant(t, s.id, "reply")
			h.finishTurn(t, s.id)
		}
		all := h.view(t, s.id).messageIDs()
		require.Len(t, all, 8)

		page, err := h.alice.ChatMessages(h.ctx, s.id, sdk.MessagesOptions{Limit: 3})
		require.NoError(t, err)
		require.True(t, page.HasMore)
		require.Equal(t, all[5:], view{Messages: page}.messageIDs(), "without a cursor: the newest page, oldest first")

		page, err = h.alice.ChatMessages(h.ctx, s.id, sdk.MessagesOptions{Limit: 3, BeforeID: all[5]})
		require.NoError(t, err)
		require.True(t, page.HasMore)
		require.Equal(t, all[2:5], view{Messages: page}.messageIDs())

		page, err = h.alice.ChatMessages(h.ctx, s.id, sdk.MessagesOptions{Limit: 3, BeforeID: all[2]})
		require.NoError(t, err)
		require.False(t, page.HasMore)
		require.Equal(t, all[:2], view{Messages: page}.messageIDs())

		page, err = h.alice.ChatMessages(h.ctx, s.id, sdk.MessagesOptions{Limit: 3, AfterID: all[1]})
		require.NoError(t, err)
		require.True(t, page.HasMore)
		require.Equal(t, all[2:5], view{Messages: page}.messageIDs())
	})
}

func TestTitles(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)

		t.Run("fallback from the prompt", func(t *testing.T) {
			c, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{Content: sdk.Text("  How do I   bake bread?\nI have flour.")})
			require.NoError(t, err)
			require.Equal(t, "How do I bake bread?", c.Title, "first line, whitespace collapsed")
			require.Equal(t, "fallback", c.TitleSource)

			c, err = h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{Content: sdk.Text(strings.Repeat("word ", 40))})
			require.NoError(t, err)
			require.LessOrEqual(t, utf8.RuneCountInString(c.Title), 61)
			require.True(t, strings.HasSuffix(c.Title, "…"), "a long prompt is cut: %q", c.Title)
		})

		t.Run("created empty is New Chat until the first message", func(t *testing.T) {
			c, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{})
			require.NoError(t, err)
			require.Equal(t, chatstate.DefaultTitle, c.Title)
			require.Equal(t, "New Chat", c.Title)
			require.Equal(t, "fallback", c.TitleSource)
			_, err = h.alice.SendMessage(h.ctx, c.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("Plan a trip to Lisbon")})
			require.NoError(t, err)
			got, err := h.alice.Chat(h.ctx, c.ID)
			require.NoError(t, err)
			require.Equal(t, "Plan a trip to Lisbon", got.Title)
			require.Equal(t, "fallback", got.TitleSource)
			// Later messages do not retitle.
			_, err = h.alice.SendMessage(h.ctx, c.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("and Porto")})
			require.NoError(t, err)
			got, err = h.alice.Chat(h.ctx, c.ID)
			require.NoError(t, err)
			require.Equal(t, "Plan a trip to Lisbon", got.Title)
		})

		t.Run("a given title is the user's", func(t *testing.T) {
			c, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{Title: "  Mine  "})
			require.NoError(t, err)
			require.Equal(t, "Mine", c.Title)
			require.Equal(t, "user", c.TitleSource)
			_, err = h.alice.SendMessage(h.ctx, c.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("first words")})
			require.NoError(t, err)
			got, err := h.alice.Chat(h.ctx, c.ID)
			require.NoError(t, err)
			require.Equal(t, "Mine", got.Title, "the first message does not replace a user title")
		})

		t.Run("PATCH title writes a user title", func(t *testing.T) {
			c, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{Content: sdk.Text("some prompt")})
			require.NoError(t, err)
			require.NoError(t, h.alice.UpdateChat(h.ctx, c.ID, sdk.UpdateChatRequest{Title: ptr(" Renamed ")}))
			got, err := h.alice.Chat(h.ctx, c.ID)
			require.NoError(t, err)
			require.Equal(t, "Renamed", got.Title)
			require.Equal(t, "user", got.TitleSource)
			require.False(t, got.TitleUpdatedAt.Before(c.TitleUpdatedAt))

			// Renaming an empty chat before its first message sticks too.
			e, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{})
			require.NoError(t, err)
			require.NoError(t, h.alice.UpdateChat(h.ctx, e.ID, sdk.UpdateChatRequest{Title: ptr("New Chat")}))
			_, err = h.alice.SendMessage(h.ctx, e.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("hello")})
			require.NoError(t, err)
			got, err = h.alice.Chat(h.ctx, e.ID)
			require.NoError(t, err)
			require.Equal(t, "New Chat", got.Title, "a user title, even one spelled New Chat, is kept")
			require.Equal(t, "user", got.TitleSource)
		})
	})
}

// The chat routes answer the same under /api/experimental (codersdk's
// ExperimentalClient).
func TestExperimentalPrefix(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		exp := h.client(h.aliceToken)
		exp.Prefix = "/api/experimental"

		chat, err := exp.CreateChat(h.ctx, sdk.CreateChatRequest{Content: sdk.Text("hello")})
		require.NoError(t, err)
		got, err := h.alice.Chat(h.ctx, chat.ID)
		require.NoError(t, err, "a chat made under one prefix is the same under the other")
		require.Equal(t, chat.ID, got.ID)

		h.acquire(t, chat.ID)
		res, err := exp.SendMessage(h.ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("more")})
		require.NoError(t, err)
		require.True(t, res.Queued)
		msgs, err := exp.ChatMessages(h.ctx, chat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		require.Len(t, msgs.QueuedMessages, 1)
		require.NoError(t, exp.DeleteQueuedMessage(h.ctx, chat.ID, msgs.QueuedMessages[0].ID))
		_, err = exp.Interrupt(h.ctx, chat.ID)
		require.NoError(t, err)
		h.requireState(t, chat.ID, I0)

		list, err := exp.ListChats(h.ctx, sdk.ListChatsOptions{})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{chat.ID}, chatIDs(list))
		models, err := exp.Models(h.ctx)
		require.NoError(t, err)
		require.NotEmpty(t, models.Models)
		me, err := exp.Me(h.ctx)
		require.NoError(t, err)
		require.Equal(t, h.aliceID, me.ID)
		require.NoError(t, exp.UpdateChat(h.ctx, chat.ID, sdk.UpdateChatRequest{Title: ptr("via experimental")}))
		require.NoError(t, exp.DeleteChat(h.ctx, chat.ID))
		_, err = h.alice.Chat(h.ctx, chat.ID)
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
	})
}

func TestHealthMetricsModels(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)

		r := h.raw(t, "GET", "/healthz", nil)
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, r.header.Get("Content-Type"), "application/json")
		var health map[string]string
		require.NoError(t, json.Unmarshal(r.body, &health))
		require.Equal(t, "ok", health["status"])

		models, err := h.alice.Models(h.ctx)
		require.NoError(t, err)
		require.Len(t, models.Models, 1)
		demo := models.Models[0]
		require.Equal(t, modelconfig.ModelID(modelconfig.DemoModelName, modelconfig.DemoModelName), demo.ID)
		require.Equal(t, "demo", demo.Provider)
		require.Equal(t, "demo", demo.Model)
		require.NotEmpty(t, demo.DisplayName)
		require.True(t, demo.Default)
		require.True(t, demo.IsDefault)
		require.True(t, demo.Enabled)
		require.Len(t, models.Providers, 1)
		require.Equal(t, "demo", models.Providers[0].Provider)
		require.Equal(t, []sdk.ChatModel{demo}, models.Providers[0].Models)

		// Coder's model-config listing answers next to the {chat} routes.
		var configs []sdk.ChatModelConfig
		require.NoError(t, h.alice.Do(h.ctx, "GET", "/chats/model-configs", nil, &configs))
		require.Len(t, configs, 1)
		require.Equal(t, demo.ID, configs[0].ID)
		require.True(t, configs[0].IsDefault)

		_, err = h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{})
		require.NoError(t, err)
		_, err = h.alice.Chat(h.ctx, uuid.New())
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)

		// /metrics is for admins on the main address.
		requireJSONError(t, h.raw(t, "GET", "/metrics", nil), http.StatusUnauthorized, sdk.CodeUnauthorized)
		requireJSONError(t, h.raw(t, "GET", "/metrics", nil, "Authorization", "Bearer "+h.aliceToken), http.StatusForbidden, sdk.CodeForbidden)
		r = h.raw(t, "GET", "/metrics", nil, "Authorization", "Bearer "+h.adminToken)
		require.Equal(t, http.StatusOK, r.status)
		metrics := string(r.body)
		require.Contains(t, metrics, "chatd_http_requests_total")
		require.Contains(t, metrics, `chatd_http_requests_total{code="201",route="POST /api/*/chats"}`)
		require.Contains(t, metrics, `chatd_http_requests_total{code="404",route="GET /api/*/chats/{chat}"}`)
		require.Contains(t, metrics, `chatd_http_requests_total{code="200",route="GET /healthz"}`)
		require.Contains(t, metrics, "chatd_http_request_duration_seconds")
	})
}

func TestTooManyLabelFilters(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		q := "/api/v2/chats?"
		for i := range 40 {
			q += fmt.Sprintf("label=k%d:v&", i)
		}
		requireJSONError(t, h.raw(t, "GET", q, nil, "Authorization", "Bearer "+h.aliceToken), http.StatusBadRequest, sdk.CodeValidation)
	})
}
