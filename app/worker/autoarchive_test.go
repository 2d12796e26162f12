package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// The auto-archive tests build chats at the rig clock's start, move the
// clock on by days and run ticks by hand (autoArchivePass) or the loop on
// the fake clock.

const aaDays = 2

// aaIdle creates an idle chat (under parent when set) whose history has
// one finished turn.
func (g *fixture) aaIdle(parent uuid.UUID) uuid.UUID {
	g.t.Helper()
	p := chatstate.CreateParams{OwnerID: g.owner, Title: "t", TitleSource: store.TitleSourceUser,
		Input: chatstate.UserInput{Content: sdk.Text("hello")}}
	if parent != uuid.Nil {
		p.ParentChatID = uuid.NullUUID{UUID: parent, Valid: true}
	}
	var id uuid.UUID
	g.do(func(t *chatstate.Tx) error {
		res, err := t.Create(p)
		id = res.Chat.ID
		return err
	})
	g.aaFinish(id)
	return id
}

// aaFinish ends the chat's running turn, so it is idle again.
func (g *fixture) aaFinish(id uuid.UUID) {
	g.t.Helper()
	g.do(func(t *chatstate.Tx) error {
		_, err := t.FinishTurn(id)
		return err
	})
}

// aaMessage sends an idle chat a message (now) and finishes its turn.
func (g *fixture) aaMessage(id uuid.UUID) {
	g.t.Helper()
	g.do(func(t *chatstate.Tx) error {
		_, err := t.SendMessage(id, chatstate.UserInput{Content: sdk.Text("still here")}, chatstate.BusyQueue)
		return err
	})
	g.aaFinish(id)
}

func (g *fixture) aaMetadata(id uuid.UUID, c chatstate.MetadataChange) {
	g.t.Helper()
	g.do(func(t *chatstate.Tx) error {
		_, err := t.UpdateMetadata(id, c)
		return err
	})
}

func (g *fixture) aaPass() int {
	g.t.Helper()
	n, err := g.w.autoArchivePass(g.ctx)
	require.NoError(g.t, err)
	return n
}

func TestAutoArchive(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupOn(t, newStore(t), Config{AutoArchiveDays: aaDays})
		old := g.aaIdle(uuid.Nil)
		oldChild := g.aaIdle(old)
		pinned := g.aaIdle(uuid.Nil)
		g.aaMetadata(pinned, chatstate.MetadataChange{PinOrder: new(int64(1))})
		running := g.create("busy")
		childMessaged := g.aaIdle(uuid.Nil)
		messagedChild := g.aaIdle(childMessaged)
		rootMessaged := g.aaIdle(uuid.Nil)
		alreadyArchived := g.aaIdle(uuid.Nil)
		g.aaMetadata(alreadyArchived, chatstate.MetadataChange{Archived: new(true)})

		// Nothing is older than the cutoff yet.
		require.Zero(t, g.aaPass())
		g.clock.Advance(aaDays * 24 * time.Hour)
		require.Zero(t, g.aaPass(), "the cutoff is midnight %d days ago, before the chats were made", aaDays)

		g.clock.Advance(24 * time.Hour)
		g.aaMessage(messagedChild)
		g.aaMessage(rootMessaged)
		before := g.chat(alreadyArchived)

		require.Equal(t, 1, g.aaPass())
		require.True(t, g.chat(old).Archived)
		require.True(t, g.chat(oldChild).Archived, "the family is archived with its root")
		for name, id := range map[string]uuid.UUID{
			"pinned": pinned, "running": running, "a child's recent message": childMessaged,
			"its child": messagedChild, "a recent message": rootMessaged,
		} {
			require.False(t, g.chat(id).Archived, "%s keeps the chat", name)
		}
		require.Equal(t, before, g.chat(alreadyArchived), "an archived chat is not touched")

		require.Zero(t, g.aaPass(), "nothing more to archive")

		// Unarchiving is not activity: the next tick archives it again.
		g.aaMetadata(old, chatstate.MetadataChange{Archived: new(false)})
		require.False(t, g.chat(oldChild).Archived)
		require.Equal(t, 1, g.aaPass())
		require.True(t, g.chat(old).Archived)
		require.True(t, g.chat(oldChild).Archived)

		// A new message is: after unarchiving and writing, it stays.
		g.aaMetadata(old, chatstate.MetadataChange{Archived: new(false)})
		g.aaMessage(oldChild)
		require.Zero(t, g.aaPass())
		require.False(t, g.chat(old).Archived)
	})
}

// TestAutoArchiveRechecksUnderLock: a message that arrives between the
// candidate read and the archiving transaction keeps the chat.
func TestAutoArchiveRechecksUnderLock(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupOn(t, newStore(t), Config{AutoArchiveDays: aaDays})
		kept := g.aaIdle(uuid.Nil)
		child := g.aaIdle(kept)
		archived := g.aaIdle(uuid.Nil)
		g.clock.Advance((aaDays + 1) * 24 * time.Hour)
		cutoff := chatstate.AutoArchiveCutoff(g.clock.Now(), aaDays)

		candidates, err := g.w.archiveCandidates(g.ctx, cutoff)
		require.NoError(t, err)
		var ids []uuid.UUID
		for _, c := range candidates {
			ids = append(ids, c.ID)
		}
		require.ElementsMatch(t, []uuid.UUID{kept, archived}, ids)

		g.aaMessage(child)
		n, err := g.w.archiveFamilies(g.ctx, candidates, cutoff)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.False(t, g.chat(kept).Archived, "the message after the read keeps the family")
		require.False(t, g.chat(child).Archived)
		require.True(t, g.chat(archived).Archived, "the other candidate is still archived")
	})
}

// TestAutoArchiveLoop: the loop runs a tick at once and then one per
// interval on the worker's clock.
func TestAutoArchiveLoop(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		g := setupOn(t, newStore(t), Config{AutoArchiveDays: aaDays})
		id := g.aaIdle(uuid.Nil)
		g.clock.Advance((aaDays + 1) * 24 * time.Hour)

		ctx, cancel := context.WithCancel(g.ctx)
		var wg sync.WaitGroup
		wg.Go(func() { g.w.autoArchiveLoop(ctx) })
		t.Cleanup(func() { cancel(); wg.Wait() })

		// The loop sleeps on the clock once a tick is done.
		require.NoError(t, g.clock.BlockUntil(ctx, 1))
		require.True(t, g.chat(id).Archived, "the first tick runs at once")

		g.aaMetadata(id, chatstate.MetadataChange{Archived: new(false)})
		g.clock.Advance(DefaultAutoArchiveInterval - time.Second)
		require.False(t, g.chat(id).Archived, "no tick before the interval")
		g.clock.Advance(time.Second)
		eventually(t, func() bool { return g.peek(id).Archived }, "the next tick archives it again")
	})
}
