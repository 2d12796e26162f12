package storetest

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// ownerCounts are what the per-user caps count.
type ownerCounts struct{ projects, memories, files int64 }

func (b *bundle) ownerCounts(t *testing.T, owner uuid.UUID) ownerCounts {
	t.Helper()
	var c ownerCounts
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		var err error
		if c.projects, err = tx.ProjectCountByOwner(b.ctx, owner); err != nil {
			return err
		}
		if c.memories, err = tx.MemoryCountByOwner(b.ctx, owner); err != nil {
			return err
		}
		c.files, err = tx.FileCountByOwner(b.ctx, owner)
		return err
	}))
	return c
}

// testOwnerCounts: the per-user caps' counts (projects, memories over every
// project of the owner, files linked or not) count one owner's rows only,
// and follow deletes.
func testOwnerCounts(t *testing.T, b *bundle) {
	require.Equal(t, ownerCounts{}, b.ownerCounts(t, b.user.ID), "nothing yet")

	var other store.User
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		var err error
		other, err = tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: "counted-other", Now: b.now})
		return err
	}))
	alpha, beta := b.newProject(t, "alpha"), b.newProject(t, "beta")
	var fileID uuid.UUID
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		theirs, err := tx.ProjectInsert(b.ctx, store.ProjectInsertParams{ID: uuid.New(), OwnerID: other.ID, Name: "theirs", Now: b.now})
		if err != nil {
			return err
		}
		for _, m := range []store.Memory{
			{ProjectID: alpha.ID, Name: "a1"}, {ProjectID: alpha.ID, Name: "a2"}, {ProjectID: beta.ID, Name: "b1"},
			{ProjectID: theirs.ID, Name: "t1"},
		} {
			m.Content, m.UpdatedAt = "x", b.now
			if _, err := tx.MemoryUpsert(b.ctx, m); err != nil {
				return err
			}
		}
		for i, owner := range []uuid.UUID{b.user.ID, b.user.ID, other.ID} {
			f, err := tx.FileInsert(b.ctx, store.FileInsertParams{
				ID: uuid.New(), OwnerID: owner, Name: "f.txt", MediaType: "text/plain", Content: []byte("hi"), Now: b.now,
			})
			if err != nil {
				return err
			}
			if i == 0 {
				fileID = f.ID
			}
		}
		return tx.FileLink(b.ctx, fileID, b.chat.ID, b.now)
	}))
	require.Equal(t, ownerCounts{projects: 2, memories: 3, files: 2}, b.ownerCounts(t, b.user.ID))
	require.Equal(t, ownerCounts{projects: 1, memories: 1, files: 1}, b.ownerCounts(t, other.ID))
	require.Equal(t, ownerCounts{}, b.ownerCounts(t, uuid.New()), "an unknown user has nothing")

	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		if _, err := tx.ProjectDelete(b.ctx, beta.ID); err != nil {
			return err
		}
		_, err := tx.FileDelete(b.ctx, fileID)
		return err
	}))
	require.Equal(t, ownerCounts{projects: 1, memories: 2, files: 1}, b.ownerCounts(t, b.user.ID), "a deleted project takes its memories")
}
