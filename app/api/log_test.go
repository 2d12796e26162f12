package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/open"
	"github.com/chatd/chatd/store/postgres"
)

// TestInternalErrorGoesToAppLog breaks the database under a running server
// (the chats table is renamed away), so listing chats fails with an error
// nobody expects. The answer is the generic 500, and its cause is logged
// with the app's logger, not slog.Default. Not parallel: it replaces the
// global default logger.
func TestInternalErrorGoesToAppLog(t *testing.T) {
	dsn, schema := dbtest.PostgresSchema(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, dsn, postgres.Options{SearchPath: schema})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	require.NoError(t, open.Migrate(ctx, s, func(p *goose.Provider) error { _, err := p.Up(ctx); return err }))

	var defaultLog apptest.LogBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&defaultLog, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	var appLog apptest.LogBuffer
	token := auth.NewToken()
	a, err := app.NewWithStore(ctx, config.Config{BootstrapToken: token}, s, &appLog)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	client := sdk.New(srv.URL, token)

	_, err = client.ListChats(ctx, sdk.ListChatsOptions{})
	require.NoError(t, err, "the server works before the table goes")

	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "ALTER TABLE "+pgx.Identifier{schema, "chats"}.Sanitize()+" RENAME TO chats_gone")
	require.NoError(t, err)

	_, err = client.ListChats(ctx, sdk.ListChatsOptions{})
	requireAPIError(t, err, http.StatusInternalServerError, sdk.CodeInternal)
	require.Contains(t, appLog.String(), "internal error")
	require.Contains(t, appLog.String(), "path=/api/v2/chats")
	require.Contains(t, appLog.String(), "does not exist", "the cause is in the app's log")
	require.Empty(t, defaultLog.String(), "nothing goes to slog.Default")

	// A failure about one chat names it.
	id := uuid.New()
	_, err = client.Chat(ctx, id)
	requireAPIError(t, err, http.StatusInternalServerError, sdk.CodeInternal)
	require.Contains(t, appLog.String(), "chat_id="+id.String())
}
