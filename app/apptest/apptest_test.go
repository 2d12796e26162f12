package apptest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/demo"
	"github.com/chatd/chatd/app/sdk"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStartRunsATurn: the harness serves a working app whose worker runs
// a user's turn on the demo model.
func TestStartRunsATurn(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Config: config.Config{Worker: apptest.FastWorker(), DemoTokenDelay: demo.NoDelay}})
	me, err := h.Admin.Me(h.Ctx)
	require.NoError(t, err)
	require.True(t, me.Admin)
	alice := h.NewUser(t, "alice")
	chat, err := alice.CreateChat(h.Ctx, sdk.CreateChatRequest{Content: sdk.Text("hello"), Title: "t"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		c, err := alice.Chat(h.Ctx, chat.ID)
		return err == nil && c.Status == sdk.ChatStatusWaiting
	}, 30*time.Second, 5*time.Millisecond)
	chats, err := alice.ListChats(h.Ctx, sdk.ListChatsOptions{})
	require.NoError(t, err)
	require.Len(t, chats, 1, "alice sees her chat")
	require.NotEmpty(t, h.Routes)
}

// TestReplicasShareTheDatabase: a chat created on one replica is read on
// another, which has its own store connection and server.
func TestReplicasShareTheDatabase(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Postgres: true, Config: config.Config{NoWorker: true}})
	other := h.Replicas(t, 1)[0]
	require.NotEqual(t, h.URL, other.URL)
	tok := h.NewUserToken(t, "alice")
	chat, err := h.Client(tok).CreateChat(h.Ctx, sdk.CreateChatRequest{Content: sdk.Text("hello"), Title: "t"})
	require.NoError(t, err)
	got, err := other.Client(tok).Chat(other.Ctx, chat.ID)
	require.NoError(t, err)
	require.Equal(t, chat.ID, got.ID)
}

// TestReopenKeepsState: an app reopened on a stopped app's database has
// what the first committed (a user's chat, a sealed provider key it can
// open) while the first no longer answers; on both stores.
func TestReopenKeepsState(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]apptest.Options{
		"sqlite":   {},
		"postgres": {Postgres: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts.Config = config.Config{NoWorker: true, OpenAIAPIKey: "sk-sealed-0123456789", OpenAIBaseURL: "http://127.0.0.1:1/v1"}
			h := apptest.Start(t, opts)
			tok := h.NewUserToken(t, "alice")
			chat, err := h.Client(tok).CreateChat(h.Ctx, sdk.CreateChatRequest{Title: "kept"})
			require.NoError(t, err)
			h.Stop(t)
			_, err = h.Admin.Me(h.Ctx)
			require.Error(t, err, "a stopped app's server is closed")

			r := h.Reopen(t)
			require.NotEqual(t, h.URL, r.URL)
			got, err := r.Client(tok).Chat(r.Ctx, chat.ID)
			require.NoError(t, err, "the token and the chat survived")
			require.Equal(t, "kept", got.Title)
			models, err := r.Admin.Models(r.Ctx)
			require.NoError(t, err)
			require.NotEmpty(t, models.Models, "the sealed preset opened (a reopened app refuses a key that opens none)")
		})
	}
}

// TestRunServesAndShutsDown: with Options.Run the app is served by
// App.Run on a loopback port, and Shutdown ends it without an error.
func TestRunServesAndShutsDown(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Run: true, Config: config.Config{NoWorker: true}})
	require.Nil(t, h.Server)
	require.True(t, strings.HasPrefix(h.URL, "http://127.0.0.1:"), h.URL)
	me, err := h.Admin.Me(h.Ctx)
	require.NoError(t, err)
	require.True(t, me.Admin)
	require.Contains(t, h.Log.String(), "chatd serving", "App.Run serves it")
	require.NoError(t, h.Shutdown())
	_, err = h.Admin.Me(h.Ctx)
	require.Error(t, err, "shut down")
	require.NoError(t, h.Shutdown(), "again: the same answer")
}
