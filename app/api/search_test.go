package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// q matches message text too; a chat matched by text carries a snippet
// around the first match of its oldest matching message.
func TestSearchMessageText(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		fish, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{Title: "Aquarium", Content: sdk.Text("Where is the tank?")})
		require.NoError(t, err)
		h.acquire(t, fish.ID)
		long := strings.Repeat("a", 100) + " the Zebrafish swims\nhere " + strings.Repeat("b", 100)
		h.commitAssistant(t, fish.ID, long)
		h.finishTurn(t, fish.ID)
		titled, err := h.alice.CreateChat(h.ctx, sdk.CreateChatRequest{Title: "Zebrafish care"})
		require.NoError(t, err)

		raw := func(q string) []map[string]json.RawMessage {
			t.Helper()
			var out []map[string]json.RawMessage
			require.NoError(t, h.alice.Do(h.ctx, http.MethodGet, "/chats?q="+url.QueryEscape(q), nil, &out))
			return out
		}
		cs, err := h.alice.ListChats(h.ctx, sdk.ListChatsOptions{Query: "zebrafish"})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{titled.ID, fish.ID}, chatIDs(cs))
		require.Nil(t, cs[0].SearchSnippet, "a title match has no snippet")
		require.NotNil(t, cs[1].SearchSnippet)
		msgs, err := h.alice.ChatMessages(h.ctx, fish.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		require.Equal(t, msgs.Messages[len(msgs.Messages)-1].ID, cs[1].SearchSnippet.MessageID)
		require.Equal(t, "…"+strings.Repeat("a", 55)+" the Zebrafish swims here "+strings.Repeat("b", 48)+"…", cs[1].SearchSnippet.Text)

		// The user's message matches too, and a short term.
		cs, err = h.alice.ListChats(h.ctx, sdk.ListChatsOptions{Query: "TANK?"})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{fish.ID}, chatIDs(cs))
		require.Equal(t, "Where is the tank?", cs[0].SearchSnippet.Text)
		require.Equal(t, msgs.Messages[0].ID, cs[0].SearchSnippet.MessageID)
		cs, err = h.alice.ListChats(h.ctx, sdk.ListChatsOptions{Query: "k?"})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{fish.ID}, chatIDs(cs))
		require.Equal(t, "Where is the tank?", cs[0].SearchSnippet.Text)

		// Coder's terms still apply around the free text.
		cs, err = h.alice.ListChats(h.ctx, sdk.ListChatsOptions{Query: "archived:true swims"})
		require.NoError(t, err)
		require.Empty(t, cs)
		cs, err = h.alice.ListChats(h.ctx, sdk.ListChatsOptions{Query: "swims source:created_by_me"})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{fish.ID}, chatIDs(cs))

		// The key is there only on a text match of a q listing.
		for _, c := range raw("") {
			require.NotContains(t, c, "search_snippet")
		}
		for _, c := range raw("archived:false") {
			require.NotContains(t, c, "search_snippet")
		}
		got := raw("swims")
		require.Len(t, got, 1)
		require.JSONEq(t, `{"message_id":`+jsonInt(cs[0].SearchSnippet.MessageID)+`,"text":`+jsonString(cs[0].SearchSnippet.Text)+`,"active_branch":true}`, string(got[0]["search_snippet"]))

		// Other users' messages are not searched.
		bob, _, _ := h.newUser(t, "bob")
		cs, err = bob.ListChats(h.ctx, sdk.ListChatsOptions{Query: "zebrafish"})
		require.NoError(t, err)
		require.Empty(t, cs)
	})
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
