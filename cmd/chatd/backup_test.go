package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/dbcopy"
	"github.com/chatd/chatd/app/sdk"
)

func TestBackupAndRestore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	db := filepath.Join(dir, "chatd.db")
	base, stop := serve(t, db)
	admin := createToken(t, db, "--user", "root", "--admin")
	user := createToken(t, db, "--user", "bob")
	alice := sdk.New(base, admin)
	chat, err := alice.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("remember me"), Title: "kept"})
	require.NoError(t, err)

	// Through the admin socket of the running server.
	local := filepath.Join(dir, "local.db")
	out, _, err := cli(t, "backup", "--db", db, "--to", local)
	require.NoError(t, err)
	require.Contains(t, out, "wrote "+local)
	_, _, err = cli(t, "backup", "--db", db, "--to", local)
	require.ErrorContains(t, err, "already exists")

	// Through the API, as an admin only.
	remote := filepath.Join(dir, "remote.db")
	_, _, err = cli(t, "backup", "--url", base, "--token", user, "--to", remote)
	require.ErrorContains(t, err, "403")
	_, err = os.Stat(remote)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing written on a refusal")
	_, _, err = cli(t, "backup", "--url", base, "--token", admin, "--to", remote)
	require.NoError(t, err)

	_, _, err = cli(t, "backup", "--db", "postgres://localhost/chatd", "--to", filepath.Join(dir, "pg.db"))
	require.ErrorContains(t, err, "pg_dump")

	// The server holds its file: no restore over it.
	_, _, err = cli(t, "restore", "--from", local, "--db", db)
	require.ErrorContains(t, err, "another chatd holds")
	stop()

	// Not a chatd database: refused.
	junk := filepath.Join(dir, "junk.db")
	require.NoError(t, os.WriteFile(junk, []byte("not a database at all, just some text that is long enough"), 0o600))
	_, _, err = cli(t, "restore", "--from", junk, "--db", filepath.Join(dir, "x.db"))
	require.ErrorIs(t, err, dbcopy.ErrNotChatd)

	for _, snap := range []string{local, remote} {
		restored := filepath.Join(dir, "restored-"+filepath.Base(snap))
		out, _, err := cli(t, "restore", "--from", snap, "--db", restored)
		require.NoError(t, err)
		require.Contains(t, out, "restored")
		base2, stop2 := serve(t, restored)
		got, err := sdk.New(base2, admin).Chat(ctx, chat.ID)
		require.NoError(t, err, snap)
		require.Equal(t, "kept", got.Title)
		msgs, err := sdk.New(base2, admin).ChatMessages(ctx, chat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, msgs.Messages)
		stop2()
	}

	// Restoring over a stopped server's file replaces it.
	out, _, err = cli(t, "restore", "--from", local, "--db", db)
	require.NoError(t, err, out)
	base3, stop3 := serve(t, db)
	defer stop3()
	_, err = sdk.New(base3, admin).Chat(ctx, chat.ID)
	require.NoError(t, err)
}
