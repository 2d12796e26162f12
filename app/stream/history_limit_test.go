package stream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/stream"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestStreamHistoryLimitRejectsBadValues: a bad ?history_limit is a 400
// with the API's error shape, before any upgrade.
func TestStreamHistoryLimitRejectsBadValues(t *testing.T) {
	t.Parallel()
	r := startApp(t, dbtest.NewSQLite(t), config.Config{NoWorker: true})
	chat := createChat(t, r.client, "")
	for _, v := range []string{"0", "-1", "abc", "1001", "2.5"} {
		req, err := http.NewRequest(http.MethodGet, r.srv.URL+"/api/v2/chats/"+chat.ID.String()+"/stream?history_limit="+v, nil)
		require.NoError(t, err)
		req.Header.Set("Coder-Session-Token", token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var body sdk.Response
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, v)
		require.Equal(t, sdk.CodeValidation, body.Code, v)
		require.Contains(t, body.Message, "history_limit", v)
	}
}

// TestStreamHistoryLimit: with ?history_limit=N the bootstrap sends the
// last N messages, reaching back to the assistant message whose tool
// calls the oldest of them answer; without it, every message.
func TestStreamHistoryLimit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		s := newStore(t)
		r := startApp(t, s, config.Config{NoWorker: true})
		chat := createChat(t, r.client, "")
		ctx := context.Background()
		// u0 a1 u2 a3(calls) t4 t5 a6
		roles := []string{store.RoleUser, store.RoleAssistant, store.RoleUser, store.RoleAssistant, store.RoleTool, store.RoleTool, store.RoleAssistant}
		require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
			for i, role := range roles {
				content, err := json.Marshal(sdk.Text(fmt.Sprintf("m%d", i)))
				if err != nil {
					return err
				}
				if _, err := tx.MessageInsert(ctx, store.MessageInsertParams{ChatID: chat.ID, Role: role, Content: content, Now: time.Now()}); err != nil {
					return err
				}
			}
			return nil
		}))
		bootstrap := func(query string) []string {
			v := dialQuery(t, r.srv.URL, chat.ID, query)
			defer v.close()
			var texts []string
			for _, e := range v.until("preview_reset", func(e sdk.ChatStreamEvent) bool { return e.Type == sdk.StreamPreviewReset }) {
				if e.Type == sdk.StreamMessage {
					texts = append(texts, e.Message.Content[0].Text)
				}
			}
			return texts
		}
		all := bootstrap("")
		require.Equal(t, []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6"}, all[len(all)-7:])
		require.Equal(t, []string{"m6"}, bootstrap("?history_limit=1"))
		require.Equal(t, []string{"m3", "m4", "m5", "m6"}, bootstrap("?history_limit=2"), "t5 needs its calls")
		require.Equal(t, []string{"m3", "m4", "m5", "m6"}, bootstrap("?history_limit=3"), "t4 needs its calls")
		require.Equal(t, []string{"m2", "m3", "m4", "m5", "m6"}, bootstrap("?history_limit=5"))
		require.Equal(t, all, bootstrap("?history_limit=1000"))
	})
}

// TestLoopHistoryFloor: after a bounded bootstrap, changes to rows older
// than the window are not sent; newer ones are.
func TestLoopHistoryFloor(t *testing.T) {
	t.Parallel()
	text := json.RawMessage(`[{"type":"text","text":"x"}]`)
	msg := func(id, rev int64) store.Message {
		return store.Message{ID: id, Revision: rev, Role: store.RoleUser, Content: text, Visibility: store.VisibilityBoth}
	}
	chat := store.Chat{ID: uuid.New(), Status: store.ChatStatusWaiting, SnapshotVersion: 1, HistoryVersion: 6}
	l := stream.NewLoop(chat.ID, func(stream.Target) {})
	boot := sourceFunc(func(stream.Cursors) (stream.Snapshot, error) {
		return stream.Snapshot{Chat: chat, Full: true, All: []store.Message{msg(5, 5), msg(6, 6)}, Floor: 5}, nil
	})
	events, err := l.Sync(context.Background(), boot, stream.Hints{})
	require.NoError(t, err)
	require.Equal(t, []int64{5, 6}, messageIDs(events))

	chat.SnapshotVersion, chat.HistoryVersion = 2, 8
	changed := sourceFunc(func(stream.Cursors) (stream.Snapshot, error) {
		return stream.Snapshot{Chat: chat, Changed: []store.Message{msg(2, 7), msg(7, 8)}}, nil
	})
	hv := chat.HistoryVersion
	events, err = l.Sync(context.Background(), changed, stream.Hints{HistoryVersion: &hv})
	require.NoError(t, err)
	require.Equal(t, []int64{7}, messageIDs(events), "message 2 is older than the window")
}

func messageIDs(events []sdk.ChatStreamEvent) []int64 {
	var ids []int64
	for _, e := range events {
		if e.Type == sdk.StreamMessage {
			ids = append(ids, e.Message.ID)
		}
	}
	return ids
}

// dialQuery is dial with a query string on the stream URL.
func dialQuery(t *testing.T, base string, chatID uuid.UUID, query string) *viewer {
	t.Helper()
	return dialURL(t, streamURL(base, chatID)+query)
}
