package storetest

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// SystemPromptsMigrationVersion is the migration that makes a chat's
// system prompt metadata (issue 33).
const SystemPromptsMigrationVersion = 25

// SystemPromptsMigration holds both stores to one answer for migration
// 00025: a chat whose first message is a system message with text gets
// that text as its system prompt; a chat without one (or whose system
// message is not its first) gets none; the messages stay as they were. s
// must be migrated up to the version before; this migrates it up.
func SystemPromptsMigration(t *testing.T, s store.Store, raw func(query string, args ...any) error, p *goose.Provider) {
	ctx := context.Background()
	user := uuid.New()
	withPrompt, without, late := uuid.New(), uuid.New(), uuid.New()
	stamp := q(s, `'2026-01-02T03:04:05.000000Z'`, `now()`)
	require.NoError(t, raw(q(s, `INSERT INTO users (id, name, created_at) VALUES (?, 'old', `+stamp+`)`,
		`INSERT INTO users (id, name, created_at) VALUES ($1, 'old', `+stamp+`)`), user.String()))
	msg := func(chat uuid.UUID, role, content string) {
		t.Helper()
		require.NoError(t, raw(q(s,
			`INSERT INTO chat_messages (chat_id, role, content, visibility, created_at) VALUES (?, ?, ?, 'model', `+stamp+`)`,
			`INSERT INTO chat_messages (chat_id, role, content, visibility, created_at) VALUES ($1, $2, $3::jsonb, 'model', `+stamp+`)`),
			chat.String(), role, content))
	}
	for _, chat := range []uuid.UUID{withPrompt, without, late} {
		require.NoError(t, raw(q(s,
			`INSERT INTO chats (id, owner_id, title, title_source, title_updated_at, status, created_at, updated_at)
			 VALUES (?, ?, 'old chat', 'fallback', `+stamp+`, 'waiting', `+stamp+`, `+stamp+`)`,
			`INSERT INTO chats (id, owner_id, title, title_source, title_updated_at, status, created_at, updated_at)
			 VALUES ($1, $2, 'old chat', 'fallback', `+stamp+`, 'waiting', `+stamp+`, `+stamp+`)`), chat.String(), user.String()))
	}
	msg(withPrompt, store.RoleSystem, `[{"type":"text","text":"Be brief."}]`)
	msg(withPrompt, store.RoleUser, `[{"type":"text","text":"hi"}]`)
	msg(without, store.RoleUser, `[{"type":"text","text":"hi"}]`)
	msg(late, store.RoleUser, `[{"type":"text","text":"hi"}]`)
	msg(late, store.RoleSystem, `[{"type":"text","text":"not a prompt"}]`)

	_, err := p.UpTo(ctx, SystemPromptsMigrationVersion)
	require.NoError(t, err)

	want := map[uuid.UUID]string{withPrompt: "Be brief.", without: "", late: ""}
	require.NoError(t, s.ReadTx(ctx, func(tx store.Reader) error {
		for chat, text := range want {
			got, err := tx.ChatSystemPromptGet(ctx, chat)
			require.NoError(t, err)
			require.Equal(t, text, got, "chat %s", chat)
		}
		ms, err := tx.MessageList(ctx, withPrompt, store.MessageListParams{})
		require.Len(t, ms, 2, "the system message stays in history")
		return err
	}))
}
