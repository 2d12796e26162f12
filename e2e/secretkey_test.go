package e2e_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/store"
)

// The tests here are of construction: app.New finding, creating or
// refusing the secret key of a database path, so they call it directly.

// sealingConfig is a SQLite config whose first start seals a provider
// API key (the OPENAI_API_KEY preset) in the database.
func sealingConfig(db string) config.Config {
	return config.Config{DB: db, NoWorker: true, OpenAIAPIKey: "sk-sealed-0123456789", OpenAIBaseURL: "http://127.0.0.1:1/v1"}
}

// A start through a symlink that is refused (another chatd holds the
// database) writes no key file next to the link; a later start through
// the link uses the key file next to the real database, and the secrets
// sealed with it open.
func TestSecretKeyFileThroughSymlink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "chatd.db")
	link := filepath.Join(t.TempDir(), "link.db")
	require.NoError(t, os.Symlink(db, link))

	a, err := app.New(ctx, sealingConfig(db), io.Discard)
	require.NoError(t, err)
	key, err := os.ReadFile(db + ".secret-key")
	require.NoError(t, err)

	_, err = app.New(ctx, sealingConfig(link), io.Discard)
	require.ErrorIs(t, err, store.ErrLocked)
	require.NoFileExists(t, link+".secret-key", "a refused start writes no key file")
	require.NoError(t, a.Close())

	b, err := app.New(ctx, sealingConfig(link), io.Discard)
	require.NoError(t, err, "the key next to the real database opens its secrets")
	require.NoError(t, b.Close())
	require.NoFileExists(t, link+".secret-key")
	again, err := os.ReadFile(db + ".secret-key")
	require.NoError(t, err)
	require.Equal(t, key, again)
}

// A hard link names no real path: a refused start through it writes
// nothing, and a start through it when nothing runs is refused, naming
// the key file it looked for, instead of creating a key that cannot open
// the database's secrets.
func TestSecretKeyFileThroughHardLink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "chatd.db")
	hard := filepath.Join(dir, "hard.db")

	a, err := app.New(ctx, sealingConfig(db), io.Discard)
	require.NoError(t, err)
	require.NoError(t, os.Link(db, hard))
	_, err = app.New(ctx, sealingConfig(hard), io.Discard)
	require.ErrorIs(t, err, store.ErrLocked)
	require.NoFileExists(t, hard+".secret-key", "a refused start writes no key file")
	require.NoError(t, a.Close())

	_, err = app.New(ctx, sealingConfig(hard), io.Discard)
	require.ErrorContains(t, err, "no key file "+hard+".secret-key")
	require.ErrorContains(t, err, "sealed secrets")
	require.NoFileExists(t, hard+".secret-key")

	// With the right key in place, the start goes on.
	key, err := os.ReadFile(db + ".secret-key")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(hard+".secret-key", key, 0o600))
	b, err := app.New(ctx, sealingConfig(hard), io.Discard)
	require.NoError(t, err)
	require.NoError(t, b.Close())
}

// A key that opens none of the secrets sealed in the database is refused
// at start, naming where it came from: the key file, or
// CHATD_SECRET_KEY. A rotation (the old key as the previous one) starts.
func TestSecretKeyMustOpenSealedSecrets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "chatd.db")
	a, err := app.New(ctx, sealingConfig(db), io.Discard)
	require.NoError(t, err)
	require.NoError(t, a.Close())

	keyFile := db + ".secret-key"
	right, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(keyFile, []byte("some-other-key-0123456789\n"), 0o600))
	_, err = app.New(ctx, sealingConfig(db), io.Discard)
	require.ErrorContains(t, err, "the secret key in "+keyFile+" opens none of the 1 secrets sealed in the database")

	cfg := sealingConfig(db)
	cfg.SecretKey = "yet-another-key-0123456789"
	_, err = app.New(ctx, cfg, io.Discard)
	require.ErrorContains(t, err, "CHATD_SECRET_KEY opens none of the 1 secrets sealed in the database")

	cfg.SecretKeyPrevious = string(right[:len(right)-1])
	b, err := app.New(ctx, cfg, io.Discard)
	require.NoError(t, err, "a rotation from the right key")
	require.NoError(t, b.Close())
}
