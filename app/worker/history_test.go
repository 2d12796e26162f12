package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// The history cache answers what chatstate.FromBoundary reads, and the
// outstanding calls of what it answers are chatstate.OutstandingToolCalls,
// after every kind of history write in a random sequence: replies, tool
// calls and results, edits in place, soft deletes from an earlier message
// (an edit further back), compaction boundaries and their deletion.
func TestHistoryCacheMatchesFromBoundary(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		s := newStore(t)
		ctx := context.Background()
		now := time.Now()
		owner, chat := uuid.New(), uuid.New()
		require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
			if _, err := tx.UserInsert(ctx, store.UserInsertParams{ID: owner, Name: "h", Now: now}); err != nil {
				return err
			}
			_, err := tx.ChatInsert(ctx, store.ChatInsertParams{ID: chat, OwnerID: owner, Title: "h", Status: store.ChatStatusRunning, Now: now})
			return err
		}))
		content := func(parts ...sdk.ChatMessagePart) json.RawMessage {
			raw, err := chatstate.EncodeParts(parts)
			require.NoError(t, err)
			return raw
		}
		// write runs one transaction the way the state machine does: lock
		// the chat, bump its snapshot, write.
		write := func(fn func(tx store.Tx) error) {
			t.Helper()
			require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
				if _, err := tx.ChatLock(ctx, chat); err != nil {
					return err
				}
				if _, err := tx.ChatBumpSnapshot(ctx, chat); err != nil {
					return err
				}
				return fn(tx)
			}))
		}
		insert := func(tx store.Tx, role, visibility string, compressed bool, parts ...sdk.ChatMessagePart) error {
			_, err := tx.MessageInsert(ctx, store.MessageInsertParams{
				ChatID: chat, Role: role, Visibility: visibility, Compressed: compressed, Content: content(parts...), Now: now,
			})
			return err
		}
		live := func() []store.Message {
			var ms []store.Message
			require.NoError(t, s.ReadTx(ctx, func(tx store.Reader) error {
				var err error
				ms, err = tx.MessageList(ctx, chat, store.MessageListParams{})
				return err
			}))
			return ms
		}
		var h historyCache
		check := func(step int, op string) {
			t.Helper()
			require.NoError(t, s.ReadTx(ctx, func(tx store.Reader) error {
				c, err := tx.ChatGet(ctx, chat)
				require.NoError(t, err)
				got, err := h.active(ctx, tx, c)
				require.NoError(t, err)
				want, err := chatstate.FromBoundary(ctx, tx, chat)
				require.NoError(t, err)
				require.Equal(t, want, got, "step %d (%s)", step, op)
				calls, err := chatstate.OutstandingIn(got)
				require.NoError(t, err)
				wantCalls, err := chatstate.OutstandingToolCalls(ctx, tx, chat)
				require.NoError(t, err)
				require.Equal(t, wantCalls, calls, "step %d (%s)", step, op)
				return nil
			}))
		}
		rng := rand.New(rand.NewPCG(1, 2))
		text := func(i int) sdk.ChatMessagePart {
			return sdk.ChatMessagePart{Type: sdk.PartText, Text: fmt.Sprintf("m%d", i)}
		}
		check(0, "empty")
		for step := 1; step <= 150; step++ {
			ms := live()
			var op string
			switch k := rng.IntN(10); {
			case k < 4 || len(ms) < 3:
				op = "turn"
				write(func(tx store.Tx) error {
					if err := insert(tx, store.RoleUser, store.VisibilityBoth, false, text(step)); err != nil {
						return err
					}
					return insert(tx, store.RoleAssistant, store.VisibilityBoth, false, text(step))
				})
			case k == 4:
				op = "tool call, answered later"
				id := fmt.Sprintf("call-%d", step)
				write(func(tx store.Tx) error {
					return insert(tx, store.RoleAssistant, store.VisibilityBoth, false,
						sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: id, ToolName: "t", Args: json.RawMessage(`{}`)})
				})
				check(step, "tool call outstanding")
				write(func(tx store.Tx) error {
					return insert(tx, store.RoleTool, store.VisibilityBoth, false,
						sdk.ChatMessagePart{Type: sdk.PartToolResult, ToolCallID: id, Result: json.RawMessage(`"ok"`)})
				})
			case k == 5:
				op = "edit in place"
				m := ms[rng.IntN(len(ms))]
				write(func(tx store.Tx) error {
					_, err := tx.MessageUpdate(ctx, chat, m.ID, store.MessagePatch{Content: store.Some(content(text(-step)))})
					return err
				})
			case k == 6:
				op = "soft delete from an earlier message"
				m := ms[len(ms)-1-rng.IntN(min(len(ms), 6))]
				write(func(tx store.Tx) error {
					_, err := tx.MessageSoftDeleteFrom(ctx, chat, m.ID)
					return err
				})
			case k == 7:
				op = "compaction boundary"
				write(func(tx store.Tx) error {
					if err := insert(tx, store.RoleUser, store.VisibilityModel, true, text(step)); err != nil {
						return err
					}
					return insert(tx, store.RoleAssistant, store.VisibilityUser, true, text(step))
				})
			case k == 8:
				op = "delete the latest anchor"
				for i := len(ms) - 1; i >= 0; i-- {
					if chatstate.IsBoundaryAnchor(ms[i]) {
						write(func(tx store.Tx) error {
							_, err := tx.MessageUpdate(ctx, chat, ms[i].ID, store.MessagePatch{Deleted: store.Some(true)})
							return err
						})
						break
					}
				}
			default:
				op = "hide a message from the model"
				m := ms[rng.IntN(len(ms))]
				write(func(tx store.Tx) error {
					_, err := tx.MessageUpdate(ctx, chat, m.ID, store.MessagePatch{Visibility: store.Some(store.VisibilityUser)})
					return err
				})
			}
			check(step, op)
		}
		// A view kept from a newer snapshot than the reader's is not used.
		require.NoError(t, s.ReadTx(ctx, func(tx store.Reader) error {
			c, err := tx.ChatGet(ctx, chat)
			require.NoError(t, err)
			h.put(chat, c.HistoryVersion+1, nil)
			got, err := h.active(ctx, tx, c)
			require.NoError(t, err)
			want, err := chatstate.FromBoundary(ctx, tx, chat)
			require.NoError(t, err)
			require.Equal(t, want, got)
			return nil
		}))
	})
}

func TestHistoryCacheEvictsLeastRecentlyUsed(t *testing.T) {
	var h historyCache
	ids := make([]uuid.UUID, maxCachedHistories+1)
	for i := range ids {
		ids[i] = uuid.New()
		h.put(ids[i], 1, []store.Message{{ID: int64(i)}})
		if i == 0 {
			continue
		}
		h.put(ids[0], 1, []store.Message{{ID: 0}}) // keep the first one in use
	}
	require.Len(t, h.chats, maxCachedHistories)
	require.Contains(t, h.chats, ids[0])
	require.NotContains(t, h.chats, ids[1], "the least recently used went")
	require.Contains(t, h.chats, ids[len(ids)-1])

	big := make([]store.Message, 1)
	big[0].Content = make(json.RawMessage, maxCachedHistoryBytes/4+1)
	h.put(ids[2], 2, big)
	require.NotContains(t, h.chats, ids[2], "a chat larger than a quarter of the bound is not kept")
}
