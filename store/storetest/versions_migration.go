package storetest

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// VersionsMigrationVersion is the migration that gives messages parents
// (issue 32).
const VersionsMigrationVersion = 20

// VersionsMigration holds both stores to one answer for migration 00020:
// an existing chat becomes a single-branch tree (each live message's
// parent the live message before it), the messages an edit deleted before
// stay deleted (pruned, in no branch), and the backfill moves no revision
// and no history_version. s must be migrated up to the version before
// (p.UpTo(ctx, VersionsMigrationVersion-1)); this migrates it up.
func VersionsMigration(t *testing.T, s store.Store, raw func(query string, args ...any) error, p *goose.Provider) {
	ctx := context.Background()
	user, chat := uuid.New(), uuid.New()
	stamp := q(s, `'2026-01-02T03:04:05.000000Z'`, `now()`)
	// Raw statements on a connection of their own: the typed operations of
	// this build expect the new columns (and the SQLite store's search
	// flush reads them at every commit).
	require.NoError(t, raw(q(s, `INSERT INTO users (id, name, created_at) VALUES (?, 'old', `+stamp+`)`,
		`INSERT INTO users (id, name, created_at) VALUES ($1, 'old', `+stamp+`)`), user.String()))
	require.NoError(t, raw(q(s,
		`INSERT INTO chats (id, owner_id, title, title_source, title_updated_at, status, created_at, updated_at)
		 VALUES (?, ?, 'old chat', 'fallback', `+stamp+`, 'waiting', `+stamp+`, `+stamp+`)`,
		`INSERT INTO chats (id, owner_id, title, title_source, title_updated_at, status, created_at, updated_at)
		 VALUES ($1, $2, 'old chat', 'fallback', `+stamp+`, 'waiting', `+stamp+`, `+stamp+`)`), chat.String(), user.String()))
	// user, assistant, an edited user turn and its reply (deleted by the
	// edit), then the replacement turn and its reply.
	rows := []struct {
		role    string
		deleted bool
	}{
		{store.RoleUser, false}, {store.RoleAssistant, false},
		{store.RoleUser, true}, {store.RoleAssistant, true},
		{store.RoleUser, false}, {store.RoleAssistant, false},
	}
	for _, r := range rows {
		del := q(s, "0", "false")
		if r.deleted {
			del = q(s, "1", "true")
		}
		require.NoError(t, raw(q(s,
			`INSERT INTO chat_messages (chat_id, role, content, deleted, created_at) VALUES (?, ?, '[]', `+del+`, `+stamp+`)`,
			`INSERT INTO chat_messages (chat_id, role, content, deleted, created_at) VALUES ($1, $2, '[]', `+del+`, `+stamp+`)`),
			chat.String(), r.role))
	}
	var before store.Chat
	require.NoError(t, s.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		before, err = tx.ChatGet(ctx, chat)
		return err
	}))

	_, err := p.UpTo(ctx, VersionsMigrationVersion)
	require.NoError(t, err)

	var (
		after store.Chat
		ms    []store.Message
	)
	require.NoError(t, s.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		if after, err = tx.ChatGet(ctx, chat); err != nil {
			return err
		}
		ms, err = tx.MessageList(ctx, chat, store.MessageListParams{IncludeDeleted: true})
		return err
	}))
	require.Equal(t, before.HistoryVersion, after.HistoryVersion, "the backfill is no history change")
	require.Len(t, ms, len(rows))
	id := func(i int) *int64 { return &ms[i].ID }
	wantParent := []*int64{nil, id(0), id(1), id(2), id(1), id(4)}
	for i, m := range ms {
		require.Equal(t, wantParent[i], m.ParentID, "parent of row %d", i)
		require.Equal(t, rows[i].deleted, m.Pruned, "row %d: an edit's deletion stays", i)
		require.Equal(t, rows[i].deleted, m.Deleted, "row %d", i)
		require.Equal(t, before.HistoryVersion, m.Revision, "row %d keeps its revision", i)
	}
	require.Equal(t, []int64{ms[4].ID}, ms[4].SiblingIDs, "a pruned turn is no version of its replacement")
	var tree []store.MessageNode
	require.NoError(t, s.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		tree, err = tx.MessageTree(ctx, chat)
		return err
	}))
	require.Len(t, tree, 4, "pruned rows are in no branch")

	// Down and up again: the schema goes back and forth.
	_, err = p.DownTo(ctx, VersionsMigrationVersion-1)
	require.NoError(t, err)
	_, err = p.UpTo(ctx, VersionsMigrationVersion)
	require.NoError(t, err)
}
