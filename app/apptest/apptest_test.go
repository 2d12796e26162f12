package apptest_test

import (
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
