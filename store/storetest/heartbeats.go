package storetest

import (
	"testing"
	"time"

	"github.com/chatd/chatd/store"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func (b *bundle) own(t *testing.T, id, worker, runner uuid.UUID, at time.Time) {
	t.Helper()
	b.transition(t, id, func(tx store.Tx) error {
		if _, err := tx.ChatUpdate(b.ctx, id, store.ChatPatch{
			WorkerID: store.Some(uuid.NullUUID{UUID: worker, Valid: true}),
			RunnerID: store.Some(uuid.NullUUID{UUID: runner, Valid: true}),
		}); err != nil {
			return err
		}
		return tx.HeartbeatInsert(b.ctx, id, runner, at)
	})
}

// leaseTimeout is the lease timeout of the lease cases.
const leaseTimeout = 30 * time.Second

// leaseClock is the caller's clock of the lease cases, and the way they
// make time pass for leases. The lease clock (store.LeaseWindow) is the
// caller's on SQLite and the database's on Postgres. The caller's clock
// starts at b.now, months away from the real time, so a store that stamped
// with one clock and judged with the other would fail these cases.
type leaseClock struct {
	b   *bundle
	now time.Time
}

func (b *bundle) leaseClock() *leaseClock { return &leaseClock{b: b, now: b.now} }

// databaseClock reports whether the store stamps and judges leases by the
// database's clock (Postgres) rather than the caller's (SQLite).
func (c *leaseClock) databaseClock() bool { return c.b.s.Dialect() == "postgres" }

// window is the lease window at the caller's time.
func (c *leaseClock) window() store.LeaseWindow {
	return store.LeaseWindow{Now: c.now, Timeout: leaseTimeout}
}

// elapse lets d pass for every lease and replica record: the caller's
// clock moves on, and where the database's clock judges (it cannot be
// moved) every stamp moves d into the past instead.
func (c *leaseClock) elapse(t *testing.T, d time.Duration) {
	t.Helper()
	c.now = c.now.Add(d)
	if !c.databaseClock() {
		return
	}
	require.NoError(t, c.b.s.InTx(c.b.ctx, func(tx store.Tx) error {
		for _, stmt := range []string{
			`UPDATE chat_heartbeats SET heartbeat_at = heartbeat_at - $1::bigint * interval '1 microsecond'`,
			`UPDATE chat_replicas SET updated_at = updated_at - $1::bigint * interval '1 microsecond'`,
		} {
			if _, err := c.b.exec(c.b.ctx, tx, stmt, d.Microseconds()); err != nil {
				return err
			}
		}
		return nil
	}))
}

// requireStamped checks that a stamp written at the caller's time c.now
// came from the lease clock: c.now itself on SQLite; on Postgres the
// database's clock, never the caller's (table.column holds at, and the
// database must find it within the last minute of its own time).
func (c *leaseClock) requireStamped(t *testing.T, table, column string, at time.Time, msg string) {
	t.Helper()
	if !c.databaseClock() {
		require.True(t, c.now.Equal(at), "%s: stamped with the caller's time %v, got %v", msg, c.now, at)
		return
	}
	require.False(t, c.now.Equal(at), "%s: the database's clock stamps, not the caller's", msg)
	var n int64
	require.NoError(t, c.b.s.InTx(c.b.ctx, func(tx store.Tx) error {
		var err error
		// A no-op update counts matching rows portably.
		n, err = c.b.exec(c.b.ctx, tx, `UPDATE `+table+` SET `+column+` = `+column+` WHERE `+column+` = $1
			AND `+column+` <= statement_timestamp() AND `+column+` > statement_timestamp() - interval '1 minute'`, at)
		return err
	}))
	require.Equal(t, int64(1), n, "%s: stamped by the database's clock, got %v", msg, at)
}

// requireUntil checks a duration the store measured by its lease clock
// from the state the test set up: exactly want on the caller's clock; on
// the database's, which runs on while the test runs, at most want and
// not far below it.
func (c *leaseClock) requireUntil(t *testing.T, want, got time.Duration, msg string) {
	t.Helper()
	if !c.databaseClock() {
		require.Equal(t, want, got, msg)
		return
	}
	require.LessOrEqual(t, got, want, msg)
	require.Greater(t, got, want-10*time.Second, msg)
}

// fresh asks the store whether a lease is fresh at the caller's time.
func (c *leaseClock) fresh(t *testing.T, chatID, runnerID uuid.UUID) bool {
	t.Helper()
	var fresh bool
	require.NoError(t, c.b.s.ReadTx(c.b.ctx, func(tx store.Reader) error {
		var err error
		fresh, err = tx.HeartbeatFresh(c.b.ctx, chatID, runnerID, c.window())
		return err
	}))
	return fresh
}

func testHeartbeatLeases(t *testing.T, b *bundle) {
	worker, r1, r2, r3 := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	c := b.leaseClock()
	b.own(t, b.chat.ID, worker, r1, c.now)
	other := b.newChat(t, nil)
	b.own(t, other.ID, worker, r2, c.now)
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		at, err := tx.HeartbeatAt(b.ctx, b.chat.ID, r1)
		require.NoError(t, err)
		c.requireStamped(t, "chat_heartbeats", "heartbeat_at", at, "the initial heartbeat")
		_, err = tx.HeartbeatAt(b.ctx, b.chat.ID, uuid.New())
		require.ErrorIs(t, err, store.ErrNotFound)
		return nil
	}))
	renew := func(leases ...store.Lease) []store.Lease {
		var out []store.Lease
		require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
			var err error
			out, err = tx.HeartbeatRenew(b.ctx, leases, c.window())
			return err
		}))
		return out
	}
	l1, l2 := store.Lease{ChatID: b.chat.ID, RunnerID: r1}, store.Lease{ChatID: other.ID, RunnerID: r2}
	c.elapse(t, 9*time.Second)
	require.ElementsMatch(t, []store.Lease{l1, l2}, renew(l1, l2))
	require.Equal(t, []store.Lease{l1}, renew(l1, l1), "a lease named twice is renewed once")
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		at, err := tx.HeartbeatAt(b.ctx, b.chat.ID, r1)
		require.NoError(t, err)
		c.requireStamped(t, "chat_heartbeats", "heartbeat_at", at, "the renewal")
		return nil
	}))

	// A lease whose chat moved to another runner is not renewed.
	b.own(t, other.ID, worker, r3, c.now)
	c.elapse(t, 9*time.Second)
	require.Equal(t, []store.Lease{l1}, renew(l1, l2))

	// l1 was renewed 29 s ago: fresh; r3's lease is 38 s old: stale.
	c.elapse(t, 29*time.Second)
	require.True(t, c.fresh(t, b.chat.ID, r1), "renewed: fresh for the lease timeout")
	require.False(t, c.fresh(t, other.ID, r3), "older than the lease timeout")
	require.False(t, c.fresh(t, b.chat.ID, uuid.New()), "no heartbeat row")
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		n, err := tx.HeartbeatDeleteStale(b.ctx, c.window())
		require.Equal(t, int64(2), n, "l2 and r3's lease are stale, l1 is not")
		return err
	}))
	require.True(t, c.fresh(t, b.chat.ID, r1))

	// A stale lease is never revived.
	c.elapse(t, 2*time.Second)
	require.False(t, c.fresh(t, b.chat.ID, r1))
	require.Empty(t, renew(l1))
	require.Empty(t, renew(store.Lease{ChatID: uuid.New(), RunnerID: uuid.New()}))
}

func testAcquirableAndOwned(t *testing.T, b *bundle) {
	self, other := uuid.New(), uuid.New()
	c := b.leaseClock()
	setStatus := func(id uuid.UUID, p store.ChatPatch) {
		b.transition(t, id, func(tx store.Tx) error {
			_, err := tx.ChatUpdate(b.ctx, id, p)
			return err
		})
	}
	unowned := b.chat.ID
	ownedStale := b.newChat(t, nil).ID
	b.own(t, ownedStale, other, uuid.New(), c.now)
	ownedBySelf := b.newChat(t, nil).ID
	b.own(t, ownedBySelf, self, uuid.New(), c.now)
	c.elapse(t, time.Minute) // both leases go stale
	ownedFresh := b.newChat(t, nil).ID
	b.own(t, ownedFresh, other, uuid.New(), c.now)
	waiting := b.newChat(t, nil).ID
	setStatus(waiting, store.ChatPatch{Status: store.Some(store.ChatStatusWaiting)})
	archived := b.newChat(t, nil).ID
	setStatus(archived, store.ChatPatch{Archived: store.Some(true)})
	action := b.newChat(t, nil).ID
	setStatus(action, store.ChatPatch{Status: store.Some(store.ChatStatusRequiresAction)})
	child := b.newChat(t, func(p *store.ChatInsertParams) {
		p.ParentChatID = uuid.NullUUID{UUID: unowned, Valid: true}
		p.RootChatID = uuid.NullUUID{UUID: unowned, Valid: true}
	}).ID
	b.own(t, child, self, uuid.New(), c.now)
	leases := func(self uuid.UUID) store.AcquirableParams {
		w := c.window()
		return store.AcquirableParams{Self: self, Leases: &w}
	}

	list := func(p store.AcquirableParams) []uuid.UUID {
		var ids []uuid.UUID
		require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
			require.NoError(t, tx.AdmissionLock(b.ctx))
			took, err := tx.AdmissionTryLock(b.ctx)
			require.NoError(t, err)
			require.True(t, took, "a transaction's try of the admission lock it holds")
			cs, err := tx.ChatListAcquirable(b.ctx, p)
			for _, c := range cs {
				ids = append(ids, c.ID)
			}
			return err
		}))
		return ids
	}
	require.ElementsMatch(t, []uuid.UUID{unowned, ownedStale, ownedBySelf, action},
		list(leases(self)), "leases decide liveness")
	require.ElementsMatch(t, []uuid.UUID{unowned, ownedFresh, ownedStale, action},
		list(store.AcquirableParams{Self: self}), "without leases only Self is alive")

	count := func(p store.AcquirableParams) (int64, int64) {
		var r, s int64
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			r, s, err = tx.ChatCountOwned(b.ctx, p)
			return err
		}))
		return r, s
	}
	r, s := count(leases(self))
	require.Equal(t, [2]int64{1, 1}, [2]int64{r, s}, "ownedFresh is a root, child a subagent")
	r, s = count(store.AcquirableParams{Self: self})
	require.Equal(t, [2]int64{1, 1}, [2]int64{r, s}, "ownedBySelf and child")

	until := func(p store.AcquirableParams) (time.Duration, bool) {
		var (
			d     time.Duration
			found bool
		)
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			d, found, err = tx.HeartbeatOldestForeign(b.ctx, p)
			return err
		}))
		return d, found
	}
	b.own(t, waiting, other, uuid.New(), c.now) // not runnable: never taken over
	c.elapse(t, 5*time.Second)
	d, found := until(leases(self))
	require.True(t, found)
	c.requireUntil(t, 25*time.Second, d, "ownedFresh: the only fresh lease of another worker on a runnable chat")
	b.own(t, ownedFresh, other, uuid.New(), c.now)
	d, found = until(leases(self))
	require.True(t, found)
	c.requireUntil(t, leaseTimeout, d, "the lease of the chat's current runner counts")
	d, found = until(leases(other))
	require.True(t, found)
	c.requireUntil(t, 25*time.Second, d, "for other, self's fresh child lease (ownedBySelf's is stale)")
	_, found = until(store.AcquirableParams{Self: self})
	require.False(t, found, "no leases without a window")
	c.elapse(t, 25*time.Second)
	_, found = until(leases(other))
	require.False(t, found, "a lease exactly the lease timeout old is stale")
}

// testChatListByWorker: a worker's chats are the ones whose worker_id
// it is, whatever their state or lease (shutdown releases them all), and
// not another worker's nor an unowned one.
func testChatListByWorker(t *testing.T, b *bundle) {
	self, other := uuid.New(), uuid.New()
	c := b.leaseClock()
	list := func(worker uuid.UUID) []uuid.UUID {
		var ids []uuid.UUID
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			ids, err = tx.ChatListByWorker(b.ctx, worker)
			return err
		}))
		return ids
	}
	none := list(self)
	require.NotNil(t, none)
	require.Empty(t, none, "b.chat is unowned")

	first := b.newChat(t, nil).ID
	b.own(t, first, self, uuid.New(), c.now)
	c.elapse(t, time.Minute) // a stale lease is still the worker's chat
	second := b.newChat(t, nil).ID
	b.own(t, second, self, uuid.New(), c.now)
	b.transition(t, second, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, second, store.ChatPatch{Status: store.Some(store.ChatStatusWaiting), Archived: store.Some(true)})
		return err
	})
	foreign := b.newChat(t, nil).ID
	b.own(t, foreign, other, uuid.New(), c.now)

	require.ElementsMatch(t, []uuid.UUID{first, second}, list(self), "any state, any lease")
	require.Equal(t, []uuid.UUID{foreign}, list(other))
	b.transition(t, first, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, first, store.ChatPatch{
			WorkerID: store.Some(uuid.NullUUID{}), RunnerID: store.Some(uuid.NullUUID{}),
		})
		return err
	})
	require.Equal(t, []uuid.UUID{second}, list(self), "an abandoned chat is no longer the worker's")
}

// testRequiresActionHoldsNoSlot: a chat in requires_action keeps its live
// owner (it is not acquirable) but holds no slot of the concurrent agent
// limiter; it counts again once it runs.
func testRequiresActionHoldsNoSlot(t *testing.T, b *bundle) {
	self := uuid.New()
	w := b.leaseClock().window()
	for _, p := range []store.AcquirableParams{{Self: self, Leases: &w}, {Self: self}} {
		leases := p.Leases != nil
		b.own(t, b.chat.ID, self, uuid.New(), b.now)
		b.transition(t, b.chat.ID, func(tx store.Tx) error {
			_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{Status: store.Some(store.ChatStatusRequiresAction)})
			return err
		})
		var (
			list             []store.Chat
			roots, subagents int64
			byOwner          map[uuid.UUID]int64
		)
		read := func() {
			t.Helper()
			require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
				var err error
				if list, err = tx.ChatListAcquirable(b.ctx, p); err != nil {
					return err
				}
				if roots, subagents, err = tx.ChatCountOwned(b.ctx, p); err != nil {
					return err
				}
				byOwner, err = tx.ChatCountOwnedByOwner(b.ctx, p)
				return err
			}))
		}
		read()
		require.Empty(t, list, "leases %v: a live owner keeps a requires_action chat", leases)
		require.Equal(t, [2]int64{0, 0}, [2]int64{roots, subagents}, "leases %v: requires_action holds no slot", leases)
		require.Empty(t, byOwner, "leases %v", leases)

		b.transition(t, b.chat.ID, func(tx store.Tx) error {
			_, err := tx.ChatUpdate(b.ctx, b.chat.ID, store.ChatPatch{Status: store.Some(store.ChatStatusRunning)})
			return err
		})
		read()
		require.Equal(t, [2]int64{1, 0}, [2]int64{roots, subagents}, "leases %v: it counts again when it runs", leases)
		require.Equal(t, map[uuid.UUID]int64{b.user.ID: 1}, byOwner, "leases %v", leases)
	}
}

// testAcquirableFairOrder: acquirable chats come requires_action first
// (they take no slot), then by how many slots their owner holds, then
// oldest first; ChatCountOwnedByOwner gives the slots per owner.
func testAcquirableFairOrder(t *testing.T, b *bundle) {
	self := uuid.New()
	var bob store.User
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		var err error
		bob, err = tx.UserInsert(b.ctx, store.UserInsertParams{ID: uuid.New(), Name: "bob", Now: b.now})
		return err
	}))
	at := func(d time.Duration, owner uuid.UUID, status store.ChatStatus) uuid.UUID {
		return b.newChat(t, func(p *store.ChatInsertParams) {
			p.Now, p.OwnerID, p.Status = b.now.Add(d), owner, status
		}).ID
	}
	// b.chat (alice's, at b.now) is owned and running: alice holds a slot.
	b.own(t, b.chat.ID, self, uuid.New(), b.now)
	aliceOld := at(time.Second, b.user.ID, store.ChatStatusRunning)
	aliceOlder := at(0, b.user.ID, store.ChatStatusRunning)
	bobNew := at(3*time.Second, bob.ID, store.ChatStatusRunning)
	bobAction := at(4*time.Second, bob.ID, store.ChatStatusRequiresAction)
	bobNewer := at(5*time.Second, bob.ID, store.ChatStatusInterrupting)

	w := b.leaseClock().window()
	for _, p := range []store.AcquirableParams{{Self: self, Leases: &w}, {Self: self}} {
		var (
			ids     []uuid.UUID
			byOwner map[uuid.UUID]int64
		)
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			cs, err := tx.ChatListAcquirable(b.ctx, p)
			for _, c := range cs {
				ids = append(ids, c.ID)
			}
			if err != nil {
				return err
			}
			byOwner, err = tx.ChatCountOwnedByOwner(b.ctx, p)
			return err
		}))
		require.Equal(t, []uuid.UUID{bobAction, bobNew, bobNewer, aliceOlder, aliceOld}, ids,
			"leases %v: requires_action, then the owner with fewer slots, then oldest", p.Leases != nil)
		require.Equal(t, map[uuid.UUID]int64{b.user.ID: 1}, byOwner)
	}
}

// testReplicaTouchAndDeleteStale: a replica refreshes its record; the
// records not refreshed within the lease window are removed, the others
// stay.
func testReplicaTouchAndDeleteStale(t *testing.T, b *bundle) {
	alive, dead, unknown := uuid.New(), uuid.New(), uuid.New()
	c := b.leaseClock()
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		for _, id := range []uuid.UUID{alive, dead} {
			if err := tx.ReplicaUpsert(b.ctx, store.Replica{WorkerID: id, Address: "http://x", TokenHash: "t", UpdatedAt: c.now}); err != nil {
				return err
			}
		}
		return nil
	}))
	c.elapse(t, 40*time.Second)
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		found, err := tx.ReplicaTouch(b.ctx, alive, c.now)
		require.True(t, found)
		if err != nil {
			return err
		}
		found, err = tx.ReplicaTouch(b.ctx, unknown, c.now)
		require.False(t, found, "no record to refresh")
		return err
	}))
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		r, err := tx.ReplicaGet(b.ctx, alive)
		require.NoError(t, err)
		c.requireStamped(t, "chat_replicas", "updated_at", r.UpdatedAt, "a touch")
		return nil
	}))
	c.elapse(t, leaseTimeout-time.Second)
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		n, err := tx.ReplicaDeleteStale(b.ctx, c.window())
		require.Equal(t, int64(1), n, "only the record older than the lease timeout goes")
		return err
	}))
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		_, err := tx.ReplicaGet(b.ctx, alive)
		require.NoError(t, err, "the refreshed record stays")
		_, err = tx.ReplicaGet(b.ctx, dead)
		require.ErrorIs(t, err, store.ErrNotFound, "the dead replica's record is gone")
		return nil
	}))
}
