package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// newProject creates a project of the bundle's user.
func (b *bundle) newProject(t *testing.T, name string) store.Project {
	t.Helper()
	var p store.Project
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		var err error
		p, err = tx.ProjectInsert(b.ctx, store.ProjectInsertParams{
			ID: uuid.New(), OwnerID: b.user.ID, Name: name, Instructions: "be brief", Now: b.now,
		})
		return err
	}))
	return p
}

func testProjects(t *testing.T, b *bundle) {
	p := b.newProject(t, "alpha")
	require.Equal(t, "alpha", p.Name)
	require.Equal(t, "be brief", p.Instructions)
	require.Equal(t, b.user.ID, p.OwnerID)
	require.Equal(t, b.now, p.CreatedAt)
	require.Equal(t, b.now, p.UpdatedAt)

	var other store.User
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		var err error
		other, err = tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: "bob", Now: b.now})
		if err != nil {
			return err
		}
		_, err = tx.ProjectInsert(b.ctx, store.ProjectInsertParams{ID: uuid.New(), OwnerID: other.ID, Name: "bob's", Now: b.now.Add(time.Second)})
		return err
	}))

	later := b.now.Add(time.Minute)
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		got, err := tx.ProjectUpdate(b.ctx, p.ID, store.ProjectPatch{Instructions: store.Some("be thorough"), UpdatedAt: store.Some(later)})
		require.NoError(t, err)
		require.Equal(t, "alpha", got.Name)
		require.Equal(t, "be thorough", got.Instructions)
		require.Equal(t, later, got.UpdatedAt)
		_, err = tx.ProjectUpdate(b.ctx, uuid.New(), store.ProjectPatch{Name: store.Some("x")})
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		all, err := tx.ProjectList(b.ctx, store.ProjectListParams{})
		require.NoError(t, err)
		require.Len(t, all, 2)
		require.Equal(t, p.ID, all[0].ID, "oldest first")
		mine, err := tx.ProjectList(b.ctx, store.ProjectListParams{OwnerID: uuid.NullUUID{UUID: b.user.ID, Valid: true}})
		require.NoError(t, err)
		require.Len(t, mine, 1)
		require.Equal(t, "be thorough", mine[0].Instructions)
		_, err = tx.ProjectGet(b.ctx, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))

	// A chat in the project: listed by project, counted, and it keeps the
	// project from being deleted.
	in := b.newChat(t, func(c *store.ChatInsertParams) { c.ProjectID = uuid.NullUUID{UUID: p.ID, Valid: true} })
	require.Equal(t, uuid.NullUUID{UUID: p.ID, Valid: true}, in.ProjectID)
	require.False(t, b.chat.ProjectID.Valid)
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		chats, err := tx.ChatList(b.ctx, store.ChatListParams{ProjectID: uuid.NullUUID{UUID: p.ID, Valid: true}})
		require.NoError(t, err)
		require.Len(t, chats, 1)
		require.Equal(t, in.ID, chats[0].ID)
		n, err := tx.ProjectCountChats(b.ctx, p.ID)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		return nil
	}))
	err := b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.ProjectDelete(b.ctx, p.ID)
		return err
	})
	require.ErrorIs(t, err, store.ErrForeignKey)
	err = b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.ChatInsert(b.ctx, store.ChatInsertParams{
			ID: uuid.New(), OwnerID: b.user.ID, Status: store.ChatStatusWaiting, Now: b.now,
			ProjectID: uuid.NullUUID{UUID: uuid.New(), Valid: true},
		})
		return err
	})
	require.ErrorIs(t, err, store.ErrForeignKey, "a chat in a project that does not exist")

	// Moving the chat out (and back, and out) goes through ChatPatch.
	b.transition(t, in.ID, func(tx store.Tx) error {
		c, err := tx.ChatUpdate(b.ctx, in.ID, store.ChatPatch{ProjectID: store.Some(uuid.NullUUID{})})
		require.NoError(t, err)
		require.False(t, c.ProjectID.Valid)
		return nil
	})
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		c, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{ProjectID: store.Some(uuid.NullUUID{UUID: p.ID, Valid: true})})
		require.NoError(t, err)
		require.Equal(t, p.ID, c.ProjectID.UUID)
		_, err = tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{ProjectID: store.Some(uuid.NullUUID{})})
		return err
	})

	// Without chats it goes, and its memories with it.
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.MemoryUpsert(b.ctx, store.Memory{ProjectID: p.ID, Name: "a", Content: "x", UpdatedAt: b.now})
		require.NoError(t, err)
		n, err := tx.ProjectDelete(b.ctx, p.ID)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		n, err = tx.ProjectDelete(b.ctx, p.ID)
		require.NoError(t, err)
		require.EqualValues(t, 0, n)
		return nil
	}))
	require.EqualValues(t, 0, b.memoryCount(t, p.ID))
}

// memoryCount counts a project's memories.
func (b *bundle) memoryCount(t *testing.T, projectID uuid.UUID) int64 {
	t.Helper()
	var n int64
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		var err error
		n, err = tx.MemoryCount(b.ctx, projectID)
		return err
	}))
	return n
}

func testMemories(t *testing.T, b *bundle) {
	p := b.newProject(t, "alpha")
	chat := uuid.NullUUID{UUID: b.chat.ID, Valid: true}
	var first store.Memory
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.ProjectLockMemory(b.ctx, p.ID)
		require.NoError(t, err)
		first, err = tx.MemoryUpsert(b.ctx, store.Memory{ProjectID: p.ID, Name: "style", Content: "short", ChatID: chat, UpdatedAt: b.now})
		require.NoError(t, err)
		_, err = tx.MemoryUpsert(b.ctx, store.Memory{ProjectID: p.ID, Name: "Zeta", Content: "z", UpdatedAt: b.now})
		require.NoError(t, err)
		_, err = tx.MemoryUpsert(b.ctx, store.Memory{ProjectID: p.ID, Name: "a.b", Content: "ab", UpdatedAt: b.now})
		return err
	}))
	require.Equal(t, store.Memory{ProjectID: p.ID, Name: "style", Content: "short", ChatID: chat, UpdatedAt: b.now}, first)

	later := b.now.Add(time.Hour)
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		m, err := tx.MemoryUpsert(b.ctx, store.Memory{ProjectID: p.ID, Name: "style", Content: "longer", UpdatedAt: later})
		require.NoError(t, err)
		require.Equal(t, store.Memory{ProjectID: p.ID, Name: "style", Content: "longer", UpdatedAt: later}, m, "an upsert replaces content, chat and time")
		return nil
	}))
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		ms, err := tx.MemoryList(b.ctx, p.ID)
		require.NoError(t, err)
		names := []string{}
		for _, m := range ms {
			names = append(names, m.Name)
		}
		require.Equal(t, []string{"Zeta", "a.b", "style"}, names, "byte order of names")
		n, err := tx.MemoryCount(b.ctx, p.ID)
		require.NoError(t, err)
		require.EqualValues(t, 3, n)
		m, err := tx.MemoryGet(b.ctx, p.ID, "a.b")
		require.NoError(t, err)
		require.Equal(t, "ab", m.Content)
		_, err = tx.MemoryGet(b.ctx, p.ID, "nope")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = tx.MemoryGet(b.ctx, uuid.New(), "a.b")
		require.ErrorIs(t, err, store.ErrNotFound)
		empty, err := tx.MemoryList(b.ctx, uuid.New())
		require.NoError(t, err)
		require.NotNil(t, empty)
		require.Empty(t, empty)
		return nil
	}))
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		n, err := tx.MemoryDelete(b.ctx, p.ID, "a.b")
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		n, err = tx.MemoryDelete(b.ctx, p.ID, "a.b")
		require.NoError(t, err)
		require.EqualValues(t, 0, n)
		_, err = tx.ProjectLockMemory(b.ctx, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))
	err := b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.MemoryUpsert(b.ctx, store.Memory{ProjectID: uuid.New(), Name: "x", Content: "x", UpdatedAt: b.now})
		return err
	})
	require.ErrorIs(t, err, store.ErrForeignKey)
}

// testMemoryLockSerialises: writers that lock the project's memory, count
// and then insert the next name never see the same count, so a cap checked
// under the lock holds.
func testMemoryLockSerialises(t *testing.T, b *bundle) {
	p := b.newProject(t, "alpha")
	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			errs[i] = b.s.InTx(b.ctx, func(tx store.Tx) error {
				if _, err := tx.ProjectLockMemory(b.ctx, p.ID); err != nil {
					return err
				}
				n, err := tx.MemoryCount(b.ctx, p.ID)
				if err != nil {
					return err
				}
				_, err = tx.MemoryUpsert(b.ctx, store.Memory{ProjectID: p.ID, Name: fmt.Sprintf("m%d", n), Content: "x", UpdatedAt: b.now})
				return err
			})
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.EqualValues(t, writers, b.memoryCount(t, p.ID))
}
