package storetest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// testChatSearch runs one table of searches against a fixed data set: every
// store must return exactly these chats, so both stores agree.
func testChatSearch(t *testing.T, b *bundle) {
	named := map[string]uuid.UUID{}
	name := map[uuid.UUID]string{}
	n := 0
	chat := func(key, title string, fn func(tx store.Tx, id uuid.UUID)) {
		n++
		c := b.newChat(t, func(p *store.ChatInsertParams) {
			p.Title = title
			p.Now = b.now.Add(time.Duration(n) * time.Minute)
		})
		named[key], name[c.ID] = c.ID, key
		if fn != nil {
			b.transition(t, c.ID, func(tx store.Tx) error { fn(tx, c.ID); return nil })
		}
	}
	msg := func(tx store.Tx, id uuid.UUID, role, visibility string, content json.RawMessage) store.Message {
		m, err := tx.MessageInsert(b.ctx, store.MessageInsertParams{
			ChatID: id, Role: role, Visibility: visibility, Content: content, Now: b.now,
		})
		require.NoError(t, err)
		return m
	}
	text := func(tx store.Tx, id uuid.UUID, role, s string) store.Message {
		return msg(tx, id, role, "", b.text(s))
	}
	var zebraMsg, grapeMsg int64

	chat("title", "Quarterly Report", nil)
	chat("assistant", "Ping", func(tx store.Tx, id uuid.UUID) {
		text(tx, id, store.RoleUser, "hello there")
		zebraMsg = text(tx, id, store.RoleAssistant, "The answer is Zebrafish42, and zebrafish again").ID
		text(tx, id, store.RoleAssistant, "zebrafish once more")
	})
	chat("unicode", "Pong", func(tx store.Tx, id uuid.UUID) {
		text(tx, id, store.RoleUser, "Ärger über Ωμέγα")
	})
	chat("percent", "Sale", func(tx store.Tx, id uuid.UUID) {
		text(tx, id, store.RoleUser, `discount 100% off_now, path C:\tmp, he said "stop" twice`)
	})
	chat("deleted", "Fruit", func(tx store.Tx, id uuid.UUID) {
		m := text(tx, id, store.RoleUser, "obsolete banana text")
		_, err := tx.MessageSoftDeleteFrom(b.ctx, id, m.ID)
		require.NoError(t, err)
		text(tx, id, store.RoleUser, "fresh apple text")
	})
	chat("edited", "Berries", func(tx store.Tx, id uuid.UUID) {
		m := text(tx, id, store.RoleUser, "old cherry words")
		m, err := tx.MessageUpdate(b.ctx, id, m.ID, store.MessagePatch{Content: store.Some(b.text("new grape words"))})
		require.NoError(t, err)
		grapeMsg = m.ID
	})
	chat("archived", "Tropical", func(tx store.Tx, id uuid.UUID) {
		text(tx, id, store.RoleUser, "archived mango")
		_, err := tx.ChatUpdate(b.ctx, id, store.ChatPatch{Archived: store.Some(true)})
		require.NoError(t, err)
	})
	chat("hidden", "Citrus", func(tx store.Tx, id uuid.UUID) {
		text(tx, id, store.RoleTool, "secret kiwi")
		msg(tx, id, store.RoleUser, store.VisibilityModel, b.text("model-only lemon"))
		msg(tx, id, store.RoleAssistant, "", json.RawMessage(`[{"type":"reasoning","text":"thinking lime"},{"type":"text","text":"visible plum"},{"type":"text","text":"second papaya"}]`))
	})
	chat("renamed", "Old Name Walrus", nil)
	b.transition(t, named["renamed"], func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, named["renamed"], store.ChatPatch{Title: store.Some("New Name Narwhal")})
		return err
	})

	owner := uuid.NullUUID{UUID: b.user.ID, Valid: true}
	yes, no := true, false
	for _, tc := range []struct {
		q        string
		archived *bool
		want     []string // newest first
	}{
		{q: "quarterly", want: []string{"title"}},
		{q: "QUARTERLY rep", want: []string{"title"}},
		{q: "zebrafish42", want: []string{"assistant"}},
		{q: "ZEBRAFISH", want: []string{"assistant"}},
		{q: "hello there", want: []string{"assistant"}},
		{q: "äRGER", want: []string{"unicode"}},
		{q: "ΩΜΈΓΑ", want: []string{"unicode"}},
		{q: "Ωμ", want: []string{"unicode"}},
		{q: "100% off", want: []string{"percent"}},
		{q: "100%", want: []string{"percent"}},
		{q: "0%", want: []string{"percent"}},
		{q: "%", want: []string{"percent"}},
		{q: "off_now", want: []string{"percent"}},
		{q: "100_", want: nil},
		{q: "_", want: []string{"percent"}},
		{q: "t_", want: nil},
		{q: "f%n", want: nil},
		{q: `c:\tmp`, want: []string{"percent"}},
		{q: `c:\\tmp`, want: nil},
		{q: `"stop"`, want: []string{"percent"}},
		{q: `"stop" twice`, want: []string{"percent"}},
		{q: `"`, want: []string{"percent"}},
		{q: "banana", want: []string{"deleted"}}, // off the active branch, still a version (issue 32)
		{q: "apple", want: []string{"deleted"}},
		{q: "cherry", want: nil},
		{q: "grape", want: []string{"edited"}},
		{q: "mango", want: []string{"archived"}},
		{q: "mango", archived: &no, want: nil},
		{q: "mango", archived: &yes, want: []string{"archived"}},
		{q: "ropic", archived: &yes, want: []string{"archived"}},
		{q: "kiwi", want: nil},
		{q: "lemon", want: nil},
		{q: "lime", want: nil},
		{q: "plum", want: []string{"hidden"}},
		{q: "papaya", want: []string{"hidden"}},
		{q: "plum\nsecond", want: []string{"hidden"}},
		{q: "walrus", want: nil},
		{q: "narwhal", want: []string{"renamed"}},
		{q: "ze", want: []string{"assistant"}},
		{q: "NG", want: []string{"archived", "unicode", "assistant"}},
		{q: "nothing like this", want: nil},
	} {
		var got []string
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			cs, err := tx.ChatList(b.ctx, store.ChatListParams{OwnerID: owner, Archived: tc.archived, Query: tc.q})
			for _, c := range cs {
				got = append(got, name[c.ID])
			}
			return err
		}))
		require.Equal(t, tc.want, got, "q=%q archived=%v", tc.q, tc.archived)
	}

	// Hits: the oldest matching message of each chat matched by text.
	hits := func(q string) map[string]store.SearchHit {
		out := map[string]store.SearchHit{}
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			ids := make([]uuid.UUID, 0, len(named))
			for _, id := range named {
				ids = append(ids, id)
			}
			slices.SortFunc(ids, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
			hs, err := tx.ChatSearchHits(b.ctx, ids, q)
			for _, h := range hs {
				out[name[h.ChatID]] = h
			}
			return err
		}))
		return out
	}
	for _, q := range []string{"zebrafish", "ze"} {
		hs := hits(q)
		require.Len(t, hs, 1, q)
		require.Equal(t, zebraMsg, hs["assistant"].MessageID, q)
		require.Equal(t, "The answer is Zebrafish42, and zebrafish again", hs["assistant"].Text, q)
	}
	hs := hits("grape")
	require.Equal(t, map[string]store.SearchHit{"edited": {ChatID: named["edited"], MessageID: grapeMsg, Text: "new grape words"}}, hs)
	require.Equal(t, "visible plum\nsecond papaya", hits("papaya")["hidden"].Text, "text parts, one per line")
	require.Empty(t, hits("quarterly"), "a title match has no message hit")
	require.Equal(t, "obsolete banana text", hits("banana")["deleted"].Text, "a hidden version is a hit (issue 32)")
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		hs, err := tx.ChatSearchHits(b.ctx, nil, "zebrafish")
		require.NotNil(t, hs)
		require.Empty(t, hs)
		return err
	}))

	// Deleting a chat takes its index rows along.
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		return tx.ChatDelete(b.ctx, named["assistant"])
	}))
	var cs []store.Chat
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		var err error
		cs, err = tx.ChatList(b.ctx, store.ChatListParams{OwnerID: owner, Query: "zebrafish"})
		return err
	}))
	require.Empty(t, cs)
}

// The title query escapes LIKE metacharacters, backslash included.
func testChatListQuery(t *testing.T, b *bundle) {
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{Title: store.Some(`C:\Temp\x`)})
		return err
	})
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		cs, err := tx.ChatList(b.ctx, store.ChatListParams{Query: `c:\temp`})
		require.NoError(t, err)
		require.Len(t, cs, 1)
		cs, err = tx.ChatList(b.ctx, store.ChatListParams{Query: `c:\\temp`})
		require.NoError(t, err)
		require.Empty(t, cs)
		cs, err = tx.ChatList(b.ctx, store.ChatListParams{AfterID: uuid.NullUUID{UUID: uuid.New(), Valid: true}})
		require.NoError(t, err)
		require.Empty(t, cs, "an unknown cursor yields an empty page")
		return nil
	}))

	// Case folding is Unicode's, not ASCII's, on both stores.
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{Title: store.Some("Ärger im Büro")})
		return err
	})
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		cs, err := tx.ChatList(b.ctx, store.ChatListParams{Query: "ärger IM bÜro"})
		require.NoError(t, err)
		require.Len(t, cs, 1)
		return nil
	}))
}
