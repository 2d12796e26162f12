package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/demo"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/webhooks"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestScheduleAndWebhookEndToEnd: over HTTP, with the worker and the demo
// model, a webhook hears a chat's turn end, a schedule fires into the chat
// on the fake clock as a durable request, and the turn it starts is heard
// too, signed.
func TestScheduleAndWebhookEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		c := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
		h := apptest.Start(t, apptest.Options{Store: newStore, Config: config.Config{Clock: c, DemoTokenDelay: demo.NoDelay,
			Webhooks: webhooks.Config{AllowPrivate: true}}})
		ctx, cancel := context.WithTimeout(h.Ctx, time.Minute)
		t.Cleanup(cancel)
		alice := h.NewUser(t, "alice")

		events := make(chan sdk.WebhookEvent, 8)
		var secret string
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if !sdk.VerifyWebhookSignature(secret, body, r.Header.Get(sdk.HeaderWebhookSignature)) {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			var ev sdk.WebhookEvent
			if json.Unmarshal(body, &ev) == nil {
				events <- ev
			}
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(recv.Close)
		hook, err := alice.CreateWebhook(ctx, sdk.CreateWebhookRequest{URL: recv.URL, Events: []string{sdk.EventTurnCompleted}})
		require.NoError(t, err)
		require.NotEmpty(t, hook.Secret, "made up and shown once")
		secret = hook.Secret
		next := func() sdk.WebhookEvent {
			t.Helper()
			select {
			case ev := <-events:
				return ev
			case <-ctx.Done():
				t.Fatal("no webhook delivery")
				return sdk.WebhookEvent{}
			}
		}

		chat, err := alice.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("hello")})
		require.NoError(t, err)
		ev := next()
		require.Equal(t, sdk.EventTurnCompleted, ev.Event)
		require.Equal(t, chat.ID, ev.ChatID)

		sc, err := alice.CreateSchedule(ctx, chat.ID, sdk.CreateScheduleRequest{Content: sdk.Text("status?"), Every: "1m"})
		require.NoError(t, err)
		require.Equal(t, c.Now().Add(time.Minute), *sc.NextRunAt)
		err = alice.Do(ctx, http.MethodPost, "/chats/"+chat.ID.String()+"/schedules",
			sdk.CreateScheduleRequest{Content: sdk.Text("x"), Every: "5s"}, nil)
		require.ErrorContains(t, err, "CHATD_MIN_SCHEDULE_INTERVAL")

		// The runner waits on the fake clock: move it to the due time, then
		// nudge it until the run shows (the runner may pick its timer just
		// after a move). The nudges stay far below the next due time: a
		// clock moved past it would fire a second run, rightly.
		var runs []sdk.ScheduleRun
		due := *sc.NextRunAt
		require.Eventually(t, func() bool {
			step := time.Millisecond
			if left := due.Sub(c.Now()); left > 0 {
				step = min(left, 10*time.Second)
			}
			c.Advance(step)
			runs, err = alice.ScheduleRuns(ctx, chat.ID, sc.ID)
			require.NoError(t, err)
			return len(runs) > 0
		}, 30*time.Second, 20*time.Millisecond)
		require.Equal(t, sdk.ScheduleRunFired, runs[0].Status)
		require.Equal(t, sc.NextRunAt.UTC(), runs[0].DueAt.UTC())
		require.NotNil(t, runs[0].RequestID)
		ev = next()
		require.Equal(t, chat.ID, ev.ChatID, "the scheduled turn is heard")
		_, err = alice.ChatSchedules(ctx, chat.ID)
		require.NoError(t, err)

		msgs, err := alice.ChatMessages(ctx, chat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		var scheduled int
		for _, m := range msgs.Messages {
			if m.CreatedBy != nil && *m.CreatedBy == sc.ID {
				scheduled++
			}
		}
		require.Equal(t, 1, scheduled, "authored as the schedule")
		var lookup map[string]any
		require.NoError(t, alice.Do(ctx, http.MethodGet, "/requests/"+runs[0].RequestID.String(), nil, &lookup))

		all, err := alice.Schedules(ctx)
		require.NoError(t, err)
		require.Len(t, all, 1)
		off := false
		sc, err = alice.UpdateSchedule(ctx, chat.ID, sc.ID, sdk.UpdateScheduleRequest{Enabled: &off})
		require.NoError(t, err)
		require.Nil(t, sc.NextRunAt)
		ds, err := alice.WebhookDeliveries(ctx, hook.ID)
		require.NoError(t, err)
		require.Len(t, ds, 2)
		require.Equal(t, "delivered", ds[0].Status)
		require.NoError(t, alice.DeleteSchedule(ctx, chat.ID, sc.ID))
		require.NoError(t, alice.DeleteWebhook(ctx, hook.ID))
		hooks, err := alice.Webhooks(ctx)
		require.NoError(t, err)
		require.Empty(t, hooks)
	})
}
