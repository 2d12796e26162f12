package main

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
)

// TestSIGTERMDrainsAndExitsZero: SIGTERM to a real `chatd serve` whose
// only chat is mid-turn (the model never finishes) drains for at most
// CHATD_SHUTDOWN_TIMEOUT and exits 0; the turn is left for the next start,
// which finishes it.
func TestSIGTERMDrainsAndExitsZero(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the chatd binary")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := chatdBinary(t)

	hang := llmtest.Join(llmtest.TextChunks("Half an"), llmtest.Hang())
	llm := llmtest.NewOpenAI(t, hang, llmtest.TextChunks("The whole answer."))
	db := filepath.Join(dir, "chatd.db")
	addr := freeAddr(t)
	token := "shutdown-test-token"
	const timeout = 2 * time.Second
	env := []string{"CHATD_DB=" + db, "CHATD_ADDR=" + addr, "CHATD_BOOTSTRAP_TOKEN=" + token,
		"OPENAI_BASE_URL=" + llm.URL, "CHATD_DEFAULT_MODEL=openai/test-model",
		"CHATD_SHUTDOWN_TIMEOUT=" + timeout.String()}
	client := sdk.New("http://"+addr, token)

	srv := startServer(t, bin, env, addr)
	chat, err := client.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("A long question"), Title: "sigterm"})
	require.NoError(t, err)
	select {
	case <-hang.Started():
	case <-ctx.Done():
		t.Fatalf("the model never streamed:\n%s", srv.out)
	}

	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-srv.done:
	case <-ctx.Done():
		t.Fatalf("chatd did not exit after SIGTERM:\n%s", srv.out)
	}
	require.Equal(t, 0, srv.cmd.ProcessState.ExitCode(), "exit status after SIGTERM:\n%s", srv.out)
	require.Contains(t, srv.out.String(), "turns still running are left for the next start", "the drain waited for the turn")
	require.Contains(t, srv.out.String(), "shut down")

	// The next start resumes the turn; nothing was marked failed.
	srv = startServer(t, bin, env, addr)
	var got sdk.Chat
	require.Eventually(t, func() bool {
		got, err = client.Chat(ctx, chat.ID)
		return err == nil && got.Status == sdk.ChatStatusWaiting
	}, time.Minute, 20*time.Millisecond, "the turn was not resumed:\n%s", srv.out)
	require.Nil(t, got.LastError)
	resp, err := client.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{Limit: 10})
	require.NoError(t, err)
	var roles []string
	for _, m := range resp.Messages {
		roles = append(roles, m.Role)
	}
	require.Equal(t, []string{"user", "assistant"}, roles, "exactly one answer")
	require.Len(t, llm.Requests(), 2)
}
