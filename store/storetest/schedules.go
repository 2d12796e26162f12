package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/store"
)

func (b *bundle) newSchedule(t *testing.T, chat store.Chat, next time.Time) store.Schedule {
	t.Helper()
	var s store.Schedule
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		var err error
		s, err = tx.ScheduleInsert(b.ctx, store.Schedule{
			ID: uuid.New(), ChatID: chat.ID, OwnerID: chat.OwnerID, Content: json.RawMessage(`[{"type":"text","text":"hi"}]`),
			Kind: store.ScheduleEvery, Spec: "1h", Timezone: "UTC", Enabled: true, NextRunAt: &next,
			CreatedAt: b.now, UpdatedAt: b.now,
		})
		return err
	}))
	return s
}

func testSchedules(t *testing.T, b *bundle) {
	due := b.now.Add(time.Hour)
	s := b.newSchedule(t, b.chat, due)
	require.True(t, s.Enabled)
	require.Equal(t, due, *s.NextRunAt)
	require.JSONEq(t, `[{"type":"text","text":"hi"}]`, string(s.Content))
	archived := b.newChat(t, nil)
	b.newSchedule(t, archived, b.now)
	later := b.newSchedule(t, b.chat, due.Add(time.Minute))

	listDue := func(now time.Time) []uuid.UUID {
		var ids []uuid.UUID
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			got, err := tx.ScheduleListDue(b.ctx, now, 10)
			for _, s := range got {
				ids = append(ids, s.ID)
			}
			return err
		}))
		return ids
	}
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(b.ctx, archived.ID, store.ChatPatch{Archived: store.Some(true)})
		return err
	}))
	require.Empty(t, listDue(b.now), "an archived chat's schedule pauses")
	require.Equal(t, []uuid.UUID{s.ID}, listDue(due))
	require.Equal(t, []uuid.UUID{s.ID, later.ID}, listDue(due.Add(time.Hour)))
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		next, ok, err := tx.ScheduleNextDue(b.ctx)
		require.True(t, ok)
		require.Equal(t, due, next)
		n, err2 := tx.ScheduleCountByOwner(b.ctx, b.user.ID)
		require.Equal(t, int64(3), n)
		mine, err3 := tx.ScheduleList(b.ctx, store.ScheduleListParams{ChatID: uuid.NullUUID{UUID: b.chat.ID, Valid: true}})
		require.Len(t, mine, 2)
		return firstErr(err, err2, err3)
	}))

	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		require.NoError(t, tx.UserSetDisabled(b.ctx, b.user.ID, true))
		return nil
	}))
	require.Empty(t, listDue(due.Add(time.Hour)), "a disabled user's schedules pause")
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.UserSetDisabled(b.ctx, b.user.ID, false) }))

	next := due.Add(time.Hour)
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		locked, err := tx.ScheduleLock(b.ctx, s.ID)
		require.NoError(t, err)
		require.Equal(t, s.ID, locked.ID)
		run := store.ScheduleRun{ScheduleID: s.ID, DueAt: due, Status: store.ScheduleRunFired,
			RequestID: uuid.NullUUID{UUID: uuid.New(), Valid: true}, ChatID: uuid.NullUUID{UUID: b.chat.ID, Valid: true}, CreatedAt: due}
		require.NoError(t, tx.ScheduleRunInsert(b.ctx, run))
		require.NoError(t, tx.ScheduleRunInsert(b.ctx, store.ScheduleRun{ScheduleID: s.ID, DueAt: b.now, Status: store.ScheduleRunSkipped, CreatedAt: due}))
		got, err := tx.ScheduleUpdate(b.ctx, s.ID, store.SchedulePatch{NextRunAt: store.Some(&next), LastRunAt: store.Some(&due),
			RunCount: store.Some(int64(1)), Enabled: store.Some(false)})
		require.NoError(t, err)
		require.Equal(t, next, *got.NextRunAt)
		require.Equal(t, due, *got.LastRunAt)
		require.False(t, got.Enabled)
		require.Equal(t, int64(1), got.RunCount)
		return nil
	}))
	require.Equal(t, []uuid.UUID{later.ID}, listDue(next), "a disabled schedule does not fire")
	require.ErrorIs(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		return tx.ScheduleRunInsert(b.ctx, store.ScheduleRun{ScheduleID: s.ID, DueAt: due, Status: store.ScheduleRunFired, CreatedAt: due})
	}), store.ErrConflict, "a due time runs once")
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		runs, err := tx.ScheduleRunList(b.ctx, s.ID, 10)
		require.Len(t, runs, 2)
		require.Equal(t, store.ScheduleRunFired, runs[0].Status, "latest due time first")
		require.Equal(t, due, runs[0].DueAt)
		require.Equal(t, b.chat.ID, runs[0].ChatID.UUID)
		require.Equal(t, store.ScheduleRunSkipped, runs[1].Status)
		require.False(t, runs[1].RequestID.Valid)
		return err
	}))
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		n, err := tx.ScheduleDelete(b.ctx, s.ID)
		require.Equal(t, int64(1), n)
		return err
	}))
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		_, err := tx.ScheduleGet(b.ctx, s.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		runs, err := tx.ScheduleRunList(b.ctx, s.ID, 10)
		require.Empty(t, runs)
		return err
	}))
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
