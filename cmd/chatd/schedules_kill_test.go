package main

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
)

// TestScheduleSurvivesKill9: a chatd process SIGKILLed while a schedule
// fires every second, then restarted, leaves exactly one prompt per fired
// due time (none twice, none lost), whatever the kill interrupted.
func TestScheduleSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the chatd binary")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := chatdBinary(t)
	addr := freeAddr(t)
	token := "schedule-kill-token"
	env := []string{"CHATD_DB=" + filepath.Join(t.TempDir(), "chatd.db"), "CHATD_ADDR=" + addr, "CHATD_BOOTSTRAP_TOKEN=" + token,
		"CHATD_DEFAULT_MODEL=demo", "CHATD_MIN_SCHEDULE_INTERVAL=1s"}
	client := sdk.New("http://"+addr, token)

	fired := func(chatID, id uuid.UUID) int {
		runs, err := client.ScheduleRuns(ctx, chatID, id)
		require.NoError(t, err)
		n := 0
		for _, r := range runs {
			if r.Status == sdk.ScheduleRunFired {
				n++
			}
		}
		return n
	}
	srv := startServer(t, bin, env, addr)
	chat, err := client.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("hello")})
	require.NoError(t, err)
	sc, err := client.CreateSchedule(ctx, chat.ID, sdk.CreateScheduleRequest{Content: sdk.Text("tick"), Every: "1s"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return fired(chat.ID, sc.ID) >= 2 }, time.Minute, 50*time.Millisecond, "no runs:\n%s", srv.out)
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGKILL))
	<-srv.done

	srv = startServer(t, bin, env, addr)
	before := fired(chat.ID, sc.ID)
	require.Eventually(t, func() bool { return fired(chat.ID, sc.ID) >= before+2 }, time.Minute, 50*time.Millisecond, "no runs after the restart:\n%s", srv.out)
	off := false
	_, err = client.UpdateSchedule(ctx, chat.ID, sc.ID, sdk.UpdateScheduleRequest{Enabled: &off})
	require.NoError(t, err)

	runs, err := client.ScheduleRuns(ctx, chat.ID, sc.ID)
	require.NoError(t, err)
	requests := map[uuid.UUID]bool{}
	for _, r := range runs {
		if r.Status == sdk.ScheduleRunFired {
			require.False(t, requests[*r.RequestID], "one request per due time")
			requests[*r.RequestID] = true
		}
	}
	// Let the queued prompts run, then every prompt is in history.
	var msgs sdk.ChatMessagesResponse
	require.Eventually(t, func() bool {
		msgs, err = client.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{Limit: 500})
		require.NoError(t, err)
		return len(msgs.QueuedMessages) == 0
	}, time.Minute, 50*time.Millisecond)
	prompts := map[uuid.UUID]int{}
	for _, m := range msgs.Messages {
		if m.CreatedBy != nil && *m.CreatedBy == sc.ID {
			require.NotNil(t, m.RequestID, "a scheduled prompt is a durable request")
			prompts[*m.RequestID]++
		}
	}
	for id, n := range prompts {
		require.Equal(t, 1, n, "request %s has one prompt", id)
		require.True(t, requests[id], "every prompt belongs to a fired run")
	}
	require.Len(t, prompts, len(requests), "every fired run has its prompt, once")
}
