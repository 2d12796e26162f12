package storetest

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chatd/chatd/store"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func testRequestIDRoundTrips(t *testing.T, b *bundle) {
	req := uuid.NullUUID{UUID: uuid.New(), Valid: true}
	var with, without store.Message
	var qWith, qWithout store.QueuedMessage
	b.transition(t, b.chat.ID, func(tx store.Tx) error {
		var err error
		with, err = tx.MessageInsert(b.ctx, store.MessageInsertParams{
			ChatID: b.chat.ID, Role: store.RoleUser, Content: b.text("durable"), RequestID: req, Now: b.now,
		})
		require.NoError(t, err)
		without = b.insertMessage(t, tx, b.chat.ID, store.RoleUser, "plain")
		qWith, err = tx.QueueInsert(b.ctx, store.QueueInsertParams{
			ChatID: b.chat.ID, Content: b.text("queued"), RequestID: req, Now: b.now,
		})
		require.NoError(t, err)
		qWithout, err = tx.QueueInsert(b.ctx, store.QueueInsertParams{ChatID: b.chat.ID, Content: b.text("q"), Now: b.now})
		return err
	})
	require.Equal(t, req, with.RequestID)
	require.False(t, without.RequestID.Valid)
	require.Equal(t, req, qWith.RequestID)
	require.False(t, qWithout.RequestID.Valid)

	ms := b.messages(t, b.chat.ID)
	require.Equal(t, []uuid.NullUUID{req, {}}, []uuid.NullUUID{ms[0].RequestID, ms[1].RequestID})
	require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
		m, err := tx.MessageGet(b.ctx, b.chat.ID, with.ID)
		require.NoError(t, err)
		require.Equal(t, with, m)
		queue, err := tx.QueueList(b.ctx, b.chat.ID)
		require.NoError(t, err)
		require.Equal(t, []store.QueuedMessage{qWith, qWithout}, queue)
		got, err := tx.QueueGet(b.ctx, b.chat.ID, qWith.ID)
		require.Equal(t, qWith, got)
		return err
	}))
}

// requireJSONFields compares JSON the way a reader sees it: Postgres
// normalises jsonb text, so values are compared as JSON and NULL must stay nil.
func requireJSONFields(t *testing.T, want, got []json.RawMessage) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		if want[i] == nil {
			require.Nil(t, got[i], "field %d is NULL", i)
			continue
		}
		require.JSONEq(t, string(want[i]), string(got[i]), "field %d", i)
	}
}

func requireInvocation(t *testing.T, want, got store.Invocation) {
	t.Helper()
	requireJSONFields(t, []json.RawMessage{want.Response, want.Outcome, want.Review},
		[]json.RawMessage{got.Response, got.Outcome, got.Review})
	want.Response, want.Outcome, want.Review = nil, nil, nil
	got.Response, got.Outcome, got.Review = nil, nil, nil
	require.Equal(t, want, got)
}

func testInvocations(t *testing.T, b *bundle) {
	get := func(id uuid.UUID) (store.Invocation, error) {
		var inv store.Invocation
		err := b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			inv, err = tx.InvocationGet(b.ctx, id)
			return err
		})
		return inv, err
	}
	insert := func(inv store.Invocation) error {
		return b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.InvocationInsert(b.ctx, inv) })
	}
	update := func(id uuid.UUID, p store.InvocationPatch) (store.Invocation, error) {
		var inv store.Invocation
		err := b.s.InTx(b.ctx, func(tx store.Tx) error {
			var err error
			inv, err = tx.InvocationUpdate(b.ctx, id, p)
			return err
		})
		return inv, err
	}

	// Every field round-trips.
	msgID, queuedID := int64(11), int64(12)
	done := b.now.Add(time.Minute)
	full := store.Invocation{
		RequestID: uuid.New(), CallerID: b.user.ID, ContentSHA256: fmt.Sprintf("%x", sha256.Sum256([]byte("hi"))),
		RequestSHA256: fmt.Sprintf("%x", sha256.Sum256([]byte(`{"endpoint":"send_message"}`))),
		Kind:          "send_message", ChatID: b.chat.ID, AuditID: uuid.New(), State: store.InvocationCompleted,
		MessageID: &msgID, QueuedMessageID: &queuedID,
		Response:  json.RawMessage(`{"type":"AuditOpened","audit":"a1"}`),
		Outcome:   json.RawMessage(`{"text":"done","usage":[1,2]}`),
		Review:    json.RawMessage(`{"by":"op"}`),
		CreatedAt: b.now, UpdatedAt: b.now.Add(time.Second), CompletedAt: &done,
	}
	require.NoError(t, insert(full))
	got, err := get(full.RequestID)
	require.NoError(t, err)
	requireInvocation(t, full, got)

	// NULL columns read back as nil.
	bare := store.Invocation{
		RequestID: uuid.New(), CallerID: b.user.ID, ContentSHA256: "00", Kind: "create_chat",
		ChatID: uuid.New(), AuditID: uuid.New(), State: store.InvocationAdmitted,
		CreatedAt: b.now, UpdatedAt: b.now,
	}
	require.NoError(t, insert(bare), "chat_id has no foreign key")
	got, err = get(bare.RequestID)
	require.NoError(t, err)
	require.Equal(t, bare, got)

	// A patch writes only its set fields, plus updated_at.
	later := b.now.Add(time.Hour)
	got, err = update(bare.RequestID, store.InvocationPatch{
		MessageID: store.Some(&msgID), Response: store.Some(json.RawMessage(`{"ok":true}`)), UpdatedAt: later,
	})
	require.NoError(t, err)
	want := bare
	want.MessageID, want.Response, want.UpdatedAt = &msgID, json.RawMessage(`{"ok":true}`), later
	requireInvocation(t, want, got)
	got, err = get(bare.RequestID)
	require.NoError(t, err)
	requireInvocation(t, want, got)

	got, err = update(full.RequestID, store.InvocationPatch{
		State: store.Some(store.InvocationReconciled), MessageID: store.Some[*int64](nil),
		QueuedMessageID: store.Some[*int64](nil), Response: store.Some(json.RawMessage(nil)),
		Outcome: store.Some(json.RawMessage(`{"text":"other"}`)), Review: store.Some(json.RawMessage(nil)),
		CompletedAt: store.Some[*time.Time](nil), UpdatedAt: later,
	})
	require.NoError(t, err)
	want = full
	want.State, want.MessageID, want.QueuedMessageID = store.InvocationReconciled, nil, nil
	want.Response, want.Outcome, want.Review = nil, json.RawMessage(`{"text":"other"}`), nil
	want.CompletedAt, want.UpdatedAt = nil, later
	requireInvocation(t, want, got)

	// Conflicts, missing rows and checks.
	dup := bare
	dup.AuditID = uuid.New()
	require.ErrorIs(t, insert(dup), store.ErrConflict, "a request id is claimed once")
	dup = bare
	dup.RequestID = uuid.New()
	require.ErrorIs(t, insert(dup), store.ErrConflict, "audit ids are unique")
	_, err = get(uuid.New())
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = update(uuid.New(), store.InvocationPatch{State: store.Some(store.InvocationCompleted), UpdatedAt: later})
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = update(bare.RequestID, store.InvocationPatch{State: store.Some[store.InvocationState]("lost"), UpdatedAt: later})
	require.ErrorIs(t, err, store.ErrInvariant)
	bad := bare
	bad.RequestID, bad.AuditID, bad.Kind = uuid.New(), uuid.New(), "other"
	require.ErrorIs(t, insert(bad), store.ErrInvariant)
	bad = bare
	bad.RequestID, bad.AuditID, bad.CallerID = uuid.New(), uuid.New(), uuid.New()
	require.ErrorIs(t, insert(bad), store.ErrForeignKey)

	// A claim outlives its chat but not its caller.
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.ChatDelete(b.ctx, b.chat.ID) }))
	_, err = get(full.RequestID)
	require.NoError(t, err, "deleting the chat keeps the claim")
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error {
		_, err := b.exec(b.ctx, tx, q(b.s, `DELETE FROM users WHERE id = ?`, `DELETE FROM users WHERE id = $1`), b.user.ID.String())
		return err
	}))
	for _, id := range []uuid.UUID{full.RequestID, bare.RequestID} {
		_, err = get(id)
		require.ErrorIs(t, err, store.ErrNotFound, "deleting the caller deletes the claim")
	}
}

func requireJournal(t *testing.T, want, got store.JournalEntry) {
	t.Helper()
	requireJSONFields(t, []json.RawMessage{want.Args, want.Result}, []json.RawMessage{got.Args, got.Result})
	want.Args, want.Result, got.Args, got.Result = nil, nil, nil, nil
	require.Equal(t, want, got)
}

func testJournal(t *testing.T, b *bundle) {
	other := b.newChat(t, nil)
	req := uuid.NullUUID{UUID: uuid.New(), Valid: true}
	start := func(e store.JournalEntry) error {
		return b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.JournalStart(b.ctx, e) })
	}
	get := func(chatID uuid.UUID, callID string) (store.JournalEntry, error) {
		var e store.JournalEntry
		err := b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			var err error
			e, err = tx.JournalGet(b.ctx, chatID, callID)
			return err
		})
		return e, err
	}
	list := func(chatID uuid.UUID, requestID uuid.NullUUID) []string {
		var ids []string
		require.NoError(t, b.s.ReadTx(b.ctx, func(tx store.Reader) error {
			es, err := tx.JournalList(b.ctx, chatID, requestID)
			for _, e := range es {
				ids = append(ids, e.ToolCallID)
			}
			return err
		}))
		return ids
	}
	update := func(callID string, p store.JournalPatch) (store.JournalEntry, error) {
		var e store.JournalEntry
		err := b.s.InTx(b.ctx, func(tx store.Tx) error {
			var err error
			e, err = tx.JournalUpdate(b.ctx, b.chat.ID, callID, p)
			return err
		})
		return e, err
	}

	// Start order is not name order.
	entries := []store.JournalEntry{
		{ChatID: b.chat.ID, ToolCallID: "call_b", RequestID: req, ToolName: "write_file",
			Effect: store.EffectEffectful, Args: json.RawMessage(`{"path":"/tmp/x","n":1}`), StartedAt: b.now},
		{ChatID: b.chat.ID, ToolCallID: "call_a", RequestID: req, ToolName: "read_file",
			Effect: store.EffectPure, State: store.JournalStarted, Attempts: 3, StartedAt: b.now},
		{ChatID: b.chat.ID, ToolCallID: "call_c", ToolName: "fetch", Effect: store.EffectIdempotent, StartedAt: b.now},
		{ChatID: other.ID, ToolCallID: "call_b", ToolName: "fetch", Effect: store.EffectIdempotent, StartedAt: b.now},
	}
	for _, e := range entries {
		require.NoError(t, start(e), "tool call ids are unique per chat")
	}
	got, err := get(b.chat.ID, "call_b")
	require.NoError(t, err)
	want := entries[0]
	want.State, want.Attempts = store.JournalStarted, 1
	requireJournal(t, want, got)
	got, err = get(b.chat.ID, "call_a")
	require.NoError(t, err)
	require.Equal(t, entries[1], got, "NULL args and result read back as nil")

	require.Equal(t, []string{"call_b", "call_a", "call_c"}, list(b.chat.ID, uuid.NullUUID{}))
	require.Equal(t, []string{"call_b", "call_a"}, list(b.chat.ID, req))
	require.Empty(t, list(b.chat.ID, uuid.NullUUID{UUID: uuid.New(), Valid: true}))
	require.Equal(t, []string{"call_b"}, list(other.ID, uuid.NullUUID{}))

	// A patch writes only its set fields.
	done := b.now.Add(time.Minute)
	got, err = update("call_b", store.JournalPatch{
		State: store.Some(store.JournalCompleted), Result: store.Some(json.RawMessage(`{"ok":false}`)),
		IsError: store.Some(true), Attempts: store.Some(int64(2)), StartedAt: store.Some(b.now.Add(time.Second)),
		CompletedAt: store.Some(&done),
	})
	require.NoError(t, err)
	want.State, want.Result, want.IsError, want.Attempts = store.JournalCompleted, json.RawMessage(`{"ok":false}`), true, 2
	want.StartedAt, want.CompletedAt = b.now.Add(time.Second), &done
	requireJournal(t, want, got)
	got, err = update("call_b", store.JournalPatch{State: store.Some(store.JournalReconciled)})
	require.NoError(t, err)
	want.State = store.JournalReconciled
	requireJournal(t, want, got)
	got, err = update("call_b", store.JournalPatch{})
	require.NoError(t, err)
	requireJournal(t, want, got)
	got, err = get(b.chat.ID, "call_b")
	require.NoError(t, err)
	requireJournal(t, want, got)
	got, err = update("call_b", store.JournalPatch{Result: store.Some(json.RawMessage(nil)), CompletedAt: store.Some[*time.Time](nil)})
	require.NoError(t, err)
	require.Nil(t, got.Result)
	require.Nil(t, got.CompletedAt)

	// Conflicts, missing rows and checks.
	require.ErrorIs(t, start(entries[0]), store.ErrConflict)
	_, err = get(b.chat.ID, "call_z")
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = update("call_z", store.JournalPatch{State: store.Some(store.JournalCompleted)})
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = update("call_c", store.JournalPatch{State: store.Some[store.JournalState]("lost")})
	require.ErrorIs(t, err, store.ErrInvariant)
	require.ErrorIs(t, start(store.JournalEntry{ChatID: b.chat.ID, ToolCallID: "call_x", ToolName: "t",
		Effect: "risky", StartedAt: b.now}), store.ErrInvariant)
	require.ErrorIs(t, start(store.JournalEntry{ChatID: uuid.New(), ToolCallID: "call_x", ToolName: "t",
		Effect: store.EffectPure, StartedAt: b.now}), store.ErrForeignKey)

	// A later start sorts last, whatever its time.
	require.NoError(t, start(store.JournalEntry{ChatID: b.chat.ID, ToolCallID: "call_0", ToolName: "t",
		Effect: store.EffectPure, StartedAt: b.now.Add(-time.Hour)}))
	require.Equal(t, []string{"call_b", "call_a", "call_c", "call_0"}, list(b.chat.ID, uuid.NullUUID{}))

	// Deleting the chat deletes its journal, and only its.
	require.NoError(t, b.s.InTx(b.ctx, func(tx store.Tx) error { return tx.ChatDelete(b.ctx, b.chat.ID) }))
	require.Empty(t, list(b.chat.ID, uuid.NullUUID{}))
	_, err = get(b.chat.ID, "call_a")
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, []string{"call_b"}, list(other.ID, uuid.NullUUID{}))
}
