package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

// Users are listed oldest first, can be disabled and enabled, and the
// enabled admins are what UserLockEnabledAdmins returns.
func testUserListAndDisable(t *testing.T, b *bundle) {
	var bob store.User
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		var err error
		bob, err = tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: "bob", Admin: true, Now: b.now.Add(time.Second)})
		return err
	}))
	require.False(t, bob.Disabled)
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		users, err := tx.UserList(b.ctx)
		require.NoError(t, err)
		require.Equal(t, []store.User{b.user, bob}, users)
		return nil
	}))
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		ids, err := tx.UserLockEnabledAdmins(b.ctx)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{bob.ID}, ids)
		require.NoError(t, tx.UserSetDisabled(b.ctx, bob.ID, true))
		u, err := tx.UserGet(b.ctx, bob.ID)
		require.NoError(t, err)
		require.True(t, u.Disabled)
		ids, err = tx.UserLockEnabledAdmins(b.ctx)
		require.NoError(t, err)
		require.Empty(t, ids, "a disabled admin is not an enabled admin")
		require.ErrorIs(t, tx.UserSetDisabled(b.ctx, uuid.New(), true), store.ErrNotFound)
		return nil
	}))
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		require.NoError(t, tx.UserSetDisabled(b.ctx, bob.ID, false))
		u, err := tx.UserGetByName(b.ctx, "bob")
		require.NoError(t, err)
		require.False(t, u.Disabled)
		return nil
	}))
}

// Concurrent "demote myself unless I am the last enabled admin" writers
// leave exactly one admin: UserLockEnabledAdmins serialises them.
func testLastAdminSerialised(t *testing.T, b *bundle) {
	const n = 4
	ids := make([]uuid.UUID, n)
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		for i := range ids {
			u, err := tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: fmt.Sprintf("admin%d", i), Admin: true, Now: b.now})
			if err != nil {
				return err
			}
			ids[i] = u.ID
		}
		return nil
	}))
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, id := range ids {
		wg.Go(func() {
			<-start
			errs[i] = b.s.InTx(b.ctx, func(tx store.Tx) error {
				admins, err := tx.UserLockEnabledAdmins(b.ctx)
				if err != nil || len(admins) < 2 {
					return err
				}
				return tx.UserSetAdmin(b.ctx, id, false)
			})
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	var users []store.User
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		var err error
		users, err = tx.UserList(b.ctx)
		return err
	}))
	admins := 0
	for _, u := range users {
		if u.Admin {
			admins++
		}
	}
	require.Equal(t, 1, admins)
}

// A login code is taken once, only before it expires; expired codes are
// deleted by LoginCodeDeleteExpired; the user's deletion takes its codes.
func testLoginCodes(t *testing.T, b *bundle) {
	insert := func(hash []byte, expires time.Time) {
		require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
			return tx.LoginCodeInsert(b.ctx, store.LoginCodeInsertParams{Hash: hash, UserID: b.user.ID, ExpiresAt: expires, Now: b.now})
		}))
	}
	take := func(hash []byte, now time.Time) (uuid.UUID, error) {
		var id uuid.UUID
		err := b.s.InTx(b.ctx, func(tx store.Tx) error {
			var err error
			id, err = tx.LoginCodeTake(b.ctx, hash, now)
			return err
		})
		return id, err
	}
	insert([]byte{1}, b.now.Add(15*time.Minute))
	id, err := take([]byte{1}, b.now.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, b.user.ID, id)
	_, err = take([]byte{1}, b.now.Add(time.Minute))
	require.ErrorIs(t, err, store.ErrNotFound, "a code works once")

	insert([]byte{2}, b.now.Add(15*time.Minute))
	_, err = take([]byte{2}, b.now.Add(15*time.Minute))
	require.ErrorIs(t, err, store.ErrNotFound, "expired at its expiry")

	insert([]byte{3}, b.now.Add(time.Minute))
	insert([]byte{4}, b.now.Add(time.Hour))
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		n, err := tx.LoginCodeDeleteExpired(b.ctx, b.now.Add(time.Minute))
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		return nil
	}))
	_, err = take([]byte{3}, b.now)
	require.ErrorIs(t, err, store.ErrNotFound)
	id, err = take([]byte{4}, b.now)
	require.NoError(t, err)
	require.Equal(t, b.user.ID, id)

	err = b.s.InTx(b.ctx, func(tx store.Tx) error {
		return tx.LoginCodeInsert(b.ctx, store.LoginCodeInsertParams{Hash: []byte{5}, UserID: uuid.New(), ExpiresAt: b.now, Now: b.now})
	})
	require.Error(t, err, "a code of no user is refused")
}
