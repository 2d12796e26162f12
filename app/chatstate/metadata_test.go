package chatstate_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestMetadataAllowed is API.md's rule for changes that are not
// transitions, over every state.
func TestMetadataAllowed(t *testing.T) {
	t.Parallel()
	for _, st := range chatstate.AllStates {
		for _, mutates := range []bool{false, true} {
			err := chatstate.MetadataAllowed(st, mutates)
			switch {
			case st == chatstate.StateInvalid:
				require.ErrorIs(t, err, chatstate.ErrInvalidState, "%s", st)
				require.NotErrorIs(t, err, chatstate.ErrChatArchived)
			case st.Archived() && mutates:
				require.ErrorIs(t, err, chatstate.ErrChatArchived, "%s", st)
				require.NotErrorIs(t, err, chatstate.ErrInvalidState)
			default:
				require.NoError(t, err, "%s mutates=%v", st, mutates)
			}
		}
	}
}

// TestUpdateMetadata changes title, labels and pin of a chat in every
// state: they are written without a transition (no snapshot bump, no
// notification, updated_at kept; title_updated_at set) unless the chat is
// invalid or archived; an archived chat takes them together with its
// unarchiving. A refused change changes nothing.
func TestUpdateMetadata(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		title, labels, pin := "renamed", map[string]string{"k": "v"}, int64(3)
		servers := []uuid.UUID{uuid.New()}
		change := chatstate.MetadataChange{Title: &title, Labels: &labels, PinOrder: &pin, MCPServerIDs: store.Some(servers)}
		for _, st := range chatstate.AllStates {
			t.Run(string(st), func(t *testing.T) {
				id := f.seed(t, st)
				before := f.snap(t, id)
				f.pub.take()
				f.advance(time.Second)
				var res chatstate.Result
				err := f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
					var err error
					res, err = tx.UpdateMetadata(id, change)
					return err
				})
				after := f.snap(t, id)
				switch {
				case st == chatstate.StateN:
					require.ErrorIs(t, err, chatstate.ErrNotFound)
				case st == chatstate.StateInvalid:
					require.ErrorIs(t, err, chatstate.ErrInvalidState)
				case st.Archived():
					require.ErrorIs(t, err, chatstate.ErrChatArchived)
				default:
					require.NoError(t, err)
					require.Equal(t, title, after.Chat.Title)
					require.Equal(t, store.TitleSourceUser, after.Chat.TitleSource)
					require.Equal(t, f.clock(), after.Chat.TitleUpdatedAt)
					require.Equal(t, labels, after.Chat.Labels)
					require.Equal(t, pin, after.Chat.PinOrder)
					require.Equal(t, servers, after.Chat.MCPServerIDs)
					require.Equal(t, before.Chat.SnapshotVersion, after.Chat.SnapshotVersion, "metadata is not a transition")
					require.Equal(t, before.Chat.UpdatedAt, after.Chat.UpdatedAt, "metadata leaves updated_at")
					require.Equal(t, before.State, after.State)
					require.Equal(t, after.Chat, res.Chat, "the result is the committed row")
					require.Equal(t, after.State, res.State)
					require.Empty(t, f.pub.take(), "metadata publishes nothing")
					return
				}
				require.Equal(t, before, after, "a refused change changed the chat")
				require.Empty(t, f.pub.take())
			})
		}

		t.Run("with unarchiving", func(t *testing.T) {
			id := f.seed(t, chatstate.StateXW)
			unarchive := false
			c := change
			c.Archived = &unarchive
			f.do(t, func(tx *chatstate.Tx) error {
				_, err := tx.UpdateMetadata(id, c)
				return err
			})
			after := f.snap(t, id)
			require.Equal(t, chatstate.StateW, after.State)
			require.Equal(t, title, after.Chat.Title)
			require.Equal(t, pin, after.Chat.PinOrder)
		})

		t.Run("the MCP selection alone, back to every server", func(t *testing.T) {
			id := f.create(t, "")
			for _, ids := range [][]uuid.UUID{{}, servers, nil} {
				f.do(t, func(tx *chatstate.Tx) error {
					_, err := tx.UpdateMetadata(id, chatstate.MetadataChange{MCPServerIDs: store.Some(ids)})
					return err
				})
				require.Equal(t, ids, f.snap(t, id).Chat.MCPServerIDs)
			}
			xw := f.seed(t, chatstate.StateXW)
			err := f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
				_, err := tx.UpdateMetadata(xw, chatstate.MetadataChange{MCPServerIDs: store.Some(servers)})
				return err
			})
			require.ErrorIs(t, err, chatstate.ErrChatArchived, "changing the selection mutates the chat")
		})

		t.Run("a user title outranks a generated one, not the reverse", func(t *testing.T) {
			id := f.create(t, "")
			var wrote bool
			f.do(t, func(tx *chatstate.Tx) error {
				var err error
				wrote, err = tx.WriteTitle(id, "mine", store.TitleSourceUser)
				return err
			})
			require.True(t, wrote)
			f.do(t, func(tx *chatstate.Tx) error {
				var err error
				wrote, err = tx.WriteTitle(id, "generated", store.TitleSourceGenerated)
				return err
			})
			require.False(t, wrote)
			require.Equal(t, "mine", f.snap(t, id).Chat.Title)
			err := f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
				_, err := tx.WriteTitle(uuid.New(), "x", store.TitleSourceUser)
				return err
			})
			require.True(t, errors.Is(err, store.ErrNotFound), "%v", err)
		})
	})
}

// TestRunnableWithoutOwner: a worker should acquire exactly the unarchived
// chats in a runnable status that no runner owns.
func TestRunnableWithoutOwner(t *testing.T) {
	t.Parallel()
	owner := uuid.NullUUID{UUID: uuid.New(), Valid: true}
	for _, status := range store.AllChatStatuses {
		runnable := status == store.ChatStatusRunning || status == store.ChatStatusInterrupting ||
			status == store.ChatStatusRequiresAction
		for _, archived := range []bool{false, true} {
			for _, o := range []struct {
				name           string
				worker, runner uuid.NullUUID
				owned          bool
			}{
				{"unowned", uuid.NullUUID{}, uuid.NullUUID{}, false},
				{"owned", owner, owner, true},
				{"half-owned", owner, uuid.NullUUID{}, false},
			} {
				want := runnable && !archived && !o.owned
				require.Equal(t, want, chatstate.RunnableWithoutOwner(status, archived, o.worker, o.runner),
					"status=%s archived=%v %s", status, archived, o.name)
			}
		}
	}
}

// TestSomethingToCompact: only an uncompressed assistant message after the
// boundary is something to compact.
func TestSomethingToCompact(t *testing.T) {
	t.Parallel()
	anchor := store.Message{Role: store.RoleUser, Visibility: store.VisibilityModel, Compressed: true}
	user := store.Message{Role: store.RoleUser, Visibility: store.VisibilityBoth}
	summary := store.Message{Role: store.RoleAssistant, Compressed: true}
	reply := store.Message{Role: store.RoleAssistant}
	require.False(t, chatstate.SomethingToCompact(nil))
	require.False(t, chatstate.SomethingToCompact([]store.Message{anchor, summary, user}))
	require.True(t, chatstate.SomethingToCompact([]store.Message{anchor, summary, user, reply}))
	require.True(t, chatstate.SomethingToCompact([]store.Message{user, reply}))
}

// TestCreateMCPServerIDs: Create stores the chat's MCP server selection as
// given: nil (every server), empty (none) or a list.
func TestCreateMCPServerIDs(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		for _, ids := range [][]uuid.UUID{nil, {}, {uuid.New(), uuid.New()}} {
			var res chatstate.Result
			f.do(t, func(tx *chatstate.Tx) error {
				var err error
				res, err = tx.Create(chatstate.CreateParams{OwnerID: f.user.ID, Title: "t", MCPServerIDs: ids})
				return err
			})
			require.Equal(t, ids, res.Chat.MCPServerIDs)
			require.Equal(t, ids, f.snap(t, res.Chat.ID).Chat.MCPServerIDs)
		}
	})
}
