package e2e_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/stream"
	"github.com/chatd/chatd/store"
)

// The replica row holds a hash: what is stored does not open another
// replica's parts endpoint.
func TestReplicaTokenStoredHashed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rig := apptest.Start(t, apptest.Options{Postgres: true, Config: config.Config{NoWorker: true}})
	s, srv := rig.Store, rig.Server

	chat, err := rig.Admin.CreateChat(ctx, sdk.CreateChatRequest{Title: "relayed"})
	require.NoError(t, err)
	var row store.Replica
	require.NoError(t, s.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		row, err = tx.ReplicaGet(ctx, rig.Worker.ID())
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
