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

func testUsersAndTokens(t *testing.T, b *bundle) {
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		admin, err := tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: "root", Admin: true, Now: b.now})
		require.NoError(t, err)
		got, err := tx.UserGetByName(b.ctx, "root")
		require.NoError(t, err)
		require.Equal(t, admin, got)
		got, err = tx.UserGet(b.ctx, admin.ID)
		require.NoError(t, err)
		require.True(t, got.Admin)

		tok, err := tx.TokenInsert(b.ctx, store.TokenInsertParams{ID: uuid.New(), UserID: admin.ID, Hash: []byte{1, 2, 3}, Name: "cli", Now: b.now})
		require.NoError(t, err)
		found, err := tx.TokenGetByHash(b.ctx, []byte{1, 2, 3})
		require.NoError(t, err)
		require.Equal(t, tok, found)
		return nil
	}))
	err := b.s.InTx(b.ctx, func(tx store.Tx) error {
		u, err := tx.UserGetByName(b.ctx, "root")
		require.NoError(t, err)
		_, err = tx.TokenInsert(b.ctx, store.TokenInsertParams{ID: uuid.New(), UserID: u.ID, Hash: []byte{1, 2, 3}, Now: b.now})
		return err
	})
	require.ErrorIs(t, err, store.ErrConflict, "token hashes are unique")

	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		n, err := tx.UserCount(b.ctx)
		require.NoError(t, err)
		require.Equal(t, int64(2), n)
		require.NoError(t, tx.UserSetAdmin(b.ctx, b.user.ID, true))
		u, err := tx.UserGet(b.ctx, b.user.ID)
		require.NoError(t, err)
		require.True(t, u.Admin)
		require.ErrorIs(t, tx.UserSetAdmin(b.ctx, uuid.New(), true), store.ErrNotFound)
		n, err = tx.TokenDeleteByHash(b.ctx, []byte{1, 2, 3})
		require.Equal(t, int64(1), n)
		return err
	}))
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		u, err := tx.UserGetByName(b.ctx, "root")
		require.NoError(t, err)
		_, err = tx.TokenInsert(b.ctx, store.TokenInsertParams{ID: uuid.New(), UserID: u.ID, Hash: []byte{4}, Now: b.now})
		require.NoError(t, err)
		n, err := tx.TokenDeleteForUser(b.ctx, u.ID)
		require.Equal(t, int64(1), n)
		return err
	}))
}

// Tokens carry a kind, an optional expiry and their last use; lists and
// reads by id never return the hash; expired tokens and idle sessions are
// deleted together.
func testTokenKindsExpiryAndUse(t *testing.T, b *bundle) {
	expires := b.now.Add(time.Hour)
	var api, session, other store.Token
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		bob, err := tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: "bob", Now: b.now})
		require.NoError(t, err)
		api, err = tx.TokenInsert(b.ctx, store.TokenInsertParams{ID: uuid.New(), UserID: b.user.ID, Hash: []byte{1}, Name: "cli", ExpiresAt: &expires, Now: b.now})
		require.NoError(t, err)
		require.Equal(t, store.TokenKindAPI, api.Kind, "an empty kind is api")
		require.Equal(t, expires, *api.ExpiresAt)
		require.Nil(t, api.LastUsedAt)
		session, err = tx.TokenInsert(b.ctx, store.TokenInsertParams{ID: uuid.New(), UserID: b.user.ID, Hash: []byte{2}, Name: "web session", Kind: store.TokenKindSession, Now: b.now.Add(time.Second)})
		require.NoError(t, err)
		require.Nil(t, session.ExpiresAt)
		other, err = tx.TokenInsert(b.ctx, store.TokenInsertParams{ID: uuid.New(), UserID: bob.ID, Hash: []byte{3}, Kind: store.TokenKindBootstrap, Now: b.now.Add(2 * time.Second)})
		require.NoError(t, err)
		return nil
	}))
	err := b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.TokenInsert(b.ctx, store.TokenInsertParams{ID: uuid.New(), UserID: b.user.ID, Hash: []byte{4}, Kind: "forever", Now: b.now})
		return err
	})
	require.Error(t, err, "an unknown kind is refused")

	noHash := func(tok store.Token) store.Token { tok.Hash = nil; return tok }
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		all, err := tx.TokenList(b.ctx, store.TokenListParams{})
		require.NoError(t, err)
		require.Equal(t, []store.Token{noHash(api), noHash(session), noHash(other)}, all, "oldest first, no hashes")
		mine, err := tx.TokenList(b.ctx, store.TokenListParams{UserID: uuid.NullUUID{UUID: b.user.ID, Valid: true}})
		require.NoError(t, err)
		require.Equal(t, []store.Token{noHash(api), noHash(session)}, mine)
		none, err := tx.TokenList(b.ctx, store.TokenListParams{UserID: uuid.NullUUID{UUID: uuid.New(), Valid: true}})
		require.NoError(t, err)
		require.NotNil(t, none)
		require.Empty(t, none)
		got, err := tx.TokenGet(b.ctx, session.ID)
		require.NoError(t, err)
		require.Equal(t, noHash(session), got)
		_, err = tx.TokenGet(b.ctx, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))

	used := b.now.Add(10 * time.Minute)
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		ok, err := tx.TokenTouch(b.ctx, session.ID, used)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = tx.TokenTouch(b.ctx, session.ID, used.Add(-time.Minute))
		require.NoError(t, err)
		require.False(t, ok, "an earlier use does not move last_used_at back")
		got, err := tx.TokenGetByHash(b.ctx, []byte{2})
		require.NoError(t, err)
		require.Equal(t, used, *got.LastUsedAt)
		ok, err = tx.TokenTouch(b.ctx, uuid.New(), used)
		require.NoError(t, err)
		require.False(t, ok)

		// Nothing has expired yet; the session was used at +10m.
		n, err := tx.TokenDeleteExpired(b.ctx, b.now.Add(time.Minute), b.now.Add(5*time.Minute))
		require.NoError(t, err)
		require.Zero(t, n)
		// The api token's expiry is reached; the session is still fresh.
		n, err = tx.TokenDeleteExpired(b.ctx, expires, b.now.Add(5*time.Minute))
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		_, err = tx.TokenGet(b.ctx, api.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		// A zero idle cutoff never expires sessions; a later one does.
		n, err = tx.TokenDeleteExpired(b.ctx, expires.Add(time.Hour), time.Time{})
		require.NoError(t, err)
		require.Zero(t, n)
		n, err = tx.TokenDeleteExpired(b.ctx, expires.Add(time.Hour), used)
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "the idle session goes, the bootstrap token stays")

		n, err = tx.TokenDelete(b.ctx, other.ID)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		n, err = tx.TokenDelete(b.ctx, other.ID)
		require.NoError(t, err)
		require.Zero(t, n)
		return nil
	}))
}

func testReplicas(t *testing.T, b *bundle) {
	w := uuid.New()
	c := b.leaseClock()
	r := store.Replica{WorkerID: w, Address: "http://10.0.0.1:8080", TokenHash: "9b1a", UpdatedAt: c.now}
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.ReplicaUpsert(b.ctx, r) }))
	c.elapse(t, time.Second)
	r.Address, r.TokenHash, r.UpdatedAt = "http://10.0.0.2:8080", "77c0", c.now
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.ReplicaUpsert(b.ctx, r) }))
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		got, err := tx.ReplicaGet(b.ctx, w)
		require.NoError(t, err)
		c.requireStamped(t, "chat_replicas", "updated_at", got.UpdatedAt, "an upsert")
		got.UpdatedAt = r.UpdatedAt
		require.Equal(t, r, got)
		_, err = tx.ReplicaGet(b.ctx, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.ReplicaDelete(b.ctx, w) }))
}
