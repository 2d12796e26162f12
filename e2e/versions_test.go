package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// textOf is a message's first text part.
func textOf(t *testing.T, m sdk.ChatMessage) string {
	t.Helper()
	parts, err := m.Parts()
	require.NoError(t, err)
	for _, p := range parts {
		if p.Type == sdk.PartText {
			return p.Text
		}
	}
	return ""
}

func textsOfMessages(t *testing.T, ms []sdk.ChatMessage) []string {
	t.Helper()
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, textOf(t, m))
	}
	return out
}

// TestVersionsEndToEnd: over HTTP and the stream, on both stores, an edit
// and a regenerate add versions (parent_id, sibling_ids), a branch switch
// shows the other version to an open stream as a history reset and is
// refused while the chat runs, a branch reads without switching, a fork
// copies a branch into a new waiting chat, and search finds a hidden
// version and says it is off the active branch.
func TestVersionsEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		d := setup(t, newStore)
		ctx := d.ctx
		chat, err := d.alice.CreateChat(ctx, sdk.CreateChatRequest{Title: "versions"})
		require.NoError(t, err)
		history := func() []sdk.ChatMessage {
			page, err := d.alice.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{})
			require.NoError(t, err)
			return page.Messages
		}
		d.llm.Enqueue(llmtest.TextChunks("answer one"))
		_, err = d.alice.SendMessage(ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("question one")})
		require.NoError(t, err)
		waitStatus(t, ctx, d.alice, chat.ID, sdk.ChatStatusWaiting)
		v1 := history()
		require.Equal(t, []string{"question one", "answer one"}, textsOfMessages(t, v1))
		q1, a1 := v1[0], v1[1]
		require.Equal(t, []int64{q1.ID}, q1.SiblingIDs)
		require.Equal(t, &q1.ID, a1.ParentID)

		// Edit: a new version of q1; the old branch is hidden, not deleted.
		d.llm.Enqueue(llmtest.TextChunks("answer two"))
		edit, err := d.alice.EditMessage(ctx, chat.ID, q1.ID, sdk.EditChatMessageRequest{Content: sdk.Text("question two")})
		require.NoError(t, err)
		require.Equal(t, []int64{q1.ID, a1.ID}, edit.DeletedMessageIDs)
		require.Equal(t, q1.ParentID, edit.Message.ParentID)
		require.Equal(t, []int64{q1.ID, edit.Message.ID}, edit.Message.SiblingIDs)
		waitStatus(t, ctx, d.alice, chat.ID, sdk.ChatStatusWaiting)
		v2 := history()
		require.Equal(t, []string{"question two", "answer two"}, textsOfMessages(t, v2))
		q2, a2 := v2[0], v2[1]

		// Regenerate: a sibling reply from the same context.
		d.llm.Enqueue(llmtest.TextChunks("answer three"))
		regen, err := d.alice.RegenerateMessage(ctx, chat.ID, a2.ID, sdk.RegenerateMessageRequest{})
		require.NoError(t, err)
		require.Equal(t, []int64{a2.ID}, regen.DeletedMessageIDs)
		waitStatus(t, ctx, d.alice, chat.ID, sdk.ChatStatusWaiting)
		v3 := history()
		require.Equal(t, []string{"question two", "answer three"}, textsOfMessages(t, v3))
		a3 := v3[1]
		require.Equal(t, &q2.ID, a3.ParentID)
		require.Equal(t, []int64{a2.ID, a3.ID}, a3.SiblingIDs)
		_, err = d.alice.RegenerateMessage(ctx, chat.ID, q2.ID, sdk.RegenerateMessageRequest{})
		requireCode(t, err, http.StatusBadRequest, sdk.CodeValidation)

		// The branch through a2 reads without switching.
		branch, err := d.alice.BranchMessages(ctx, chat.ID, a2.ID)
		require.NoError(t, err)
		require.Equal(t, []string{"question two", "answer two"}, textsOfMessages(t, branch.Messages))
		require.Equal(t, []string{"question two", "answer three"}, textsOfMessages(t, history()))

		// An open stream sees the switch as a history reset and the branch.
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		conn, _, err := websocket.Dial(sctx, "ws"+strings.TrimPrefix(d.srv.URL, "http")+"/api/v2/chats/"+chat.ID.String()+"/stream",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + d.alice.Token}}})
		require.NoError(t, err)
		defer conn.CloseNow()
		conn.SetReadLimit(8 << 20)
		var seen []streamEvent
		until := func(what string, ok func(streamEvent) bool) {
			t.Helper()
			for {
				_, raw, err := conn.Read(sctx)
				require.NoError(t, err, "waiting for %s", what)
				var events []streamEvent
				require.NoError(t, json.Unmarshal(raw, &events))
				for _, e := range events {
					seen = append(seen, e)
					if ok(e) {
						return
					}
				}
			}
		}
		isText := func(s string) func(streamEvent) bool {
			return func(e streamEvent) bool { return e.Type == "message" && e.Message != nil && textOf(t, *e.Message) == s }
		}
		until("the bootstrap", isText("answer three"))
		sw, err := d.alice.SwitchBranch(ctx, chat.ID, q1.ID)
		require.NoError(t, err)
		require.Equal(t, []int64{q2.ID, a3.ID}, sw.DeletedMessageIDs)
		require.Equal(t, []string{"question one", "answer one"}, textsOfMessages(t, sw.Messages))
		require.Equal(t, []int64{q1.ID, q2.ID}, sw.Messages[0].SiblingIDs)
		seen = nil
		until("the other branch", isText("answer one"))
		require.Equal(t, "history_reset", seen[0].Type, "the stream starts the branch over")
		require.Equal(t, []string{"question one", "answer one"}, textsOfMessages(t, history()))

		// Search finds the hidden version and says so.
		cs, err := d.alice.ListChats(ctx, sdk.ListChatsOptions{Query: "answer three"})
		require.NoError(t, err)
		require.Len(t, cs, 1)
		require.Equal(t, a3.ID, cs[0].SearchSnippet.MessageID)
		require.False(t, cs[0].SearchSnippet.ActiveBranch)

		// A fork: a new waiting chat with a copy of the branch through a2.
		fork, err := d.alice.ForkChat(ctx, chat.ID, sdk.ForkChatRequest{MessageID: a2.ID, Title: "forked"})
		require.NoError(t, err)
		require.Equal(t, "forked", fork.Title)
		require.Equal(t, sdk.ChatStatusWaiting, fork.Status)
		page, err := d.alice.ChatMessages(ctx, fork.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		require.Equal(t, []string{"question two", "answer two"}, textsOfMessages(t, page.Messages))
		_, err = d.bob.ForkChat(ctx, chat.ID, sdk.ForkChatRequest{MessageID: a2.ID})
		requireCode(t, err, http.StatusNotFound, sdk.CodeNotFound)
		_, err = d.alice.ForkChat(ctx, chat.ID, sdk.ForkChatRequest{MessageID: 1 << 40})
		requireCode(t, err, http.StatusNotFound, sdk.CodeNotFound)

		// While the chat runs, a switch is refused.
		hang := llmtest.Hang()
		d.llm.Enqueue(hang)
		_, err = d.alice.SendMessage(ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("more")})
		require.NoError(t, err)
		<-hang.Started()
		_, err = d.alice.SwitchBranch(ctx, chat.ID, q2.ID)
		requireCode(t, err, http.StatusConflict, sdk.CodeTransitionNotAllowed)
		_, err = d.alice.Interrupt(ctx, chat.ID)
		require.NoError(t, err)
		waitStatus(t, ctx, d.alice, chat.ID, sdk.ChatStatusWaiting)
		_, err = d.alice.SwitchBranch(ctx, chat.ID, 0)
		requireCode(t, err, http.StatusBadRequest, sdk.CodeValidation)
	})
}

// TestAISDKRegenerateKeepsVersions: useChat's regenerate (trigger
// regenerate-message) adds a version of the reply; the old one stays one
// click away.
func TestAISDKRegenerateKeepsVersions(t *testing.T) {
	t.Parallel()
	r := startAISDK(t, func(t testing.TB) store.Store { return dbtest.NewSQLite(t) })
	r.llm.Enqueue(llmtest.TextChunks("first"), llmtest.TextChunks("second"))
	require.Equal(t, "first", r.do(t, r.alice, http.MethodPost, "", submit("vr", userMsg("m1", "one"))).text())
	var ui []map[string]any
	require.NoError(t, json.Unmarshal(r.do(t, r.alice, http.MethodGet, "/vr/messages", nil).body, &ui))
	g := r.do(t, r.alice, http.MethodPost, "", map[string]any{"id": "vr", "trigger": "regenerate-message", "messageId": ui[1]["id"],
		"messages": []any{ui[0]}})
	require.Equal(t, "second", g.text(), string(g.body))

	chats, err := r.aliceAPI.ListChats(r.ctx, sdk.ListChatsOptions{})
	require.NoError(t, err)
	require.Len(t, chats, 1)
	page, err := r.aliceAPI.ChatMessages(r.ctx, chats[0].ID, sdk.MessagesOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"one", "second"}, textsOfMessages(t, page.Messages))
	reply := page.Messages[1]
	require.Len(t, reply.SiblingIDs, 2, "the old reply is a version of the new one")
	old, err := r.aliceAPI.BranchMessages(r.ctx, chats[0].ID, reply.SiblingIDs[0])
	require.NoError(t, err)
	require.Equal(t, []string{"one", "first"}, textsOfMessages(t, old.Messages))
	require.Equal(t, page.Messages[0].ID, old.Messages[0].ID, "the same user message: no edit")
}
