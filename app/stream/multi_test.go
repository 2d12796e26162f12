package stream_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/partbuf"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestStreamViewers: five viewers of one chat and one that joins mid-turn
// see the same committed messages and gap-free parts that spell the reply;
// a viewer that reconnects gets the same history.
func TestStreamViewers(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		llm := newPacedLLM(t)
		r := startApp(t, newStore(t), pacedConfig(llm))
		ctx := context.Background()
		chat := createChat(t, r.client, "")

		viewers := make([]*viewer, 5)
		for i := range viewers {
			viewers[i] = dial(t, r.srv.URL, chat.ID)
			viewers[i].untilStatus(sdk.ChatStatusWaiting)
		}
		_, err := r.client.SendMessage(ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("hello viewers")})
		require.NoError(t, err)
		tr := llm.next(t)
		tr.send(t, "Hello", ", ")
		for _, v := range viewers {
			v.untilPart(2)
		}

		// Mid-turn: the bootstrap has the user message and the running
		// status, then the episode's parts from seq 1.
		late := dial(t, r.srv.URL, chat.ID)
		boot := late.untilType(sdk.StreamPreviewReset)
		require.Equal(t, []string{tMessage, tQueue, tStatus, tPreview}, kinds(boot))
		require.Equal(t, "hello viewers", boot[0].Message.Content[0].Text)
		require.Equal(t, sdk.ChatStatusRunning, boot[2].Status.Status)
		late.untilPart(2)

		tr.send(t, "live ", "viewers", "!")
		for _, v := range append(viewers, late) {
			v.untilPart(5)
		}
		tr.finish(t)
		for _, v := range append(viewers, late) {
			v.untilIdle()
		}

		want := summarize(history(viewers[0].seen))
		require.Equal(t, []summary{
			{ID: want[0].ID, Role: store.RoleUser, Text: "hello viewers"},
			{ID: want[1].ID, Role: store.RoleAssistant, Text: "Hello, live viewers!"},
		}, want)
		for i, v := range append(viewers, late) {
			require.Equal(t, want, summarize(history(v.seen)), "viewer %d: committed messages", i)
			parts := partsByEpisode(t, v.seen)
			require.Len(t, parts, 1, "viewer %d: one episode", i)
			for _, text := range parts {
				require.Equal(t, "Hello, live viewers!", text, "viewer %d: parts spell the reply", i)
			}
		}
		// Every early viewer saw the same committed events in the same order.
		for i, v := range viewers[1:] {
			require.Equal(t, committed(viewers[0].seen), committed(v.seen), "viewer %d", i+1)
		}

		viewers[0].close()
		again := dial(t, r.srv.URL, chat.ID)
		boot = again.untilStatus(sdk.ChatStatusWaiting)
		require.Equal(t, want, summarize(history(boot)), "a reconnect gets the same history")
		page, err := r.client.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		require.Equal(t, want, summarize(page.Messages), "the stream agrees with GET /messages")
	})
}

// committed lists a viewer's committed-state events (messages, resets),
// which every viewer must see alike.
func committed(events []sdk.ChatStreamEvent) []summary {
	var out []summary
	for _, e := range events {
		switch e.Type {
		case sdk.StreamMessage:
			out = append(out, summarize([]sdk.ChatMessage{*e.Message})...)
		case sdk.StreamHistoryReset:
			out = append(out, summary{Role: "history_reset"})
		}
	}
	return out
}

// TestStreamEdit: editing a message resets the viewer's history and sends
// the new one.
func TestStreamEdit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := startApp(t, newStore(t), demoConfig())
		ctx := context.Background()
		chat := createChat(t, r.client, "first question")
		v := dial(t, r.srv.URL, chat.ID)
		v.untilIdle()
		before := summarize(history(v.seen))
		require.Len(t, before, 2)

		_, err := r.client.EditMessage(ctx, chat.ID, before[0].ID, sdk.EditChatMessageRequest{Content: sdk.Text("edited question")})
		require.NoError(t, err)
		// The previous turn's last Sync may have put a preview_reset after
		// its waiting status (spec order: status before preview_reset);
		// the edit itself starts with history_reset.
		pre := v.untilType(tHistory)
		for _, e := range pre[:len(pre)-1] {
			require.Equal(t, tPreview, e.Type, "before the edit's history_reset: %v", kinds(pre))
		}
		events := append(pre[len(pre)-1:], v.untilIdle()...)
		after := summarize(history(events))
		require.Len(t, after, 2)
		require.Equal(t, store.RoleUser, after[0].Role)
		require.Equal(t, "edited question", after[0].Text)
		require.NotEqual(t, before[0].ID, after[0].ID)
		require.Contains(t, after[1].Text, "edited question", "the demo reply quotes the edited question")
		partsByEpisode(t, v.seen)

		page, err := r.client.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		require.Equal(t, after, summarize(page.Messages))
	})
}

// TestStreamInterrupt: an interrupt shows interrupting, then waiting with
// the partial reply committed. The test plays the worker (the chat is owned
// by the app's idle worker id), so every step is observed.
func TestStreamInterrupt(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := startApp(t, newStore(t), config.Config{NoWorker: true})
		ctx := context.Background()
		chat := createChat(t, r.client, "tell me a long story")
		v := dial(t, r.srv.URL, chat.ID)
		v.untilStatus(sdk.ChatStatusRunning)

		m := r.app.Internals().Machine
		require.NoError(t, m.Do(ctx, func(tx *chatstate.Tx) error {
			if _, err := tx.Acquire(chat.ID, r.app.Internals().Worker.ID(), uuid.New()); err != nil {
				return err
			}
			_, err := tx.RecordGenerationAttempt(chat.ID)
			return err
		}))
		v.untilType(tPreview)
		row := chatRow(t, r.app.Internals().Store, chat.ID)
		ep := partbuf.Episode{ChatID: chat.ID, HistoryVersion: row.HistoryVersion, GenerationAttempt: row.GenerationAttempt}
		require.NoError(t, r.app.Internals().Buffer.CreateEpisode(ep))
		for _, text := range []string{"Once ", "upon"} {
			require.NoError(t, r.app.Internals().Buffer.AddPart(ep, sdk.ChatMessagePart{Type: sdk.PartText, Text: text}))
		}
		v.untilPart(2)

		_, err := r.client.Interrupt(ctx, chat.ID)
		require.NoError(t, err)
		require.Equal(t, []string{tStatus}, kinds(v.untilStatus(sdk.ChatStatusInterrupting)))

		r.app.Internals().Buffer.CloseEpisode(ep)
		require.NoError(t, m.Do(ctx, func(tx *chatstate.Tx) error {
			_, err := tx.FinishInterruption(chat.ID, assistantStep("Once upon").Messages)
			return err
		}))
		events := v.untilStatus(sdk.ChatStatusWaiting)
		require.Equal(t, []string{tMessage, tStatus}, kinds(events))
		require.Equal(t, []string{"Once upon"}, texts(events), "the partial reply is committed")
	})
}

// TestStreamInterruptWorker: the same with the real worker, which may
// finish the interruption before the viewer reads the interrupting status
// (hints coalesce; the viewer shows the state it reads).
func TestStreamInterruptWorker(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		llm := newPacedLLM(t)
		r := startApp(t, newStore(t), pacedConfig(llm))
		ctx := context.Background()
		chat := createChat(t, r.client, "")
		v := dial(t, r.srv.URL, chat.ID)
		v.untilStatus(sdk.ChatStatusWaiting)
		_, err := r.client.SendMessage(ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text("tell me a long story")})
		require.NoError(t, err)
		tr := llm.next(t)
		tr.send(t, "Once ", "upon")
		v.untilPart(2)

		_, err = r.client.Interrupt(ctx, chat.ID)
		require.NoError(t, err)
		tr.ended(t)
		events := v.untilStatus(sdk.ChatStatusWaiting)
		var statuses []sdk.ChatStatus
		for _, e := range events {
			if e.Type == tStatus {
				statuses = append(statuses, e.Status.Status)
			}
		}
		require.Contains(t, [][]sdk.ChatStatus{
			{sdk.ChatStatusInterrupting, sdk.ChatStatusWaiting}, {sdk.ChatStatusWaiting},
		}, statuses)
		ms := summarize(history(v.seen))
		require.Len(t, ms, 2)
		require.Equal(t, summary{ID: ms[1].ID, Role: store.RoleAssistant, Text: "Once upon"}, ms[1], "the partial reply is committed")
	})
}

// TestStreamQueue: queue_update carries the whole queue on every change,
// and a promoted message carries its queued_message_id.
func TestStreamQueue(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		llm := newPacedLLM(t)
		r := startApp(t, newStore(t), pacedConfig(llm))
		ctx := context.Background()
		chat := createChat(t, r.client, "")
		v := dial(t, r.srv.URL, chat.ID)
		v.untilStatus(sdk.ChatStatusWaiting)
		send := func(text string) sdk.CreateChatMessageResponse {
			res, err := r.client.SendMessage(ctx, chat.ID, sdk.CreateChatMessageRequest{Content: sdk.Text(text)})
			require.NoError(t, err)
			return res
		}
		queueTexts := func(e sdk.ChatStreamEvent) []string {
			out := []string{}
			for _, q := range e.QueuedMessages {
				out = append(out, q.Content[0].Text)
			}
			return out
		}
		lastQueue := func(events []sdk.ChatStreamEvent) sdk.ChatStreamEvent { return events[len(events)-1] }

		send("one")
		tr := llm.next(t)
		v.untilStatus(sdk.ChatStatusRunning)
		two := send("two")
		require.True(t, two.Queued)
		require.Equal(t, []string{"two"}, queueTexts(lastQueue(v.untilType(tQueue))))
		three := send("three")
		require.Equal(t, []string{"two", "three"}, queueTexts(lastQueue(v.untilType(tQueue))))
		require.NoError(t, r.client.DeleteQueuedMessage(ctx, chat.ID, two.QueuedMessage.ID))
		require.Equal(t, []string{"three"}, queueTexts(lastQueue(v.untilType(tQueue))))

		tr.send(t, "done")
		tr.finish(t)
		events := v.untilType(tQueue)
		require.Empty(t, lastQueue(events).QueuedMessages)
		b, err := json.Marshal(lastQueue(events))
		require.NoError(t, err)
		require.Contains(t, string(b), `"queued_messages":[]`)
		promoted := history(v.seen)
		last := promoted[len(promoted)-1]
		require.Equal(t, "three", last.Content[0].Text)
		require.NotNil(t, last.QueuedMessageID)
		require.Equal(t, three.QueuedMessage.ID, *last.QueuedMessageID)

		llm.next(t).finish(t)
		v.untilIdle()
	})
}

// TestStreamActionRequired: a dynamic tool call is announced with its
// arguments as a JSON string; submitting the result resumes the turn.
func TestStreamActionRequired(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := startApp(t, newStore(t), demoConfig())
		ctx := context.Background()
		chat := createChat(t, r.client, `/tool lookup {"q":"go"}`, sdk.DynamicTool{
			Name: "lookup", Description: "looks things up",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
		})
		v := dial(t, r.srv.URL, chat.ID)
		events := v.untilType(tAction)
		require.Equal(t, sdk.ChatStatusRequiresAction, events[len(events)-2].Status.Status, "status precedes action_required")
		calls := events[len(events)-1].ActionRequired.ToolCalls
		require.Len(t, calls, 1)
		require.Equal(t, "lookup", calls[0].ToolName)
		require.NotEmpty(t, calls[0].ToolCallID)
		require.JSONEq(t, `{"q":"go"}`, calls[0].Args)

		require.NoError(t, r.client.SubmitToolResults(ctx, chat.ID, sdk.SubmitToolResultsRequest{Results: []sdk.ToolResult{
			{ToolCallID: calls[0].ToolCallID, Output: json.RawMessage(`{"answer":42}`)},
		}}))
		v.untilView("the reply to the tool result", func(s view) bool {
			return s.status == sdk.ChatStatusWaiting && len(s.history) == 4
		})
		roles := []string{}
		for _, m := range history(v.seen) {
			roles = append(roles, m.Role)
		}
		require.Equal(t, []string{store.RoleUser, store.RoleAssistant, store.RoleTool, store.RoleAssistant}, roles)
	})
}

// TestStreamAuth: the stream authenticates before upgrading.
func TestStreamAuth(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSQLite(t)
	r := startApp(t, s, config.Config{NoWorker: true})
	chat := createChat(t, r.client, "")
	other, _, err := auth.CreateToken(context.Background(), s, "mallory", false, "test", time.Now())
	require.NoError(t, err)
	httpURL := r.srv.URL + "/api/v2/chats/" + chat.ID.String() + "/stream"
	tests := []struct {
		name   string
		url    string
		header http.Header
		status int
	}{
		{"no token", httpURL, nil, http.StatusUnauthorized},
		{"bad token", httpURL, http.Header{"Authorization": {"Bearer nope"}}, http.StatusUnauthorized},
		{"another user's chat", httpURL, http.Header{"Authorization": {"Bearer " + other}}, http.StatusNotFound},
		{"unknown chat", r.srv.URL + "/api/v2/chats/" + uuid.NewString() + "/stream", http.Header{"Authorization": {"Bearer " + token}}, http.StatusNotFound},
		{"experimental prefix, no token", r.srv.URL + "/api/experimental/chats/" + chat.ID.String() + "/stream", nil, http.StatusUnauthorized},
		{"parts endpoint, no token", httpURL + "/parts", nil, http.StatusUnauthorized},
		{"parts endpoint, another user", httpURL + "/parts", http.Header{"Authorization": {"Bearer " + other}}, http.StatusNotFound},
		{"parts endpoint, wrong replica token", httpURL + "/parts", http.Header{"Chatd-Replica-Token": {"nope"}}, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, tt.url, nil)
			require.NoError(t, err)
			for k, vs := range tt.header {
				req.Header[k] = vs
			}
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			require.Equal(t, tt.status, res.StatusCode)
			var body sdk.Response
			require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
			require.NotEmpty(t, body.Code)
		})
	}
	t.Run("websocket with another user's token", func(t *testing.T) {
		_, res, err := websocket.Dial(context.Background(), streamURL(r.srv.URL, chat.ID), &websocket.DialOptions{
			HTTPHeader: http.Header{"Authorization": {"Bearer " + other}},
		})
		require.Error(t, err)
		require.Equal(t, http.StatusNotFound, res.StatusCode)
	})
}

// TestStreamPollerConverges: changes whose notifications are lost reach the
// viewer through the sync poller, and a deleted chat ends the stream.
func TestStreamPollerConverges(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		s := newStore(t)
		r := startApp(t, s, config.Config{NoWorker: true})
		chat := createChat(t, r.client, "")
		v := dial(t, r.srv.URL, chat.ID)
		v.untilStatus(sdk.ChatStatusWaiting)

		// A machine whose notifications go nowhere: only the poller can tell.
		silent := chatstate.New(s, pubsub.NewMemory(), chatstate.Config{})
		var user store.User
		require.NoError(t, s.ReadTx(context.Background(), func(tx store.Reader) error {
			var err error
			user, err = tx.UserGetByName(context.Background(), "admin")
			return err
		}))
		require.NoError(t, silent.Do(context.Background(), func(tx *chatstate.Tx) error {
			_, err := tx.SendMessage(chat.ID, chatstate.UserInput{Content: sdk.Text("unannounced"), CreatedBy: uuid.NullUUID{UUID: user.ID, Valid: true}}, chatstate.BusyQueue)
			return err
		}))
		events := v.untilStatus(sdk.ChatStatusRunning)
		require.Equal(t, []string{"unannounced"}, texts(events))

		require.NoError(t, r.client.DeleteChat(context.Background(), chat.ID))
		require.Equal(t, websocket.StatusNormalClosure, v.closed(), "a deleted chat ends the stream normally")
	})
}

// TestStreamFrameLimits: a large history is split into frames of at most
// 256 events and 1 MiB (the viewer checks every frame).
func TestStreamFrameLimits(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSQLite(t)
	r := startApp(t, s, config.Config{NoWorker: true})
	chat := createChat(t, r.client, "start")
	m := chatstate.New(s, pubsub.NewMemory(), chatstate.Config{})
	big := strings.Repeat("x", 60<<10)
	require.NoError(t, m.Do(context.Background(), func(tx *chatstate.Tx) error {
		if _, err := tx.Acquire(chat.ID, uuid.New(), uuid.New()); err != nil {
			return err
		}
		var st chatstate.Step
		for i := range 300 {
			text := "small"
			if i >= 270 {
				text = big
			}
			st.Messages = append(st.Messages, assistantStep(text).Messages...)
		}
		_, err := tx.CommitStep(chat.ID, st)
		return err
	}))
	v := dial(t, r.srv.URL, chat.ID)
	events := v.untilStatus(sdk.ChatStatusRunning)
	require.Len(t, history(events), 301)
	// The first 256 events fill a frame by count; the last 30 messages
	// (1.8 MiB) need two more by size.
	require.GreaterOrEqual(t, v.frames.Load(), int64(3))
}
