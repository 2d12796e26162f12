package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// limited is a server (not started: no worker) with the given limits on a
// fake clock, and users alice and bob.
type limited struct {
	ctx        context.Context
	clock      *clock.Fake
	app        *app.App
	srv        *httptest.Server
	alice, bob *sdk.Client
	aliceTok   string
}

func setupLimits(t *testing.T, newStore func(t testing.TB) store.Store, limits api.Limits) *limited {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	l := &limited{ctx: ctx, clock: clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	h := apptest.Start(t, apptest.Options{Store: newStore, NoStart: true, Config: config.Config{Limits: limits, Clock: l.clock}})
	l.app, l.srv = h.App, h.Server
	for _, name := range []string{"alice", "bob"} {
		tok := h.NewUserToken(t, name)
		if name == "alice" {
			l.alice, l.aliceTok = sdk.New(l.srv.URL, tok), tok
		} else {
			l.bob = sdk.New(l.srv.URL, tok)
		}
	}
	return l
}

func newSQLite(t testing.TB) store.Store { return dbtest.NewSQLite(t) }

// post sends a JSON body with token and returns the status, the
// Retry-After header and the decoded error answer (when there is one).
func (l *limited) post(t *testing.T, token, path string, body any) (int, string, sdk.Response) {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(l.ctx, http.MethodPost, l.srv.URL+"/api/v2"+path, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := l.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out sdk.Response
	if resp.StatusCode >= 400 {
		require.Contains(t, resp.Header.Get("Content-Type"), "application/json")
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), out
}

func TestWriteRateLimit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		l := setupLimits(t, newStore, api.Limits{WritesPerMinute: 3})
		for range 3 {
			status, _, _ := l.post(t, l.aliceTok, "/chats", sdk.CreateChatRequest{Title: "ok"})
			require.Equal(t, http.StatusCreated, status)
		}
		status, retry, e := l.post(t, l.aliceTok, "/chats", sdk.CreateChatRequest{Title: "too many"})
		require.Equal(t, http.StatusTooManyRequests, status)
		require.Equal(t, sdk.CodeRateLimited, e.Code)
		require.NotEmpty(t, e.Message)
		require.Equal(t, "20", retry, "3 a minute: the next token is 20 s away")

		// Reads are not limited, nor is another user.
		chats, err := l.alice.ListChats(l.ctx, sdk.ListChatsOptions{})
		require.NoError(t, err)
		require.Len(t, chats, 3, "the refused create created nothing")
		_, err = l.bob.CreateChat(l.ctx, sdk.CreateChatRequest{Title: "bob"})
		require.NoError(t, err)

		l.clock.Advance(19 * time.Second)
		status, _, _ = l.post(t, l.aliceTok, "/chats", sdk.CreateChatRequest{Title: "early"})
		require.Equal(t, http.StatusTooManyRequests, status)
		l.clock.Advance(time.Second)
		status, _, _ = l.post(t, l.aliceTok, "/chats", sdk.CreateChatRequest{Title: "refilled"})
		require.Equal(t, http.StatusCreated, status)
	})
}

func TestLoginRateLimit(t *testing.T) {
	t.Parallel()
	l := setupLimits(t, newSQLite, api.Limits{LoginsPerMinute: 2})
	status, _, _ := l.post(t, "", "/auth/login", sdk.LoginRequest{Token: l.aliceTok})
	require.Equal(t, http.StatusOK, status)
	status, _, e := l.post(t, "", "/auth/login", sdk.LoginRequest{Token: "wrong"})
	require.Equal(t, http.StatusUnauthorized, status, "a failed attempt spends a token too")
	require.Equal(t, sdk.CodeUnauthorized, e.Code)
	status, retry, e := l.post(t, "", "/auth/login", sdk.LoginRequest{Token: l.aliceTok})
	require.Equal(t, http.StatusTooManyRequests, status)
	require.Equal(t, sdk.CodeRateLimited, e.Code)
	require.Equal(t, "30", retry)
	l.clock.Advance(30 * time.Second)
	status, _, _ = l.post(t, "", "/auth/login", sdk.LoginRequest{Token: l.aliceTok})
	require.Equal(t, http.StatusOK, status)
}

func TestChatQuota(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		l := setupLimits(t, newStore, api.Limits{MaxChatsPerUser: 2})
		first, err := l.alice.CreateChat(l.ctx, sdk.CreateChatRequest{Title: "one"})
		require.NoError(t, err)
		_, err = l.alice.CreateChat(l.ctx, sdk.CreateChatRequest{Title: "two", ParentChatID: &first.ID})
		require.NoError(t, err, "a child chat counts")
		status, retry, e := l.post(t, l.aliceTok, "/chats", sdk.CreateChatRequest{Title: "three"})
		require.Equal(t, http.StatusTooManyRequests, status)
		require.Equal(t, sdk.CodeLimitReached, e.Code)
		require.Empty(t, retry, "waiting does not help")
		// A durable create is refused the same way, and claims nothing.
		id := uuid.New()
		status, _, e = l.post(t, l.aliceTok, "/chats", sdk.CreateChatRequest{Title: "three", RequestID: &id})
		require.Equal(t, http.StatusTooManyRequests, status)
		require.Equal(t, sdk.CodeLimitReached, e.Code)

		_, err = l.bob.CreateChat(l.ctx, sdk.CreateChatRequest{Title: "bob"})
		require.NoError(t, err, "the quota is per user")
		require.NoError(t, l.alice.DeleteChat(l.ctx, first.ID)) // deletes its child too
		_, err = l.alice.CreateChat(l.ctx, sdk.CreateChatRequest{Title: "again", RequestID: &id})
		require.NoError(t, err, "deleting frees the quota")
	})
}

func TestCreateSizeLimits(t *testing.T) {
	t.Parallel()
	l := setupLimits(t, newSQLite, api.Limits{MaxSystemPromptBytes: 10, MaxDynamicTools: 2})
	tools := []sdk.DynamicTool{{Name: "a"}, {Name: "b"}, {Name: "c"}}

	_, err := l.alice.CreateChat(l.ctx, sdk.CreateChatRequest{SystemPrompt: strings.Repeat("x", 10), UnsafeDynamicTools: tools[:2]})
	require.NoError(t, err, "at the limits")
	status, _, e := l.post(t, l.aliceTok, "/chats", sdk.CreateChatRequest{SystemPrompt: strings.Repeat("x", 11)})
	require.Equal(t, http.StatusRequestEntityTooLarge, status)
	require.Equal(t, sdk.CodeTooLarge, e.Code)
	status, _, e = l.post(t, l.aliceTok, "/chats", sdk.CreateChatRequest{UnsafeDynamicTools: tools})
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, sdk.CodeValidation, e.Code)
	require.Equal(t, "unsafe_dynamic_tools", e.Validations[0].Field)
}

func TestZeroLimitsAreUnlimited(t *testing.T) {
	l := setupLimits(t, newSQLite, api.Limits{})
	for range 50 {
		_, err := l.alice.CreateChat(l.ctx, sdk.CreateChatRequest{SystemPrompt: strings.Repeat("x", 100<<10)})
		require.NoError(t, err)
	}

	// The settings: unset takes the default, 0 is unlimited.
	t.Setenv("CHATD_WRITES_PER_MINUTE", "")
	t.Setenv("CHATD_MAX_STREAMS_PER_USER", "0")
	t.Setenv("CHATD_MAX_CHATS_PER_USER", "7")
	got := fromEnv(t).Limits
	require.Equal(t, api.Limits{
		WritesPerMinute: api.DefaultWritesPerMinute, LoginsPerMinute: api.DefaultLoginsPerMinute,
		MaxChatsPerUser: 7, MaxStreamsPerUser: 0,
		MaxDynamicTools: api.DefaultMaxDynamicTools, MaxSystemPromptBytes: api.DefaultMaxSystemPromptBytes,
	}, got)
}

func TestStreamCap(t *testing.T) {
	t.Parallel()
	l := setupLimits(t, newSQLite, api.Limits{MaxStreamsPerUser: 1})
	chat, err := l.alice.CreateChat(l.ctx, sdk.CreateChatRequest{Title: "watched"})
	require.NoError(t, err)
	url := "ws" + strings.TrimPrefix(l.srv.URL, "http") + "/api/v2/chats/" + chat.ID.String() + "/stream"
	dial := func() (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(l.ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + l.aliceTok}}})
	}
	first, _, err := dial()
	require.NoError(t, err)
	_, resp, err := dial()
	require.Error(t, err)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)

	require.NoError(t, first.Close(websocket.StatusNormalClosure, ""))
	require.Eventually(t, func() bool {
		c, _, err := dial()
		if err != nil {
			return false
		}
		c.CloseNow()
		return true
	}, 10*time.Second, 5*time.Millisecond, "a closed stream frees its slot")
}

func TestListQueryBound(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		l := setupLimits(t, newStore, api.Limits{})
		_, err := l.alice.CreateChat(l.ctx, sdk.CreateChatRequest{Title: "needle"})
		require.NoError(t, err)
		err = l.alice.Do(l.ctx, http.MethodGet, "/chats?q="+strings.Repeat("é", api.MaxQueryLen), nil, nil)
		require.NoError(t, err, "at the bound (characters, not bytes)")
		err = l.alice.Do(l.ctx, http.MethodGet, "/chats?q="+strings.Repeat("a", 50_001), nil, nil)
		e := requireCode(t, err, http.StatusBadRequest, sdk.CodeValidation)
		require.Equal(t, "q", e.Validations[0].Field)
	})
}

// A client that lost the answer of a durable create learns the chat id
// from the in-progress refusal, and can act on the chat.
func TestInProgressNamesTheChat(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		d := setup(t, newStore)
		// A title keeps the title generator from taking the hanging reply.
		hang := llmtest.Hang()
		d.llm.Enqueue(hang)
		id := uuid.New()
		created, err := d.alice.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "slow", Content: sdk.Text("slow"), RequestID: &id})
		require.NoError(t, err)
		<-hang.Started()
		_, err = d.alice.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "slow", Content: sdk.Text("slow"), RequestID: &id})
		e := requireCode(t, err, http.StatusConflict, sdk.CodeInvocationInProgress)
		require.NotNil(t, e.ChatID)
		require.Equal(t, created.ID, *e.ChatID)
		_, err = d.alice.Interrupt(d.ctx, *e.ChatID)
		require.NoError(t, err)

		// Another caller learns nothing.
		_, err = d.bob.CreateChat(d.ctx, sdk.CreateChatRequest{Title: "slow", Content: sdk.Text("slow"), RequestID: &id})
		e = requireCode(t, err, http.StatusConflict, sdk.CodeInvocationConflict)
		require.Nil(t, e.ChatID)
	})
}

// TestChatQuotaConcurrent: creates racing for the last places of the
// quota take exactly those places; the rest are refused (the owner's lock
// serialises the count and the insert).
func TestChatQuotaConcurrent(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		const quota, racers = 3, 12
		l := setupLimits(t, newStore, api.Limits{MaxChatsPerUser: quota})
		_, err := l.alice.CreateChat(l.ctx, sdk.CreateChatRequest{Title: "first"})
		require.NoError(t, err)
		statuses := make(chan int, racers)
		start := make(chan struct{})
		for range racers {
			go func() {
				<-start
				status, _, _ := l.post(t, l.aliceTok, "/chats", sdk.CreateChatRequest{Title: "racer"})
				statuses <- status
			}()
		}
		close(start)
		created, refused := 0, 0
		for range racers {
			switch s := <-statuses; s {
			case http.StatusCreated:
				created++
			case http.StatusTooManyRequests:
				refused++
			default:
				t.Errorf("unexpected status %d", s)
			}
		}
		require.Equal(t, quota-1, created, "exactly the free places are taken")
		require.Equal(t, racers-quota+1, refused)
		chats, err := l.alice.ListChats(l.ctx, sdk.ListChatsOptions{})
		require.NoError(t, err)
		require.Len(t, chats, quota)
	})
}
