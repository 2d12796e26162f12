package e2e_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// fixture is a running server whose model is a fake OpenAI server.
type fixture struct {
	ctx   context.Context
	app   *app.App
	srv   *httptest.Server
	llm   *llmtest.Server
	alice *sdk.Client
	bob   *sdk.Client
}

// setup starts a server over a new store of the kind newStore makes, with
// users alice and bob.
func setup(t *testing.T, newStore func(t testing.TB) store.Store) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	d := &fixture{ctx: ctx, llm: llmtest.NewOpenAI(t)}
	h := apptest.Start(t, apptest.Options{Store: newStore, Config: config.Config{
		OpenAIBaseURL: d.llm.URL, DefaultModel: "openai/test-model",
		Worker: worker.Config{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, SyncInterval: 50 * time.Millisecond},
	}})
	d.app, d.srv = h.App, h.Server
	d.alice, d.bob = h.NewUser(t, "alice"), h.NewUser(t, "bob")
	return d
}

func hashText(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// send posts a durable message and returns the raw answer.
func (d *fixture) send(c *sdk.Client, chat uuid.UUID, id uuid.UUID, text string) (map[string]any, error) {
	var out map[string]any
	err := c.Do(d.ctx, http.MethodPost, "/chats/"+chat.String()+"/messages",
		map[string]any{"content": sdk.Text(text), "request_id": id}, &out)
	return out, err
}

func requireCode(t *testing.T, err error, status int, code string) *sdk.Error {
	t.Helper()
	var e *sdk.Error
	require.True(t, errors.As(err, &e), "want %s, got %v", code, err)
	require.Equal(t, status, e.StatusCode, e.Error())
	require.Equal(t, code, e.Code, e.Error())
	return e
}

func (d *fixture) waitStatus(t *testing.T, chat uuid.UUID, status sdk.ChatStatus) {
	t.Helper()
	require.Eventually(t, func() bool {
		c, err := d.alice.Chat(d.ctx, chat)
		return err == nil && c.Status == status
	}, 30*time.Second, 5*time.Millisecond, "chat never became %s", status)
}

func TestDurableRequests(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		d := setup(t, newStore)
		chat, err := d.alice.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "durable"})
		require.NoError(t, err)

		// Admission, then completion, then a replay with no new work.
		d.llm.Enqueue(llmtest.TextChunks("Hello ", "there"))
		id := uuid.New()
		first, err := d.send(d.alice, chat.ID, id, "hi")
		require.NoError(t, err)
		require.Equal(t, false, first["replayed"])
		require.Equal(t, id.String(), first["request_id"])
		require.NotEmpty(t, first["audit_id"])
		d.waitStatus(t, chat.ID, sdk.ChatStatusWaiting)
		calls := len(d.llm.Requests())

		again, err := d.send(d.alice, chat.ID, id, "hi")
		require.NoError(t, err)
		require.Equal(t, true, again["replayed"])
		require.Equal(t, first["audit_id"], again["audit_id"])
		msgs := again["messages"].([]any)
		require.Len(t, msgs, 2, "the replay returns the turn: the message and the reply")
		require.Equal(t, "Hello there", msgs[1].(map[string]any)["content"].([]any)[0].(map[string]any)["text"])
		require.Equal(t, "completed", again["outcome"].(map[string]any)["status"])
		require.Len(t, d.llm.Requests(), calls, "a replay makes no provider call")
		page, err := d.alice.ChatMessages(d.ctx, chat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		require.Len(t, page.Messages, 2, "a replay adds no message")

		// The read-only lookup answers the same, and never claims.
		var looked map[string]any
		require.NoError(t, d.alice.Do(d.ctx, http.MethodGet, "/requests/"+id.String()+"?content_sha256="+hashText("hi"), nil, &looked))
		require.Equal(t, true, looked["replayed"])
		fresh := uuid.New()
		err = d.alice.Do(d.ctx, http.MethodGet, "/requests/"+fresh.String()+"?content_sha256="+hashText("x"), nil, nil)
		requireCode(t, err, http.StatusNotFound, sdk.CodeInvocationNotFound)
		err = d.alice.Do(d.ctx, http.MethodGet, "/requests/"+fresh.String(), nil, nil)
		requireCode(t, err, http.StatusNotFound, sdk.CodeInvocationNotFound)

		// Conflicts: another caller, other content.
		_, err = d.send(d.bob, chat.ID, id, "hi")
		require.Error(t, err) // bob cannot see alice's chat: 404 first
		bobChat, err := d.bob.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "bob"})
		require.NoError(t, err)
		_, err = d.send(d.bob, bobChat.ID, id, "hi")
		requireCode(t, err, http.StatusConflict, sdk.CodeInvocationConflict)
		_, err = d.send(d.alice, chat.ID, id, "hi!")
		requireCode(t, err, http.StatusConflict, sdk.CodeInvocationConflict)
		err = d.alice.Do(d.ctx, http.MethodGet, "/requests/"+id.String()+"?content_sha256="+hashText("other"), nil, nil)
		requireCode(t, err, http.StatusConflict, sdk.CodeInvocationConflict)

		// Invalid ids.
		for _, bad := range []any{"abc", uuid.Nil.String(), 42} {
			err := d.alice.Do(d.ctx, http.MethodPost, "/chats/"+chat.ID.String()+"/messages",
				map[string]any{"content": sdk.Text("x"), "request_id": bad}, nil)
			requireCode(t, err, http.StatusBadRequest, sdk.CodeInvalidInvocationID)
		}

		// In progress while the turn runs.
		hang := llmtest.Hang()
		d.llm.Enqueue(hang)
		busy := uuid.New()
		_, err = d.send(d.alice, chat.ID, busy, "slow")
		require.NoError(t, err)
		<-hang.Started()
		_, err = d.send(d.alice, chat.ID, busy, "slow")
		e := requireCode(t, err, http.StatusConflict, sdk.CodeInvocationInProgress)
		require.Equal(t, busy, *e.RequestID)
		require.NotNil(t, e.AuditID)
		// Interrupting ends the turn: the request completes as interrupted.
		_, err = d.alice.Interrupt(d.ctx, chat.ID)
		require.NoError(t, err)
		d.waitStatus(t, chat.ID, sdk.ChatStatusWaiting)
		out, err := d.send(d.alice, chat.ID, busy, "slow")
		require.NoError(t, err)
		require.Equal(t, "interrupted", out["outcome"].(map[string]any)["status"])
	})
}

// Many clients retrying one request at once create exactly one message.
func TestDurableRace(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		d := setup(t, newStore)
		chat, err := d.alice.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "durable"})
		require.NoError(t, err)
		hang := llmtest.Hang()
		d.llm.Enqueue(hang)
		id := uuid.New()
		const n = 16
		var wg sync.WaitGroup
		start := make(chan struct{})
		results := make([]error, n)
		fresh := make([]bool, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				out, err := d.send(d.alice, chat.ID, id, "once")
				results[i] = err
				fresh[i] = err == nil && out["replayed"] == false
			}()
		}
		close(start)
		wg.Wait()
		admitted := 0
		for i, err := range results {
			if fresh[i] {
				admitted++
				continue
			}
			requireCode(t, err, http.StatusConflict, sdk.CodeInvocationInProgress)
		}
		require.Equal(t, 1, admitted, "exactly one admission")
		page, err := d.alice.ChatMessages(d.ctx, chat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		users := 0
		for _, m := range page.Messages {
			if m.Role == "user" {
				users++
			}
		}
		require.Equal(t, 1, users+len(page.QueuedMessages), "exactly one message")
		<-hang.Started()
	})
}

// A durable chat creation replays the same chat.
func TestDurableCreateChat(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		d := setup(t, newStore)
		d.llm.Enqueue(llmtest.TextChunks("ok"))
		id := uuid.New()
		body := map[string]any{"content": sdk.Text("make a chat"), "request_id": id, "title": "durable"}
		var first, second sdk.CreateChatResponse
		require.NoError(t, d.alice.Do(d.ctx, http.MethodPost, "/chats", body, &first))
		require.False(t, *first.Replayed)
		d.waitStatus(t, first.ID, sdk.ChatStatusWaiting)
		require.NoError(t, d.alice.Do(d.ctx, http.MethodPost, "/chats", body, &second))
		require.True(t, *second.Replayed)
		require.Equal(t, first.ID, second.ID, "no second chat")
		chats, err := d.alice.ListChats(d.ctx, sdk.ListChatsOptions{})
		require.NoError(t, err)
		require.Len(t, chats, 1)
	})
}

// journalApp starts an app on a store newStore makes with one
// server-side tool.
func journalApp(t *testing.T, newStore func(t testing.TB) store.Store, llmURL string, tool *tools.Func) *apptest.Harness {
	t.Helper()
	return apptest.Start(t, apptest.Options{Store: newStore, Config: config.Config{
		OpenAIBaseURL: llmURL, DefaultModel: "openai/test-model",
		Tools: []tools.Tool{tool},
		Worker: worker.Config{
			BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, SyncInterval: 50 * time.Millisecond,
			AcquireInterval: 50 * time.Millisecond, HeartbeatInterval: 50 * time.Millisecond, LeaseTimeout: 300 * time.Millisecond,
		},
	}})
}

// A crash while a server-side tool runs: a pure call runs again on the
// next worker; an effectful one never does — the chat stops for review and
// its request is unresolved. A completed call is never run again.
func TestToolJournalAfterCrash(t *testing.T) {
	t.Parallel()
	for _, effect := range []string{store.EffectPure, store.EffectEffectful} {
		t.Run(effect, func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				llm := llmtest.NewOpenAI(t)
				llm.Enqueue(llmtest.ToolCall("call_1", "do_it", `{"n":1}`), llmtest.TextChunks("all done"))
				var runs atomic.Int32
				started := make(chan struct{}, 4)
				tool := &tools.Func{ToolName: "do_it", EffectClass: effect, Fn: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
					n := runs.Add(1)
					started <- struct{}{}
					if n == 1 {
						<-ctx.Done() // the first run is cut short by the crash
						return nil, ctx.Err()
					}
					return json.RawMessage(`{"ok":true}`), nil
				}}
				first := journalApp(t, newStore, llm.URL, tool)
				client := first.Admin
				id := uuid.New()
				var chat sdk.CreateChatResponse
				require.NoError(t, client.Do(ctx, http.MethodPost, "/chats",
					map[string]any{"content": sdk.Text("go"), "request_id": id, "title": "journal"}, &chat))
				<-started
				first.App.Stop() // the crash: nothing is committed or abandoned

				second := first.Reopen(t)
				defer second.App.Stop()
				client = second.Admin
				sum := sha256.Sum256([]byte("go"))
				lookup := "/requests/" + id.String() + "?content_sha256=" + hex.EncodeToString(sum[:])
				if effect == store.EffectPure {
					require.Eventually(t, func() bool {
						c, err := client.Chat(ctx, chat.ID)
						return err == nil && c.Status == sdk.ChatStatusWaiting
					}, 30*time.Second, 10*time.Millisecond)
					require.Equal(t, int32(2), runs.Load(), "the started pure call ran again")
					var out map[string]any
					require.NoError(t, client.Do(ctx, http.MethodGet, lookup, nil, &out))
					require.Equal(t, "completed", out["outcome"].(map[string]any)["status"])
					return
				}
				require.Eventually(t, func() bool {
					err := client.Do(ctx, http.MethodGet, lookup, nil, nil)
					var e *sdk.Error
					return errors.As(err, &e) && e.Code == sdk.CodeInvocationUnresolved
				}, 30*time.Second, 10*time.Millisecond)
				c, err := client.Chat(ctx, chat.ID)
				require.NoError(t, err)
				require.Equal(t, sdk.ChatStatusRequiresAction, c.Status)
				require.Nil(t, c.RequiresActionDeadlineAt)
				require.Equal(t, int32(1), runs.Load(), "the effectful call never ran twice")
			})
		})
	}
}

// Deleting a chat ends its unfinished requests; a request id is bound to
// its chat as well as to its caller and content.
func TestDurableChatDeletedAndOtherChat(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		d := setup(t, newStore)
		chat, err := d.alice.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "doomed"})
		require.NoError(t, err)
		other, err := d.alice.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "other"})
		require.NoError(t, err)
		hang := llmtest.Hang()
		d.llm.Enqueue(hang)
		running, queued := uuid.New(), uuid.New()
		_, err = d.send(d.alice, chat.ID, running, "first")
		require.NoError(t, err)
		<-hang.Started()
		_, err = d.send(d.alice, chat.ID, queued, "second")
		require.NoError(t, err)

		_, err = d.send(d.alice, other.ID, running, "first")
		requireCode(t, err, http.StatusConflict, sdk.CodeInvocationConflict)

		require.NoError(t, d.alice.DeleteChat(d.ctx, chat.ID))
		for id, text := range map[uuid.UUID]string{running: "first", queued: "second"} {
			var out map[string]any
			require.NoError(t, d.alice.Do(d.ctx, http.MethodGet, "/requests/"+id.String()+"?content_sha256="+hashText(text), nil, &out))
			require.Equal(t, "cancelled", out["outcome"].(map[string]any)["status"], text)
		}
	})
}
