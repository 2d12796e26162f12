package stream_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/partbuf"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/stream"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// deafPubsub fails every subscription.
type deafPubsub struct{}

func (deafPubsub) Subscribe(context.Context, string, func([]byte)) (func(), error) {
	return nil, errors.New("pubsub is down")
}

// soloLocator is a single replica with no peers.
type soloLocator struct{ id uuid.UUID }

func (l soloLocator) Local() uuid.UUID { return l.id }

func (soloLocator) Token() string { return "" }

func (soloLocator) Replica(context.Context, uuid.UUID) (store.Replica, error) {
	return store.Replica{}, store.ErrNotFound
}

// serveStream serves s's stream endpoint under the API's path.
func serveStream(t *testing.T, s *stream.Server) string {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v2/chats/{chat}/stream", func(w http.ResponseWriter, r *http.Request) {
		id, err := uuid.Parse(r.PathValue("chat"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		s.HandleStream(w, r, id)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestServerWithoutPubsub: with no notifications at all, the stream still
// bootstraps and follows the chat through the sync poller.
func TestServerWithoutPubsub(t *testing.T) {
	t.Parallel()
	st := dbtest.NewSQLite(t)
	r := newMachineRig(t, st, sdk.Text("hello"))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	poller := stream.NewPoller(st, 50*time.Millisecond, nil, log)
	require.NoError(t, poller.Start(context.Background()))
	defer poller.Stop()
	buf := partbuf.New(partbuf.Config{})
	defer buf.Stop()
	url := serveStream(t, stream.NewServer(stream.Config{Store: st, Pubsub: deafPubsub{}, Poller: poller, Buffer: buf, Locator: soloLocator{uuid.New()}, Log: log}))

	v := dial(t, url, r.chatID)
	require.Equal(t, []string{"hello"}, texts(v.untilStatus(sdk.ChatStatusRunning)))
	r.do(func(tx *chatstate.Tx) error { _, err := tx.Acquire(r.chatID, uuid.New(), uuid.New()); return err })
	r.do(func(tx *chatstate.Tx) error { _, err := tx.CommitStep(r.chatID, assistantStep("hi")); return err })
	r.do(func(tx *chatstate.Tx) error { _, err := tx.FinishTurn(r.chatID); return err })
	v.untilIdle()
}

// TestServerUnknownChat: a chat that does not exist (deleted after the
// authorization check) ends the stream with a normal close.
func TestServerUnknownChat(t *testing.T) {
	t.Parallel()
	st := dbtest.NewSQLite(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	buf := partbuf.New(partbuf.Config{})
	defer buf.Stop()
	url := serveStream(t, stream.NewServer(stream.Config{Store: st, Pubsub: deafPubsub{}, Poller: stream.NewPoller(st, 0, nil, log), Buffer: buf,
		Locator: soloLocator{uuid.New()}, Log: log}))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, streamURL(url, uuid.New()), nil)
	require.NoError(t, err)
	defer conn.CloseNow()
	_, _, err = conn.Read(ctx)
	require.Equal(t, websocket.StatusNormalClosure, websocket.CloseStatus(err))
	var ce websocket.CloseError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "chat deleted", ce.Reason)
}
