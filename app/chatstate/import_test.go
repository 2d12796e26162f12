package chatstate_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

func (f *fixture) systemPrompt(t *testing.T, id uuid.UUID) string {
	t.Helper()
	var got string
	require.NoError(t, f.s.ReadTx(f.ctx, func(tx store.Reader) error {
		var err error
		got, err = tx.ChatSystemPromptGet(f.ctx, id)
		return err
	}))
	return got
}

// TestSystemPromptIsMetadata: a change of the system prompt is allowed
// where other metadata is (every state but invalid and archived, running
// ones included) and changes no state, snapshot or history; "" clears it.
func TestSystemPromptIsMetadata(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		for _, st := range chatstate.AllStates {
			if st == chatstate.StateN {
				continue
			}
			t.Run(string(st), func(t *testing.T) {
				id := f.seed(t, st)
				before := f.snap(t, id)
				prompt := "Be brief."
				err := f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
					_, err := tx.UpdateMetadata(id, chatstate.MetadataChange{SystemPrompt: &prompt})
					return err
				})
				after := f.snap(t, id)
				switch {
				case st == chatstate.StateInvalid:
					require.ErrorIs(t, err, chatstate.ErrInvalidState)
					require.Empty(t, f.systemPrompt(t, id))
					return
				case st.Archived():
					require.ErrorIs(t, err, chatstate.ErrChatArchived)
					require.Empty(t, f.systemPrompt(t, id))
					return
				}
				require.NoError(t, err)
				require.Equal(t, prompt, f.systemPrompt(t, id))
				require.Equal(t, before, after, "a system prompt changes no chat row, message or queue")
				empty := ""
				f.do(t, func(tx *chatstate.Tx) error {
					_, err := tx.UpdateMetadata(id, chatstate.MetadataChange{SystemPrompt: &empty})
					return err
				})
				require.Empty(t, f.systemPrompt(t, id))
			})
		}
	})
}

// TestForkCopiesSystemPrompt: a fork has its source's system prompt.
func TestForkCopiesSystemPrompt(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		var id uuid.UUID
		f.do(t, func(tx *chatstate.Tx) error {
			res, err := tx.Create(chatstate.CreateParams{OwnerID: f.user.ID, Title: "t", SystemPrompt: "Be kind.", Input: f.input("hi")})
			id = res.Chat.ID
			return err
		})
		var first int64
		require.NoError(t, f.s.ReadTx(f.ctx, func(tx store.Reader) error {
			ms, err := tx.MessageList(f.ctx, id, store.MessageListParams{})
			first = ms[0].ID
			return err
		}))
		var fork chatstate.Result
		f.do(t, func(tx *chatstate.Tx) error {
			var err error
			fork, err = tx.Fork(chatstate.ForkParams{Source: id, MessageID: first})
			return err
		})
		require.Equal(t, "Be kind.", f.systemPrompt(t, fork.Chat.ID))
	})
}

func rawParts(t *testing.T, parts ...sdk.ChatMessagePart) json.RawMessage {
	t.Helper()
	raw, err := chatstate.EncodeParts(parts)
	require.NoError(t, err)
	return raw
}

// TestImport: an import creates a waiting chat of its owner with a copy
// of the messages (new ids, in order, timestamps kept), its system prompt
// and files linked; a tool call left open gets a result; the owner's
// second import of the export answers the same chat and writes nothing;
// a file that is not an unused file of the owner's is refused.
func TestImport(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		file := f.upload(t, f.user.ID)
		at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
		msgs := []store.Message{
			{Role: store.RoleUser, Content: rawParts(t, sdk.ChatMessagePart{Type: sdk.PartText, Text: "hello"}, sdk.ChatMessagePart{Type: sdk.PartFile, FileID: &file}), CreatedAt: at},
			{Role: store.RoleAssistant, Content: rawParts(t, sdk.ChatMessagePart{Type: sdk.PartText, Text: "hi"},
				sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: "c1", ToolName: "look", Args: json.RawMessage(`{}`)}), CreatedAt: at.Add(time.Second)},
		}
		p := chatstate.ImportParams{OwnerID: f.user.ID, ExportID: "e1", Title: "Imported", SystemPrompt: "Be brief.", Messages: msgs, Files: []uuid.UUID{file}}
		var res chatstate.Result
		var existing bool
		f.do(t, func(tx *chatstate.Tx) error {
			var err error
			res, existing, err = tx.Import(p)
			return err
		})
		require.False(t, existing)
		id := res.Chat.ID
		s := f.snap(t, id)
		require.Equal(t, chatstate.StateW, s.State)
		require.Equal(t, f.user.ID, s.Chat.OwnerID)
		require.Equal(t, "Imported", s.Chat.Title)
		require.Equal(t, "Be brief.", f.systemPrompt(t, id))
		require.Equal(t, []uuid.UUID{file}, f.chatFiles(t, id))
		require.Len(t, s.Messages, 3, "the two messages and the open call's result")
		require.Equal(t, []string{store.RoleUser, store.RoleAssistant, store.RoleTool},
			[]string{s.Messages[0].Role, s.Messages[1].Role, s.Messages[2].Role})
		require.Equal(t, at, s.Messages[0].CreatedAt.UTC())
		require.JSONEq(t, string(msgs[1].Content), string(s.Messages[1].Content))

		// Again: the same chat, nothing written.
		before := f.snap(t, id)
		f.do(t, func(tx *chatstate.Tx) error {
			var err error
			res, existing, err = tx.Import(p)
			return err
		})
		require.True(t, existing)
		require.Equal(t, id, res.Chat.ID)
		require.Equal(t, before, f.snap(t, id))

		// A file already held by a chat is refused; nothing is created.
		p2 := p
		p2.ExportID = "e2"
		err := f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			_, _, err := tx.Import(p2)
			return err
		})
		require.ErrorIs(t, err, chatstate.ErrValidation)
		p2.Files = nil
		f.do(t, func(tx *chatstate.Tx) error {
			var err error
			res, existing, err = tx.Import(p2)
			return err
		})
		require.False(t, existing)
		require.NotEqual(t, id, res.Chat.ID, "another export is another chat")

		p3 := p2
		p3.ExportID = ""
		err = f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			_, _, err := tx.Import(p3)
			return err
		})
		require.ErrorIs(t, err, chatstate.ErrValidation)
	})
}
