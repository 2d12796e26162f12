package chatstate_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/chatstate/chatstatetest"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

func TestAutoArchiveCutoff(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		return v
	}
	for _, tc := range []struct {
		now  string
		days int
		want string
	}{
		{"2026-03-04T05:06:07Z", 1, "2026-03-03T00:00:00Z"},
		{"2026-03-04T00:00:00Z", 1, "2026-03-03T00:00:00Z"},
		{"2026-03-04T23:59:59.999Z", 30, "2026-02-02T00:00:00Z"},
		// The day is the UTC day, whatever the clock's zone.
		{"2026-03-04T01:00:00+03:00", 1, "2026-03-02T00:00:00Z"},
		{"2026-03-01T12:00:00Z", 1, "2026-02-28T00:00:00Z"},
	} {
		got := chatstate.AutoArchiveCutoff(at(tc.now), tc.days)
		require.True(t, at(tc.want).Equal(got), "%s - %d days: %s", tc.now, tc.days, got)
		require.Equal(t, time.UTC, got.Location())
	}
}

// aaFamily is a root chat in W and a child in W, each with a finished turn
// (so RequestCompaction can start them running without a new message).
func aaFamily(t *testing.T, f *fixture) (root, child uuid.UUID) {
	t.Helper()
	root = f.build(t, chatstatetest.Spec{State: chatstate.StateW, Turns: 1}).ID
	f.do(t, func(tx *chatstate.Tx) error {
		res, err := tx.Create(chatstate.CreateParams{
			OwnerID: f.user.ID, Title: "child", ParentChatID: uuid.NullUUID{UUID: root, Valid: true},
			Input: f.input("subtask"),
		})
		child = res.Chat.ID
		return err
	})
	f.acquire(t, child)
	f.do(t, func(tx *chatstate.Tx) error {
		if _, err := tx.CommitStep(child, assistantStep("done")); err != nil {
			return err
		}
		_, err := tx.FinishTurn(child)
		return err
	})
	return root, child
}

// aaMessage sends a message to an idle chat and lets its turn finish, so
// the chat is idle again with a new message in its history.
func aaMessage(t *testing.T, f *fixture, id uuid.UUID) {
	t.Helper()
	f.do(t, func(tx *chatstate.Tx) error {
		_, err := tx.SendMessage(id, f.input("still here"), chatstate.BusyQueue)
		return err
	})
	f.acquire(t, id)
	f.do(t, func(tx *chatstate.Tx) error {
		_, err := tx.FinishTurn(id)
		return err
	})
}

func (f *fixture) autoArchive(id uuid.UUID, cutoff time.Time) (chatstate.Result, error) {
	var res chatstate.Result
	err := f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
		var err error
		res, err = tx.AutoArchive(id, cutoff)
		return err
	})
	return res, err
}

func TestAutoArchive(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		// Each case builds a family three days before "now", takes the
		// cutoff of one day, changes the family after the (lock-free)
		// candidate read would have seen it, and calls AutoArchive.
		const days = 1
		qualifies := func(t *testing.T, f *fixture, root uuid.UUID, cutoff time.Time) {
			t.Helper()
			var listed []uuid.UUID
			require.NoError(t, f.s.ReadTx(f.ctx, func(r store.Reader) error {
				cs, err := r.ChatListArchivable(f.ctx, store.ArchivableParams{Cutoff: cutoff})
				for _, c := range cs {
					listed = append(listed, c.ID)
				}
				return err
			}))
			require.Contains(t, listed, root, "the family is a candidate when read")
		}

		t.Run("an old unused family is archived, root then descendants", func(t *testing.T) {
			f := setup(t, newStore)
			root, child := aaFamily(t, f)
			f.advance(3 * 24 * time.Hour)
			cutoff := chatstate.AutoArchiveCutoff(f.clock(), days)
			qualifies(t, f, root, cutoff)
			f.pub.take()

			res, err := f.autoArchive(root, cutoff)
			require.NoError(t, err)
			require.Equal(t, chatstate.StateXW, res.State)
			require.Len(t, res.Members, 1)
			require.Equal(t, child, res.Members[0].ID)
			require.True(t, f.snap(t, root).Chat.Archived)
			require.True(t, f.snap(t, child).Chat.Archived)
			require.Len(t, f.pub.take(), 2, "one chat:update per family member")

			t.Run("unarchived without a new message, it is archived again", func(t *testing.T) {
				f.do(t, func(tx *chatstate.Tx) error {
					_, err := tx.UpdateMetadata(root, chatstate.MetadataChange{Archived: new(false)})
					return err
				})
				require.False(t, f.snap(t, child).Chat.Archived)
				qualifies(t, f, root, cutoff)
				_, err := f.autoArchive(root, cutoff)
				require.NoError(t, err)
				require.True(t, f.snap(t, root).Chat.Archived)
				require.True(t, f.snap(t, child).Chat.Archived)
			})
		})

		for _, tc := range []struct {
			name string
			// change runs after the candidate read; child is the family's child.
			change func(t *testing.T, f *fixture, root, child uuid.UUID)
		}{
			{"a message arrived in the root", func(t *testing.T, f *fixture, root, _ uuid.UUID) {
				aaMessage(t, f, root)
			}},
			{"a message arrived in a child", func(t *testing.T, f *fixture, _, child uuid.UUID) {
				aaMessage(t, f, child)
			}},
			{"the root was pinned", func(t *testing.T, f *fixture, root, _ uuid.UUID) {
				f.do(t, func(tx *chatstate.Tx) error {
					_, err := tx.UpdateMetadata(root, chatstate.MetadataChange{PinOrder: new(int64(1))})
					return err
				})
			}},
			{"the root was archived", func(t *testing.T, f *fixture, root, _ uuid.UUID) {
				f.do(t, func(tx *chatstate.Tx) error {
					_, err := tx.UpdateMetadata(root, chatstate.MetadataChange{Archived: new(true)})
					return err
				})
			}},
			{"the root started running", func(t *testing.T, f *fixture, root, _ uuid.UUID) {
				f.do(t, func(tx *chatstate.Tx) error {
					_, err := tx.RequestCompaction(root)
					return err
				})
			}},
			{"a child started running", func(t *testing.T, f *fixture, _, child uuid.UUID) {
				f.do(t, func(tx *chatstate.Tx) error {
					_, err := tx.RequestCompaction(child)
					return err
				})
			}},
		} {
			t.Run("skipped: "+tc.name, func(t *testing.T) {
				f := setup(t, newStore)
				root, child := aaFamily(t, f)
				f.advance(3 * 24 * time.Hour)
				cutoff := chatstate.AutoArchiveCutoff(f.clock(), days)
				qualifies(t, f, root, cutoff)
				tc.change(t, f, root, child)
				before := map[uuid.UUID]snapshot{root: f.snap(t, root), child: f.snap(t, child)}
				f.pub.take()

				_, err := f.autoArchive(root, cutoff)
				require.ErrorIs(t, err, chatstate.ErrNotArchivable)
				for id, snap := range before {
					require.Equal(t, snap, f.snap(t, id), "a skipped family is untouched (no snapshot bump)")
				}
				require.Empty(t, f.pub.take(), "a skipped family publishes nothing")
			})
		}

		t.Run("skipped: created after the cutoff, or not a root", func(t *testing.T) {
			f := setup(t, newStore)
			root, child := aaFamily(t, f)
			cutoff := chatstate.AutoArchiveCutoff(f.clock(), days)
			_, err := f.autoArchive(root, cutoff)
			require.ErrorIs(t, err, chatstate.ErrNotArchivable)
			f.advance(3 * 24 * time.Hour)
			_, err = f.autoArchive(child, chatstate.AutoArchiveCutoff(f.clock(), days))
			require.ErrorIs(t, err, chatstate.ErrNotArchivable)
			_, err = f.autoArchive(uuid.New(), cutoff)
			require.ErrorIs(t, err, chatstate.ErrNotArchivable)
			require.False(t, f.snap(t, root).Chat.Archived)
		})
	})
}
