package stream_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/stream"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestShutdownClosesStreamsWithServiceRestart: a shutting-down server ends
// the chat streams and the chat-list watch with WebSocket status 1012
// (Service Restart) and a reason, so clients reconnect (to another replica
// behind a load balancer) rather than report an error.
func TestShutdownClosesStreamsWithServiceRestart(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := startApp(t, newStore(t), demoConfig())
		chat := createChat(t, r.client, "hello")
		v := dial(t, r.srv.URL, chat.ID)
		v.untilStatus(sdk.ChatStatusWaiting)

		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		watch, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.srv.URL, "http")+"/api/v2/chats/watch",
			&websocket.DialOptions{HTTPHeader: http.Header{"Coder-Session-Token": {token}}})
		require.NoError(t, err)
		defer watch.CloseNow()
		watchEnded := make(chan error, 1)
		go func() {
			for {
				if _, _, err := watch.Read(context.Background()); err != nil {
					watchEnded <- err
					return
				}
			}
		}()

		require.NoError(t, r.app.Shutdown(ctx))
		require.Equal(t, websocket.StatusServiceRestart, v.closed(), "the chat stream")
		requireRestart(t, v.err)
		requireRestart(t, <-watchEnded)

		// A watch whose handshake completes as the server closes (here:
		// after) gets the same 1012, not a dropped connection.
		late, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.srv.URL, "http")+"/api/v2/chats/watch",
			&websocket.DialOptions{HTTPHeader: http.Header{"Coder-Session-Token": {token}}})
		require.NoError(t, err)
		defer late.CloseNow()
		_, _, err = late.Read(ctx)
		requireRestart(t, err)
	})
}

// requireRestart checks that err is the server's 1012 close with its reason.
func requireRestart(t *testing.T, err error) {
	t.Helper()
	var ce websocket.CloseError
	require.True(t, errors.As(err, &ce), "a close frame, not %v", err)
	require.Equal(t, websocket.StatusServiceRestart, ce.Code)
	require.Equal(t, stream.RestartReason, ce.Reason)
}
