package chatstate_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// dlFamily is a root with a child and a grandchild, each with durable
// requests in every position Delete must settle.
type dlFamily struct {
	root, child, grandchild uuid.UUID
	// Admitted requests: the running turn's and the queued message's of
	// the root and of the child.
	rootTurn, rootQueued, childTurn, childQueued uuid.UUID
	// grandchildDone finished before the delete (completed).
	grandchildDone uuid.UUID
}

// dlAdmit stores an admitted claim for a request of chatID, as the API's
// admission does, and returns the input that carries it.
func dlAdmit(t *testing.T, f *fixture, chatID uuid.UUID, msg string) (uuid.UUID, chatstate.UserInput) {
	t.Helper()
	id := uuid.New()
	require.NoError(t, f.s.InTx(f.ctx, func(tx store.Tx) error {
		return tx.InvocationInsert(f.ctx, store.Invocation{
			RequestID: id, CallerID: f.user.ID, ContentSHA256: "00", Kind: "send_message", ChatID: chatID,
			AuditID: uuid.New(), State: store.InvocationAdmitted, Response: json.RawMessage(`{}`),
			CreatedAt: f.clock(), UpdatedAt: f.clock(),
		})
	}))
	in := f.input(msg)
	in.RequestID = uuid.NullUUID{UUID: id, Valid: true}
	return id, in
}

// dlCreate creates a running, owned chat whose first message carries a
// request, under parent when it is set.
func dlCreate(t *testing.T, f *fixture, parent uuid.UUID) (uuid.UUID, uuid.UUID) {
	t.Helper()
	id := uuid.New()
	req, in := dlAdmit(t, f, id, "hello")
	p := chatstate.CreateParams{ID: id, OwnerID: f.user.ID, Title: "t", Input: in}
	if parent != uuid.Nil {
		p.ParentChatID = uuid.NullUUID{UUID: parent, Valid: true}
	}
	f.do(t, func(tx *chatstate.Tx) error {
		_, err := tx.Create(p)
		return err
	})
	f.acquire(t, id)
	return id, req
}

// dlQueue queues a message carrying a request on a busy chat.
func dlQueue(t *testing.T, f *fixture, chatID uuid.UUID) uuid.UUID {
	t.Helper()
	req, in := dlAdmit(t, f, chatID, "later")
	f.do(t, func(tx *chatstate.Tx) error {
		res, err := tx.SendMessage(chatID, in, chatstate.BusyQueue)
		if err == nil && res.Queued == nil {
			return errors.New("the message was not queued")
		}
		return err
	})
	return req
}

func dlSeed(t *testing.T, f *fixture) dlFamily {
	t.Helper()
	var fam dlFamily
	fam.root, fam.rootTurn = dlCreate(t, f, uuid.Nil)
	fam.rootQueued = dlQueue(t, f, fam.root)
	fam.child, fam.childTurn = dlCreate(t, f, fam.root)
	fam.childQueued = dlQueue(t, f, fam.child)
	fam.grandchild, fam.grandchildDone = dlCreate(t, f, fam.child)
	f.do(t, func(tx *chatstate.Tx) error {
		_, err := tx.FinishTurn(fam.grandchild)
		return err
	})
	require.Equal(t, chatstate.StateR1, f.snap(t, fam.root).State)
	require.Equal(t, chatstate.StateR1, f.snap(t, fam.child).State)
	require.Equal(t, chatstate.StateW, f.snap(t, fam.grandchild).State)
	return fam
}

// dlRequest reads a claim and its outcome.
func dlRequest(t *testing.T, f *fixture, id uuid.UUID) (store.Invocation, chatstate.Outcome) {
	t.Helper()
	var inv store.Invocation
	require.NoError(t, f.s.ReadTx(f.ctx, func(tx store.Reader) error {
		var err error
		inv, err = tx.InvocationGet(f.ctx, id)
		return err
	}))
	var o chatstate.Outcome
	if len(inv.Outcome) > 0 {
		require.NoError(t, json.Unmarshal(inv.Outcome, &o))
	}
	return inv, o
}

func dlRequireCancelled(t *testing.T, f *fixture, id uuid.UUID, what string) {
	t.Helper()
	inv, o := dlRequest(t, f, id)
	require.Equal(t, store.InvocationCompleted, inv.State, "%s: claim state", what)
	require.Equal(t, chatstate.OutcomeCancelled, o.Status, "%s: outcome", what)
}

func dlRequireAdmitted(t *testing.T, f *fixture, id uuid.UUID, what string) {
	t.Helper()
	inv, _ := dlRequest(t, f, id)
	require.Equal(t, store.InvocationAdmitted, inv.State, "%s: claim state", what)
	require.Empty(t, inv.Outcome, "%s: outcome", what)
}

// dlUpdates decodes the chat:update notifications by chat, and the
// chat:ownership ones, which a delete publishes only for the chats that
// held a slot of the concurrent agent limiter (their slot is free), into
// freed; it fails on anything else.
func dlUpdates(t *testing.T, pubs []published) (updates map[uuid.UUID][]chatstate.UpdatePayload, freed []uuid.UUID) {
	t.Helper()
	updates = map[uuid.UUID][]chatstate.UpdatePayload{}
	for _, p := range pubs {
		if p.Channel == pubsub.ChannelOwnership {
			var o chatstate.OwnershipPayload
			require.NoError(t, json.Unmarshal(p.Payload, &o))
			require.True(t, o.SlotFreed, "a deleted chat needs no owner: only its slot is announced")
			freed = append(freed, o.ChatID)
			continue
		}
		var u chatstate.UpdatePayload
		require.NoError(t, json.Unmarshal(p.Payload, &u), "payload on %s", p.Channel)
		require.Equal(t, "chat:update:"+u.ChatID.String(), p.Channel, "only chat:update and chat:ownership are published for a delete")
		updates[u.ChatID] = append(updates[u.ChatID], u)
	}
	return updates, freed
}

// dlHeldSlots lists the chats among ids that held a slot in before.
func dlHeldSlots(before map[uuid.UUID]snapshot, ids ...uuid.UUID) []uuid.UUID {
	var out []uuid.UUID
	for _, id := range ids {
		if c := before[id].Chat; chatstate.HoldsSlot(c.Status, c.WorkerID) {
			out = append(out, id)
		}
	}
	return out
}

// Deleting a chat deletes its descendants with it (the database
// cascades), and the state machine treats every one of them as deleted:
// their unfinished requests end as cancelled, like the chat's own, and each
// gets a chat:update after commit.
func TestDeleteCascadesToDescendants(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		t.Run("a root takes its whole family", func(t *testing.T) {
			f := setup(t, newStore)
			fam := dlSeed(t, f)
			other, otherTurn := dlCreate(t, f, uuid.Nil)
			before := map[uuid.UUID]snapshot{}
			for _, id := range []uuid.UUID{fam.root, fam.child, fam.grandchild, other} {
				before[id] = f.snap(t, id)
			}
			_, doneBefore := dlRequest(t, f, fam.grandchildDone)
			f.pub.take()

			var res chatstate.Result
			f.do(t, func(tx *chatstate.Tx) error {
				var err error
				res, err = tx.Delete(fam.root)
				return err
			})

			require.Equal(t, fam.root, res.Chat.ID)
			require.Equal(t, chatstate.StateN, res.State)
			var members []uuid.UUID
			for _, m := range res.Members {
				members = append(members, m.ID)
			}
			require.Equal(t, []uuid.UUID{fam.child, fam.grandchild}, members, "Result.Members, parents first")
			for _, id := range []uuid.UUID{fam.root, fam.child, fam.grandchild} {
				require.Equal(t, chatstate.StateN, f.snap(t, id).State, "chat %s is gone", id)
			}
			require.Equal(t, before[other], f.snap(t, other), "another family is untouched")

			dlRequireCancelled(t, f, fam.rootTurn, "root's running turn")
			dlRequireCancelled(t, f, fam.rootQueued, "root's queued message")
			dlRequireCancelled(t, f, fam.childTurn, "child's running turn")
			dlRequireCancelled(t, f, fam.childQueued, "child's queued message")
			inv, done := dlRequest(t, f, fam.grandchildDone)
			require.Equal(t, store.InvocationCompleted, inv.State)
			require.Equal(t, chatstate.OutcomeCompleted, done.Status, "a finished request keeps its outcome")
			require.Equal(t, doneBefore, done)
			dlRequireAdmitted(t, f, otherTurn, "another family's request")

			updates, freed := dlUpdates(t, f.pub.take())
			require.ElementsMatch(t, dlHeldSlots(before, fam.root, fam.child, fam.grandchild), freed, "a deleted chat's slot is announced")
			require.Len(t, updates, 3, "one chat:update per deleted chat, none for others")
			for _, id := range []uuid.UUID{fam.root, fam.child, fam.grandchild} {
				require.Len(t, updates[id], 1, "chat:update for %s", id)
				u := updates[id][0]
				require.True(t, u.Deleted, "the payload says the chat is gone")
				require.Equal(t, before[id].Chat.SnapshotVersion+1, u.SnapshotVersion,
					"the delete bumped the snapshot of %s once", id)
			}
		})

		t.Run("a child takes its subtree only", func(t *testing.T) {
			f := setup(t, newStore)
			fam := dlSeed(t, f)
			rootBefore := f.snap(t, fam.root)
			before := map[uuid.UUID]snapshot{}
			for _, id := range []uuid.UUID{fam.child, fam.grandchild} {
				before[id] = f.snap(t, id)
			}
			f.pub.take()

			var res chatstate.Result
			f.do(t, func(tx *chatstate.Tx) error {
				var err error
				res, err = tx.Delete(fam.child)
				return err
			})
			require.Len(t, res.Members, 1)
			require.Equal(t, fam.grandchild, res.Members[0].ID)
			require.Equal(t, chatstate.StateN, f.snap(t, fam.child).State)
			require.Equal(t, chatstate.StateN, f.snap(t, fam.grandchild).State)
			require.Equal(t, rootBefore, f.snap(t, fam.root), "the parent stays as it was")

			dlRequireCancelled(t, f, fam.childTurn, "child's running turn")
			dlRequireCancelled(t, f, fam.childQueued, "child's queued message")
			dlRequireAdmitted(t, f, fam.rootTurn, "root's running turn")
			dlRequireAdmitted(t, f, fam.rootQueued, "root's queued message")

			updates, freed := dlUpdates(t, f.pub.take())
			require.ElementsMatch(t, dlHeldSlots(before, fam.child, fam.grandchild), freed, "a deleted chat's slot is announced")
			require.Len(t, updates, 2)
			require.Len(t, updates[fam.child], 1)
			require.Len(t, updates[fam.grandchild], 1)
		})

		t.Run("a rolled-back delete deletes, settles and publishes nothing", func(t *testing.T) {
			f := setup(t, newStore)
			fam := dlSeed(t, f)
			before := map[uuid.UUID]snapshot{}
			for _, id := range []uuid.UUID{fam.root, fam.child, fam.grandchild} {
				before[id] = f.snap(t, id)
			}
			f.pub.take()
			boom := errors.New("boom")
			err := f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
				if _, err := tx.Delete(fam.root); err != nil {
					return err
				}
				return boom
			})
			require.ErrorIs(t, err, boom)
			for id, s := range before {
				require.Equal(t, s, f.snap(t, id))
			}
			dlRequireAdmitted(t, f, fam.rootTurn, "root's running turn")
			dlRequireAdmitted(t, f, fam.childQueued, "child's queued message")
			require.Empty(t, f.pub.take())
		})

		t.Run("a missing chat is not found", func(t *testing.T) {
			f := setup(t, newStore)
			err := f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
				_, err := tx.Delete(uuid.New())
				return err
			})
			require.ErrorIs(t, err, chatstate.ErrNotFound)
			require.Empty(t, f.pub.take())
		})
	})
}
