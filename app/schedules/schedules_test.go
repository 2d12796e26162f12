package schedules_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/schedules"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/postgres"
	"github.com/chatd/chatd/store/sqlite"
)

// start is a Monday, 08:58:30 UTC.
var start = time.Date(2026, 3, 2, 8, 58, 30, 0, time.UTC)

type rig struct {
	ctx   context.Context
	s     store.Store
	clock *clock.Fake
	svc   *schedules.Service
	run   *schedules.Runner
	chat  store.Chat
}

func newRig(t *testing.T, s store.Store, c *clock.Fake) *rig {
	t.Helper()
	r := &rig{ctx: context.Background(), s: s, clock: c}
	m := chatstate.New(s, pubsub.NewMemory(), chatstate.Config{Clock: c})
	r.svc = schedules.New(s, c, schedules.Config{})
	r.run = schedules.NewRunner(schedules.RunnerConfig{Machine: m, Store: s, Clock: c})
	return r
}

// withChat adds a user and an idle chat of theirs.
func (r *rig) withChat(t *testing.T) *rig {
	t.Helper()
	m := chatstate.New(r.s, pubsub.NewMemory(), chatstate.Config{Clock: r.clock})
	var u store.User
	require.NoError(t, r.s.InTx(r.ctx, func(tx store.Tx) error {
		var err error
		u, err = tx.UserInsert(r.ctx, store.UserInsertParams{ID: uuid.New(), Name: "alice-" + uuid.NewString()[:8], Now: r.clock.Now()})
		return err
	}))
	require.NoError(t, m.Do(r.ctx, func(tx *chatstate.Tx) error {
		res, err := tx.Create(chatstate.CreateParams{OwnerID: u.ID, Title: "daily"})
		r.chat = res.Chat
		return err
	}))
	return r
}

func (r *rig) create(t *testing.T, req sdk.CreateScheduleRequest) store.Schedule {
	t.Helper()
	s, err := r.svc.Create(r.ctx, r.chat, sdk.Text("status?"), req)
	require.NoError(t, err)
	return s
}

// fired returns the due times of a schedule's runs with status, oldest first.
func (r *rig) runs(t *testing.T, id uuid.UUID, status string) []time.Time {
	t.Helper()
	var out []time.Time
	require.NoError(t, r.s.ReadTx(r.ctx, func(tx store.Reader) error {
		runs, err := tx.ScheduleRunList(r.ctx, id, 500)
		for i := len(runs) - 1; i >= 0; i-- {
			if runs[i].Status == status {
				out = append(out, runs[i].DueAt)
			}
		}
		return err
	}))
	return out
}

// prompts counts the user messages (in history or queued) the schedule wrote.
func (r *rig) prompts(t *testing.T, id uuid.UUID) int {
	t.Helper()
	n := 0
	require.NoError(t, r.s.ReadTx(r.ctx, func(tx store.Reader) error {
		ms, err := tx.MessageList(r.ctx, r.chat.ID, store.MessageListParams{Limit: 500})
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.CreatedBy.Valid && m.CreatedBy.UUID == id {
				require.True(t, m.RequestID.Valid, "a scheduled prompt is a durable request")
				n++
			}
		}
		q, err := tx.QueueList(r.ctx, r.chat.ID)
		for _, m := range q {
			if m.CreatedBy.Valid && m.CreatedBy.UUID == id {
				n++
			}
		}
		return err
	}))
	return n
}

func (r *rig) advanceTo(t *testing.T, at time.Time) {
	t.Helper()
	r.clock.Advance(at.Sub(r.clock.Now()))
	_, err := r.run.RunDue(r.ctx)
	require.NoError(t, err)
}

func TestEveryFormFiresOnTime(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := newRig(t, newStore(t), clock.NewFake(start)).withChat(t)
		at := start.Add(60 * time.Second)
		// 10:00 in Paris is 09:00 UTC in March.
		cron := r.create(t, sdk.CreateScheduleRequest{Cron: "0 10 * * 1-5", Timezone: "Europe/Paris"})
		every := r.create(t, sdk.CreateScheduleRequest{Every: "2m"})
		once := r.create(t, sdk.CreateScheduleRequest{At: &at})
		nine := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
		require.Equal(t, nine, *cron.NextRunAt)
		require.Equal(t, start.Add(2*time.Minute), *every.NextRunAt)

		r.advanceTo(t, nine.Add(-time.Second))
		require.Empty(t, r.runs(t, cron.ID, sdk.ScheduleRunFired), "not before its time")
		require.Equal(t, []time.Time{at}, r.runs(t, once.ID, sdk.ScheduleRunFired))
		r.advanceTo(t, nine)
		require.Equal(t, []time.Time{nine}, r.runs(t, cron.ID, sdk.ScheduleRunFired), "failed: %v", r.details(t, cron.ID))
		r.advanceTo(t, start.Add(2*time.Minute))
		r.advanceTo(t, start.Add(4*time.Minute))
		require.Equal(t, []time.Time{start.Add(2 * time.Minute), start.Add(4 * time.Minute)}, r.runs(t, every.ID, sdk.ScheduleRunFired))
		require.Equal(t, 1, r.prompts(t, once.ID))
		require.Equal(t, 2, r.prompts(t, every.ID), "the second run is queued behind the busy chat")

		var got store.Schedule
		require.NoError(t, r.s.ReadTx(r.ctx, func(tx store.Reader) error {
			var err error
			got, err = tx.ScheduleGet(r.ctx, once.ID)
			return err
		}))
		require.False(t, got.Enabled, "an at schedule runs once")
		require.Nil(t, got.NextRunAt)
		require.NoError(t, r.s.ReadTx(r.ctx, func(tx store.Reader) error {
			var err error
			got, err = tx.ScheduleGet(r.ctx, cron.ID)
			return err
		}))
		require.Equal(t, nine.Add(24*time.Hour), *got.NextRunAt, "the next weekday at 10:00 in Paris")
	})
}

func TestMissedRunsFireTheLatestOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := newRig(t, newStore(t), clock.NewFake(start)).withChat(t)
		s := r.create(t, sdk.CreateScheduleRequest{Every: "1m", MaxRuns: 3})
		r.advanceTo(t, start.Add(10*time.Minute+30*time.Second))
		require.Equal(t, []time.Time{start.Add(10 * time.Minute)}, r.runs(t, s.ID, sdk.ScheduleRunFired))
		require.Len(t, r.runs(t, s.ID, sdk.ScheduleRunSkipped), 9)
		require.Equal(t, 1, r.prompts(t, s.ID))
		r.advanceTo(t, start.Add(11*time.Minute))
		r.advanceTo(t, start.Add(12*time.Minute))
		r.advanceTo(t, start.Add(13*time.Minute))
		require.Len(t, r.runs(t, s.ID, sdk.ScheduleRunFired), 3, "max_runs stops it")
	})
}

func TestArchivedChatPauses(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := newRig(t, newStore(t), clock.NewFake(start)).withChat(t)
		s := r.create(t, sdk.CreateScheduleRequest{Every: "1m"})
		m := chatstate.New(r.s, pubsub.NewMemory(), chatstate.Config{Clock: r.clock})
		require.NoError(t, m.Do(r.ctx, func(tx *chatstate.Tx) error { _, err := tx.SetArchived(r.chat.ID, true); return err }))
		r.advanceTo(t, start.Add(5*time.Minute))
		require.Empty(t, r.runs(t, s.ID, sdk.ScheduleRunFired))
		require.NoError(t, m.Do(r.ctx, func(tx *chatstate.Tx) error { _, err := tx.SetArchived(r.chat.ID, false); return err }))
		r.advanceTo(t, start.Add(5*time.Minute))
		require.Equal(t, []time.Time{start.Add(5 * time.Minute)}, r.runs(t, s.ID, sdk.ScheduleRunFired))
	})
}

// TestRestartAroundDueTime reopens the SQLite database as a restarted
// process would: a due time fired before the restart is not fired again,
// and one that came due while the process was gone fires once.
func TestRestartAroundDueTime(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "chatd.db")
	open := func() *sqlite.Store {
		s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
		require.NoError(t, err)
		p, err := s.Migrations()
		require.NoError(t, err)
		_, err = p.Up(context.Background())
		require.NoError(t, err)
		return s
	}
	c := clock.NewFake(start)
	s1 := open()
	r := newRig(t, s1, c).withChat(t)
	sc := r.create(t, sdk.CreateScheduleRequest{Every: "1m"})
	r.advanceTo(t, start.Add(time.Minute))
	require.NoError(t, s1.Close()) // the process dies right after a run

	s2 := open()
	r2 := newRig(t, s2, c)
	r2.chat = r.chat
	r2.advanceTo(t, start.Add(time.Minute)) // it restarts at the same instant
	require.Equal(t, []time.Time{start.Add(time.Minute)}, r2.runs(t, sc.ID, sdk.ScheduleRunFired))
	require.NoError(t, s2.Close()) // and dies before the next due time

	s3 := open()
	t.Cleanup(func() { require.NoError(t, s3.Close()) })
	r3 := newRig(t, s3, c)
	r3.chat = r.chat
	r3.advanceTo(t, start.Add(2*time.Minute+10*time.Second)) // back after it
	r3.advanceTo(t, start.Add(2*time.Minute+20*time.Second))
	require.Equal(t, []time.Time{start.Add(time.Minute), start.Add(2 * time.Minute)}, r3.runs(t, sc.ID, sdk.ScheduleRunFired))
	require.Equal(t, 2, r3.prompts(t, sc.ID))
}

// TestTwoReplicasFireOnce runs two runners over one Postgres schema, each
// with its own connection pool and machine, at the same instant.
func TestTwoReplicasFireOnce(t *testing.T) {
	t.Parallel()
	s1 := dbtest.NewPostgres(t)
	var schema string
	require.NoError(t, s1.Pool().QueryRow(context.Background(), `SELECT current_schema()`).Scan(&schema))
	s2, err := postgres.Open(context.Background(), dbtest.PostgresDSN(t), postgres.Options{SearchPath: schema})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s2.Close()) })
	c := clock.NewFake(start)
	a := newRig(t, s1, c).withChat(t)
	b := newRig(t, s2, c)
	b.chat = a.chat
	var ids []uuid.UUID
	for range 5 {
		ids = append(ids, a.create(t, sdk.CreateScheduleRequest{Every: "1m"}).ID)
	}
	for round := 1; round <= 3; round++ {
		c.Advance(time.Minute)
		var wg sync.WaitGroup
		for _, r := range []*rig{a, b} {
			wg.Go(func() {
				_, err := r.run.RunDue(r.ctx)
				require.NoError(t, err)
			})
		}
		wg.Wait()
	}
	for _, id := range ids {
		require.Len(t, a.runs(t, id, sdk.ScheduleRunFired), 3, "each due time fires once")
		require.Equal(t, 3, a.prompts(t, id))
	}
}

func TestLimitAndValidation(t *testing.T) {
	t.Parallel()
	r := newRig(t, dbtest.NewSQLite(t), clock.NewFake(start)).withChat(t)
	r.svc = schedules.New(r.s, r.clock, schedules.Config{MaxPerUser: 1})
	r.create(t, sdk.CreateScheduleRequest{Every: "1h"})
	_, err := r.svc.Create(r.ctx, r.chat, sdk.Text("x"), sdk.CreateScheduleRequest{Every: "1h"})
	require.ErrorIs(t, err, schedules.ErrLimitReached)
	for _, bad := range []sdk.CreateScheduleRequest{
		{Every: "30s"}, {Every: "soon"}, {Cron: "* * *"}, {Cron: "0 9 * * *", Timezone: "Mars/Olympus"}, {}, {Every: "1h", Cron: "0 * * * *"},
	} {
		_, err := r.svc.Create(r.ctx, r.chat, sdk.Text("x"), bad)
		var ie *schedules.InputError
		require.ErrorAs(t, err, &ie, "%+v", bad)
	}
}

func (r *rig) details(t *testing.T, id uuid.UUID) []string {
	var out []string
	require.NoError(t, r.s.ReadTx(r.ctx, func(tx store.Reader) error {
		runs, err := tx.ScheduleRunList(r.ctx, id, 500)
		for _, run := range runs {
			out = append(out, run.Status+": "+run.Detail)
		}
		return err
	}))
	return out
}

// TestNewChatRunsRespectTheChatCap: a new_chat run is a create like a
// person's: beyond CHATD_MAX_CHATS_PER_USER it is recorded failed and
// creates nothing; under it, it creates the chat.
func TestNewChatRunsRespectTheChatCap(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		r := newRig(t, newStore(t), clock.NewFake(start)).withChat(t)
		m := chatstate.New(r.s, pubsub.NewMemory(), chatstate.Config{Clock: r.clock})
		s := r.create(t, sdk.CreateScheduleRequest{Every: "1m", NewChat: true})
		chats := func() int64 {
			var n int64
			require.NoError(t, r.s.ReadTx(r.ctx, func(tx store.Reader) error {
				var err error
				n, err = tx.ChatCountByOwner(r.ctx, r.chat.OwnerID)
				return err
			}))
			return n
		}
		// The owner has one chat; the cap is one.
		r.run = schedules.NewRunner(schedules.RunnerConfig{Machine: m, Store: r.s, Clock: r.clock, MaxChats: 1})
		r.advanceTo(t, start.Add(time.Minute))
		require.Equal(t, []time.Time{start.Add(time.Minute)}, r.runs(t, s.ID, sdk.ScheduleRunFailed))
		require.Contains(t, r.details(t, s.ID)[0], "CHATD_MAX_CHATS_PER_USER")
		require.EqualValues(t, 1, chats(), "a refused run creates nothing")
		// Room for one more: the next run creates its chat.
		r.run = schedules.NewRunner(schedules.RunnerConfig{Machine: m, Store: r.s, Clock: r.clock, MaxChats: 2})
		r.advanceTo(t, start.Add(2*time.Minute))
		require.Equal(t, []time.Time{start.Add(2 * time.Minute)}, r.runs(t, s.ID, sdk.ScheduleRunFired))
		require.EqualValues(t, 2, chats())
	})
}
