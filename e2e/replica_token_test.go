package e2e_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/stream"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// The replica row holds a hash: what is stored does not open another
// replica's parts endpoint.
func TestReplicaTokenStoredHashed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := dbtest.NewPostgres(t)
	admin := auth.NewToken()
	a, err := app.NewWithStore(ctx, config.Config{BootstrapToken: admin, NoWorker: true}, s, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	a.SetAdvertiseURL(srv.URL)
	require.NoError(t, a.Start(ctx))
	t.Cleanup(a.Stop)

	chat, err := sdk.New(srv.URL, admin).CreateChat(ctx, sdk.CreateChatRequest{Title: "relayed"})
	require.NoError(t, err)
	var row store.Replica
	require.NoError(t, s.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		row, err = tx.ReplicaGet(ctx, a.Internals().Worker.ID())
		return err
	}))
	require.Len(t, row.TokenHash, 64)

	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/api/v2/chats/" + chat.ID.String() + "/stream/parts"
	for name, h := range map[string]http.Header{
		"the stored hash as the token": {stream.ReplicaWorkerHeader: {row.WorkerID.String()}, stream.ReplicaTokenHeader: {row.TokenHash}},
		"an unknown worker":            {stream.ReplicaWorkerHeader: {uuid.NewString()}, stream.ReplicaTokenHeader: {row.TokenHash}},
		"no worker":                    {stream.ReplicaTokenHeader: {row.TokenHash}},
	} {
		_, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
		require.Error(t, err, name)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, name)
	}
}
