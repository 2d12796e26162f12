package chatstate_test

import (
	"encoding/json"
	"strings"
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

// The tests in this file check the rules the spec states next to the
// transition diagram (cancellation results, last_error, the compaction
// marker, promotion, unowned chats, families, bundles and notifications);
// matrix_test.go checks the diagram itself.

// --- helpers (rl prefix: this file shares its package with matrix_test.go) ---

// rlAction is the tx function shape every table below uses.
type rlAction func(tx *chatstate.Tx, id uuid.UUID) error

// rlApply runs fn on chat id as one bundle and fails the test on error.
func rlApply(t testing.TB, f *fixture, id uuid.UUID, fn rlAction) {
	t.Helper()
	f.do(t, func(tx *chatstate.Tx) error { return fn(tx, id) })
}

// rlRejects runs fn as one bundle, requires it to fail, and requires that
// none of ids changed and nothing was published. It returns the error for
// errors.Is checks.
func rlRejects(t testing.TB, f *fixture, fn func(tx *chatstate.Tx) error, ids ...uuid.UUID) error {
	t.Helper()
	before := make([]snapshot, len(ids))
	for i, id := range ids {
		before[i] = f.snap(t, id)
	}
	f.pub.take()
	err := f.m.Do(f.ctx, fn)
	require.Error(t, err)
	for i, id := range ids {
		require.Equal(t, before[i], f.snap(t, id), "chat %s changed although the bundle failed (%v)", id, err)
	}
	require.Empty(t, f.pub.take(), "a failed bundle published notifications")
	return err
}

func rlSend(t testing.TB, f *fixture, id uuid.UUID, msg string, busy chatstate.BusyBehavior) chatstate.Result {
	t.Helper()
	var res chatstate.Result
	f.do(t, func(tx *chatstate.Tx) error {
		var err error
		res, err = tx.SendMessage(id, f.input(msg), busy)
		return err
	})
	return res
}

func rlCommit(t testing.TB, f *fixture, id uuid.UUID, st chatstate.Step) {
	t.Helper()
	rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
		_, err := tx.CommitStep(id, st)
		return err
	})
}

func rlFinishError(t testing.TB, f *fixture, id uuid.UUID, msg string) {
	t.Helper()
	rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
		_, err := tx.FinishError(id, sdk.ChatError{Message: msg, Kind: sdk.ChatErrorGeneric})
		return err
	})
}

func rlFinishTurn(t testing.TB, f *fixture, id uuid.UUID) chatstate.Result {
	t.Helper()
	var res chatstate.Result
	rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
		var err error
		res, err = tx.FinishTurn(id)
		return err
	})
	return res
}

func rlAbandon(t testing.TB, f *fixture, id uuid.UUID) {
	t.Helper()
	rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
		_, err := tx.Abandon(id)
		return err
	})
}

func rlRequestCompaction(t testing.TB, f *fixture, id uuid.UUID) chatstate.State {
	t.Helper()
	var to chatstate.State
	rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
		res, err := tx.RequestCompaction(id)
		to = res.State
		return err
	})
	return to
}

// rlCallsStep is an assistant step calling one dynamic tool per id.
func rlCallsStep(ids ...string) chatstate.Step {
	parts := []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "calling tools"}}
	for _, id := range ids {
		parts = append(parts, sdk.ChatMessagePart{
			Type: sdk.PartToolCall, ToolCallID: id, ToolName: "ask_user", Args: json.RawMessage(`{"q":1}`),
		})
	}
	content, _ := chatstate.EncodeParts(parts)
	return chatstate.Step{Messages: []store.MessageInsertParams{{Role: store.RoleAssistant, Content: content}}}
}

// rlCompactionStep is the worker's compaction step: a summary triplet that
// consumes the compaction request.
func rlCompactionStep(t testing.TB, id uuid.UUID) chatstate.Step {
	t.Helper()
	triplet, err := chatstate.BoundaryTriplet(id, "summary of the conversation", chatstate.ToolChatSummarized,
		json.RawMessage(`{"source":"manual"}`), json.RawMessage(`{"summary":"s"}`))
	require.NoError(t, err)
	return chatstate.Step{Messages: triplet, Compaction: true}
}

// rlIdle is an owned W chat with an answered turn and generation_attempt 1.
func rlIdle(t testing.TB, f *fixture) uuid.UUID {
	t.Helper()
	id := f.seed(t, chatstate.StateR0)
	rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
		if _, err := tx.CommitStep(id, assistantStep("hi there")); err != nil {
			return err
		}
		_, err := tx.RecordGenerationAttempt(id)
		return err
	})
	rlFinishTurn(t, f, id)
	return id
}

// rlErrored is an owned chat with an answered turn, generation_attempt 1
// and `queued` queued messages, parked in error (E0, or E1 when queued > 0).
func rlErrored(t testing.TB, f *fixture, queued int) uuid.UUID {
	t.Helper()
	id := f.seed(t, chatstate.StateR0)
	rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
		if _, err := tx.CommitStep(id, assistantStep("hi there")); err != nil {
			return err
		}
		_, err := tx.RecordGenerationAttempt(id)
		return err
	})
	for i := range queued {
		rlSend(t, f, id, "queued "+string(rune('a'+i)), chatstate.BusyQueue)
	}
	rlFinishError(t, f, id, "boom")
	return id
}

// rlPending is an owned chat waiting for the results of calls (A0, or A1
// when queued > 0).
func rlPending(t testing.TB, f *fixture, queued int, calls ...string) uuid.UUID {
	t.Helper()
	id := f.seed(t, chatstate.StateR0)
	rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
		if _, err := tx.CommitStep(id, rlCallsStep(calls...)); err != nil {
			return err
		}
		_, err := tx.EnterRequiresAction(id)
		return err
	})
	for i := range queued {
		rlSend(t, f, id, "queued "+string(rune('a'+i)), chatstate.BusyQueue)
	}
	return id
}

// rlCompacting is an owned R0 chat with a pending compaction request.
func rlCompacting(t testing.TB, f *fixture) uuid.UUID {
	t.Helper()
	id := rlIdle(t, f)
	require.Equal(t, chatstate.StateR0, rlRequestCompaction(t, f, id))
	return id
}

// rlPatch writes chat columns directly, bypassing the machine, to build
// rows no transition produces (an Invalid chat, a marker on an idle chat).
func rlPatch(t testing.TB, f *fixture, id uuid.UUID, p store.ChatPatch) {
	t.Helper()
	require.NoError(t, f.s.InTx(f.ctx, func(tx store.Tx) error {
		_, err := tx.ChatUpdate(f.ctx, id, p)
		return err
	}))
}

// rlQueueInsert queues a message directly, bypassing the machine.
func rlQueueInsert(t testing.TB, f *fixture, id uuid.UUID, msg string) store.QueuedMessage {
	t.Helper()
	content, err := chatstate.EncodeParts(text(msg))
	require.NoError(t, err)
	var q store.QueuedMessage
	require.NoError(t, f.s.InTx(f.ctx, func(tx store.Tx) error {
		q, err = tx.QueueInsert(f.ctx, store.QueueInsertParams{ChatID: id, Content: content, Now: f.clock()})
		return err
	}))
	return q
}

// rlText joins the text parts of message content.
func rlText(t testing.TB, content json.RawMessage) string {
	t.Helper()
	var parts []sdk.ChatMessagePart
	require.NoError(t, json.Unmarshal(content, &parts))
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// rlFirstUser is the first active, visible user message of a snapshot.
func rlFirstUser(t testing.TB, s snapshot) store.Message {
	t.Helper()
	for _, m := range s.active() {
		if m.Role == store.RoleUser && m.Visibility != store.VisibilityModel {
			return m
		}
	}
	t.Fatalf("no user message in chat %s", s.Chat.ID)
	return store.Message{}
}

// rlLastUser is the last active user message of a snapshot.
func rlLastUser(t testing.TB, s snapshot) store.Message {
	t.Helper()
	active := s.active()
	for i := len(active) - 1; i >= 0; i-- {
		if active[i].Role == store.RoleUser {
			return active[i]
		}
	}
	t.Fatalf("no user message in chat %s", s.Chat.ID)
	return store.Message{}
}

// rlResults maps tool call ids to the tool-result parts answering them.
func rlResults(t testing.TB, msgs []store.Message) map[string][]sdk.ChatMessagePart {
	t.Helper()
	out := map[string][]sdk.ChatMessagePart{}
	for _, m := range msgs {
		for _, p := range partsOf(t, m) {
			if p.Type == sdk.PartToolResult {
				out[p.ToolCallID] = append(out[p.ToolCallID], p)
			}
		}
	}
	return out
}

// rlIsCancellation reports whether a tool-result part is a synthetic
// cancellation: is_error with result {"cancelled": true, ...}.
func rlIsCancellation(t testing.TB, p sdk.ChatMessagePart) bool {
	t.Helper()
	var r struct {
		Cancelled bool `json:"cancelled"`
	}
	if len(p.Result) == 0 || json.Unmarshal(p.Result, &r) != nil {
		return false
	}
	return p.IsError && r.Cancelled
}

// rlRequireCancelled requires exactly one synthetic cancellation result for
// each call in the active history.
func rlRequireCancelled(t testing.TB, s snapshot, calls ...string) {
	t.Helper()
	results := rlResults(t, s.active())
	for _, c := range calls {
		require.Len(t, results[c], 1, "tool call %s: want exactly one result", c)
		require.True(t, rlIsCancellation(t, results[c][0]), "tool call %s: result %s is not a cancellation", c, results[c][0].Result)
	}
}

// rlRequireNoCancellation requires that no synthetic cancellation is in the
// history at all.
func rlRequireNoCancellation(t testing.TB, s snapshot) {
	t.Helper()
	for id, rs := range rlResults(t, s.Messages) {
		for _, r := range rs {
			require.False(t, rlIsCancellation(t, r), "tool call %s got a cancellation", id)
		}
	}
}

// rlRequireAnsweredBeforeUsers walks the active history and requires that
// no user message enters it while a tool call is unanswered. It returns the
// calls still unanswered at the end.
func rlRequireAnsweredBeforeUsers(t testing.TB, s snapshot) []string {
	t.Helper()
	var outstanding []string
	for _, m := range s.active() {
		if m.Role == store.RoleUser {
			require.Empty(t, outstanding, "user message %d entered history before these tool calls were answered", m.ID)
		}
		for _, p := range partsOf(t, m) {
			switch {
			case p.Type == sdk.PartToolCall && !p.ProviderExecuted:
				outstanding = append(outstanding, p.ToolCallID)
			case p.Type == sdk.PartToolResult:
				for i, c := range outstanding {
					if c == p.ToolCallID {
						outstanding = append(outstanding[:i], outstanding[i+1:]...)
						break
					}
				}
			}
		}
	}
	return outstanding
}

func rlLastError(t testing.TB, c store.Chat) sdk.ChatError {
	t.Helper()
	require.NotNil(t, c.LastError, "chat %s has no last_error", c.ID)
	var e sdk.ChatError
	require.NoError(t, json.Unmarshal(c.LastError, &e))
	return e
}

// rlWantPayload is the chat:update payload a committed row calls for.
func rlWantPayload(c store.Chat) chatstate.UpdatePayload {
	p := chatstate.UpdatePayload{
		ChatID: c.ID, SnapshotVersion: c.SnapshotVersion, HistoryVersion: c.HistoryVersion,
		QueueVersion: c.QueueVersion, RetryStateVersion: c.RetryStateVersion,
		GenerationAttempt: c.GenerationAttempt, Status: c.Status, Archived: c.Archived,
	}
	if c.WorkerID.Valid {
		w := c.WorkerID.UUID
		p.WorkerID = &w
	}
	if c.RunnerID.Valid {
		r := c.RunnerID.UUID
		p.RunnerID = &r
	}
	return p
}

// rlNotices splits what was published since the last take into the
// chat:update payloads per chat and the chat:ownership payloads (decoded
// loosely, so unexpected fields show up).
func rlNotices(t testing.TB, f *fixture) (updates map[uuid.UUID][]chatstate.UpdatePayload, ownership []map[string]any) {
	t.Helper()
	updates = map[uuid.UUID][]chatstate.UpdatePayload{}
	for _, p := range f.pub.take() {
		switch {
		case p.Channel == "chat:ownership":
			var o map[string]any
			require.NoError(t, json.Unmarshal(p.Payload, &o))
			ownership = append(ownership, o)
		case strings.HasPrefix(p.Channel, "chat:update:"):
			var u chatstate.UpdatePayload
			require.NoError(t, json.Unmarshal(p.Payload, &u))
			require.Equal(t, "chat:update:"+u.ChatID.String(), p.Channel, "payload on another chat's channel")
			updates[u.ChatID] = append(updates[u.ChatID], u)
		default:
			t.Fatalf("publish on unknown channel %q", p.Channel)
		}
	}
	return updates, ownership
}

// rlCreateChild creates a child of parent; an empty first message lands it in W.
func rlCreateChild(t testing.TB, f *fixture, parent uuid.UUID, first string) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	f.do(t, func(tx *chatstate.Tx) error {
		res, err := tx.Create(rlChildParams(f, uuid.New(), parent, first))
		id = res.Chat.ID
		return err
	})
	return id
}

func rlChildParams(f *fixture, id, parent uuid.UUID, first string) chatstate.CreateParams {
	p := chatstate.CreateParams{
		ID: id, OwnerID: f.user.ID, Title: "child", ParentChatID: uuid.NullUUID{UUID: parent, Valid: true},
	}
	if first != "" {
		p.Input = f.input(first)
	}
	return p
}

func rlDescendants(t testing.TB, f *fixture, root uuid.UUID) []store.Chat {
	t.Helper()
	var out []store.Chat
	require.NoError(t, f.s.ReadTx(f.ctx, func(tx store.Reader) error {
		var err error
		out, err = tx.ChatDescendants(f.ctx, root)
		return err
	}))
	return out
}

// --- 1. synthetic cancellation results ---

// Spec, "Miscellaneous transition rules": a transition that inserts a user
// message answers every outstanding tool call first.
func TestRuleCancellationBeforeUserMessage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)

		t.Run("SendMessage from E0", func(t *testing.T) {
			id := f.seed(t, chatstate.StateR0)
			rlCommit(t, f, id, rlCallsStep("c1", "c2"))
			rlFinishError(t, f, id, "tool crashed")
			res := rlSend(t, f, id, "try again", chatstate.BusyQueue)
			require.Equal(t, chatstate.StateR0, res.State)
			s := f.snap(t, id)
			require.Empty(t, rlRequireAnsweredBeforeUsers(t, s))
			rlRequireCancelled(t, s, "c1", "c2")
			require.Equal(t, res.Message.ID, rlLastUser(t, s).ID)
		})

		t.Run("FinishInterruption promoting the queue head", func(t *testing.T) {
			id := f.seed(t, chatstate.StateR1)
			rlCommit(t, f, id, rlCallsStep("c1", "c2"))
			rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
				_, err := tx.Interrupt(id)
				return err
			})
			var fin chatstate.Result
			rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
				var err error
				// The partial step calls one more tool; it too is answered.
				fin, err = tx.FinishInterruption(id, rlCallsStep("c3").Messages)
				return err
			})
			require.Equal(t, chatstate.StateR0, fin.State)
			require.Len(t, fin.Promoted, 1)
			s := f.snap(t, id)
			require.Empty(t, rlRequireAnsweredBeforeUsers(t, s))
			rlRequireCancelled(t, s, "c1", "c2", "c3")
		})

		t.Run("FinishTurn promoting the queue head", func(t *testing.T) {
			id := f.seed(t, chatstate.StateR1)
			rlCommit(t, f, id, rlCallsStep("c1"))
			fin := rlFinishTurn(t, f, id)
			require.Equal(t, chatstate.StateR0, fin.State)
			s := f.snap(t, id)
			require.Empty(t, rlRequireAnsweredBeforeUsers(t, s))
			rlRequireCancelled(t, s, "c1")
		})

		t.Run("E1 SendMessage promoting the queue head", func(t *testing.T) {
			id := f.seed(t, chatstate.StateR1)
			rlCommit(t, f, id, rlCallsStep("c1"))
			rlFinishError(t, f, id, "boom")
			res := rlSend(t, f, id, "more", chatstate.BusyQueue)
			require.Equal(t, chatstate.StateR1, res.State)
			s := f.snap(t, id)
			require.Empty(t, rlRequireAnsweredBeforeUsers(t, s))
			rlRequireCancelled(t, s, "c1")
		})

		t.Run("Interrupt on an unowned running chat", func(t *testing.T) {
			// Spec, Interrupt: "the same transaction also applies
			// FinishInterruption after inserting synthetic cancellation
			// results for any outstanding tool calls".
			id := f.create(t, "hello")
			rlCommit(t, f, id, rlCallsStep("c1"))
			var res chatstate.Result
			rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
				var err error
				res, err = tx.Interrupt(id)
				return err
			})
			require.Equal(t, chatstate.StateW, res.State)
			s := f.snap(t, id)
			require.Equal(t, chatstate.StateW, s.State)
			require.Empty(t, rlRequireAnsweredBeforeUsers(t, s))
			rlRequireCancelled(t, s, "c1")
		})
	})
}

// ClearContext's anchor is a user row entering active history, so the
// outstanding-call rule applies to it too; otherwise the dangling call sits
// before the boundary where OutstandingToolCalls never looks again.
func TestRuleClearContextAnswersOutstandingCalls(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		id := f.seed(t, chatstate.StateR0)
		rlCommit(t, f, id, rlCallsStep("c1"))
		rlFinishError(t, f, id, "tool crashed")
		rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
			_, err := tx.ClearContext(id, uuid.NullUUID{})
			return err
		})
		s := f.snap(t, id)
		require.Equal(t, chatstate.StateW, s.State)
		require.Empty(t, rlRequireAnsweredBeforeUsers(t, s))
		rlRequireCancelled(t, s, "c1")
	})
}

// Transition steps shared by the tables below.

func rlInterrupt(tx *chatstate.Tx, id uuid.UUID) error {
	_, err := tx.Interrupt(id)
	return err
}

func rlCancelAction(tx *chatstate.Tx, id uuid.UUID) error {
	_, err := tx.CancelRequiresAction(id)
	return err
}

func rlFinishTurnStep(tx *chatstate.Tx, id uuid.UUID) error {
	_, err := tx.FinishTurn(id)
	return err
}

func rlFinishErrorStep(tx *chatstate.Tx, id uuid.UUID) error {
	_, err := tx.FinishError(id, sdk.ChatError{Message: "later failure", Kind: sdk.ChatErrorTimeout})
	return err
}

func rlReconcile(tx *chatstate.Tx, id uuid.UUID) error {
	_, err := tx.ReconcileInvalidState(id)
	return err
}

func rlRequestCompactionStep(tx *chatstate.Tx, id uuid.UUID) error {
	_, err := tx.RequestCompaction(id)
	return err
}

func rlClearStep(tx *chatstate.Tx, id uuid.UUID) error {
	_, err := tx.ClearContext(id, uuid.NullUUID{})
	return err
}

func rlArchiveStep(archived bool) rlAction {
	return func(tx *chatstate.Tx, id uuid.UUID) error {
		_, err := tx.SetArchived(id, archived)
		return err
	}
}

func rlSendAction(f *fixture, busy chatstate.BusyBehavior) rlAction {
	return func(tx *chatstate.Tx, id uuid.UUID) error {
		_, err := tx.SendMessage(id, f.input("new message"), busy)
		return err
	}
}

// rlPromoteHead promotes the current queue head.
func rlPromoteHead(f *fixture) rlAction {
	return func(tx *chatstate.Tx, id uuid.UUID) error {
		q, err := tx.Reader().QueueList(f.ctx, id)
		if err != nil {
			return err
		}
		if len(q) == 0 {
			return store.ErrNotFound
		}
		_, err = tx.PromoteQueuedMessage(id, q[0].ID)
		return err
	}
}

// rlEditFirst edits the chat's first visible user message.
func rlEditFirst(f *fixture) rlAction {
	return func(tx *chatstate.Tx, id uuid.UUID) error {
		ms, err := tx.Reader().MessageList(f.ctx, id, store.MessageListParams{})
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.Role == store.RoleUser && m.Visibility != store.VisibilityModel {
				_, err := tx.EditMessage(id, m.ID, f.input("edited"))
				return err
			}
		}
		return store.ErrNotFound
	}
}

func rlComplete(results []sdk.ToolResult) rlAction {
	return func(tx *chatstate.Tx, id uuid.UUID) error {
		_, err := tx.CompleteRequiresAction(id, results, uuid.NullUUID{})
		return err
	}
}

// Spec, "Miscellaneous transition rules": leaving A0/A1 other than by
// CompleteRequiresAction answers the pending calls with cancellations;
// EditMessage deletes them with the truncated suffix instead, and
// CompleteRequiresAction inserts exactly the submitted results.
func TestRuleLeavingRequiresAction(t *testing.T) {
	t.Parallel()
	type outcome int
	const (
		cancelled outcome = iota
		deleted
		submitted
	)
	submit := []sdk.ToolResult{
		{ToolCallID: "c2", Output: json.RawMessage(`{"err":"denied"}`), IsError: true},
		{ToolCallID: "c1", Output: json.RawMessage(`{"answer":42}`)},
	}
	cases := []struct {
		name   string
		queued int
		apply  func(f *fixture) rlAction
		want   chatstate.State
		result outcome
	}{
		{"Interrupt A0", 0, func(*fixture) rlAction { return rlInterrupt }, chatstate.StateR0, cancelled},
		{"Interrupt A1", 1, func(*fixture) rlAction { return rlInterrupt }, chatstate.StateR1, cancelled},
		{"CancelRequiresAction A0", 0, func(*fixture) rlAction { return rlCancelAction }, chatstate.StateR0, cancelled},
		{"CancelRequiresAction A1", 1, func(*fixture) rlAction { return rlCancelAction }, chatstate.StateR1, cancelled},
		{"SendMessage(interrupt) A0", 0, func(f *fixture) rlAction { return rlSendAction(f, chatstate.BusyInterrupt) }, chatstate.StateR1, cancelled},
		{"SendMessage(interrupt) A1", 1, func(f *fixture) rlAction { return rlSendAction(f, chatstate.BusyInterrupt) }, chatstate.StateR1, cancelled},
		{"PromoteQueuedMessage A1", 1, rlPromoteHead, chatstate.StateR0, cancelled},
		{"EditMessage A0", 0, rlEditFirst, chatstate.StateR0, deleted},
		{"EditMessage A1", 1, rlEditFirst, chatstate.StateR0, deleted},
		{"CompleteRequiresAction A0", 0, func(*fixture) rlAction { return rlComplete(submit) }, chatstate.StateR0, submitted},
		{"CompleteRequiresAction A1", 1, func(*fixture) rlAction { return rlComplete(submit) }, chatstate.StateR1, submitted},
	}
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				id := rlPending(t, f, tc.queued, "c1", "c2")
				before := f.snap(t, id)
				require.NotNil(t, before.Chat.RequiresActionDeadlineAt)
				rlApply(t, f, id, tc.apply(f))
				s := f.snap(t, id)
				require.Equal(t, tc.want, s.State)
				require.Nil(t, s.Chat.RequiresActionDeadlineAt, "the pending action's deadline survived")
				require.Empty(t, rlRequireAnsweredBeforeUsers(t, s), "pending calls left unanswered")
				switch tc.result {
				case cancelled:
					rlRequireCancelled(t, s, "c1", "c2")
				case deleted:
					rlRequireNoCancellation(t, s)
					require.Empty(t, rlResults(t, s.active()), "an edit answered calls it should have deleted")
					for _, m := range s.Messages {
						for _, p := range partsOf(t, m) {
							if p.Type == sdk.PartToolCall {
								require.True(t, m.Deleted, "tool call %s survived the edit", p.ToolCallID)
							}
						}
					}
				case submitted:
					rlRequireNoCancellation(t, s)
					results := rlResults(t, s.active())
					require.Len(t, results["c1"], 1)
					require.Len(t, results["c2"], 1)
					require.JSONEq(t, `{"answer":42}`, string(results["c1"][0].Result))
					require.False(t, results["c1"][0].IsError)
					require.JSONEq(t, `{"err":"denied"}`, string(results["c2"][0].Result))
					require.True(t, results["c2"][0].IsError)
					require.Equal(t, before.Queue, s.Queue, "CompleteRequiresAction preserves the queue")
				}
			})
		}

		t.Run("CompleteRequiresAction rejects bad results", func(t *testing.T) {
			ok := json.RawMessage(`{}`)
			bad := []struct {
				name    string
				results []sdk.ToolResult
			}{
				{"missing", []sdk.ToolResult{{ToolCallID: "c1", Output: ok}}},
				{"none", nil},
				{"unknown", []sdk.ToolResult{{ToolCallID: "c1", Output: ok}, {ToolCallID: "c2", Output: ok}, {ToolCallID: "c9", Output: ok}}},
				{"duplicate", []sdk.ToolResult{{ToolCallID: "c1", Output: ok}, {ToolCallID: "c1", Output: ok}, {ToolCallID: "c2", Output: ok}}},
			}
			for _, tc := range bad {
				t.Run(tc.name, func(t *testing.T) {
					id := rlPending(t, f, 1, "c1", "c2")
					err := rlRejects(t, f, func(tx *chatstate.Tx) error {
						return rlComplete(tc.results)(tx, id)
					}, id)
					require.ErrorIs(t, err, chatstate.ErrValidation)
				})
			}
		})
	})
}

// --- 2. last_error ---

// Spec, "Miscellaneous transition rules": any transition leaving E0 or E1,
// except SetArchived(true), clears last_error; FinishError replaces it.
func TestRuleLastError(t *testing.T) {
	t.Parallel()
	leaving := []struct {
		name   string
		queued int
		apply  func(f *fixture) rlAction
		want   chatstate.State
	}{
		{"E0 SendMessage", 0, func(f *fixture) rlAction { return rlSendAction(f, chatstate.BusyQueue) }, chatstate.StateR0},
		{"E0 SendMessage(interrupt)", 0, func(f *fixture) rlAction { return rlSendAction(f, chatstate.BusyInterrupt) }, chatstate.StateR0},
		{"E0 EditMessage", 0, rlEditFirst, chatstate.StateR0},
		{"E0 RequestCompaction", 0, func(*fixture) rlAction { return rlRequestCompactionStep }, chatstate.StateR0},
		{"E0 ClearContext", 0, func(*fixture) rlAction { return rlClearStep }, chatstate.StateW},
		{"E1 SendMessage", 1, func(f *fixture) rlAction { return rlSendAction(f, chatstate.BusyQueue) }, chatstate.StateR1},
		{"E1 EditMessage", 1, rlEditFirst, chatstate.StateR0},
		{"E1 RequestCompaction", 1, func(*fixture) rlAction { return rlRequestCompactionStep }, chatstate.StateR1},
		{"E1 PromoteQueuedMessage", 1, rlPromoteHead, chatstate.StateR0},
		{"E1 PromoteQueuedMessage keeping a queue", 2, rlPromoteHead, chatstate.StateR1},
	}
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		for _, tc := range leaving {
			t.Run(tc.name+" clears it", func(t *testing.T) {
				id := rlErrored(t, f, tc.queued)
				require.Equal(t, "boom", rlLastError(t, f.snap(t, id).Chat).Message)
				rlApply(t, f, id, tc.apply(f))
				s := f.snap(t, id)
				require.Equal(t, tc.want, s.State)
				require.Nil(t, s.Chat.LastError)
			})
		}

		for _, queued := range []int{0, 1} {
			t.Run("SetArchived keeps it from E"+string(rune('0'+queued)), func(t *testing.T) {
				id := rlErrored(t, f, queued)
				before := f.snap(t, id).Chat.LastError
				rlApply(t, f, id, rlArchiveStep(true))
				s := f.snap(t, id)
				require.True(t, s.State.Archived())
				require.JSONEq(t, string(before), string(s.Chat.LastError))
				rlApply(t, f, id, rlArchiveStep(false))
				require.JSONEq(t, string(before), string(f.snap(t, id).Chat.LastError), "unarchiving lost last_error")
			})
		}

		t.Run("FinishError replaces it", func(t *testing.T) {
			// No transition reaches a running chat with a last_error (leaving
			// error clears it), so the old value is written directly.
			id := f.seed(t, chatstate.StateR0)
			rlPatch(t, f, id, store.ChatPatch{LastError: store.Some(json.RawMessage(`{"message":"old","kind":"generic","retryable":false}`))})
			rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
				_, err := tx.FinishError(id, sdk.ChatError{Message: "new", Kind: sdk.ChatErrorRateLimit, Retryable: true})
				return err
			})
			s := f.snap(t, id)
			require.Equal(t, chatstate.StateE0, s.State)
			require.Equal(t, sdk.ChatError{Message: "new", Kind: sdk.ChatErrorRateLimit, Retryable: true}, rlLastError(t, s.Chat))
		})

		t.Run("FinishError from W sets it", func(t *testing.T) {
			id := rlIdle(t, f)
			rlApply(t, f, id, rlFinishErrorStep)
			s := f.snap(t, id)
			require.Equal(t, chatstate.StateE0, s.State)
			require.Equal(t, "later failure", rlLastError(t, s.Chat).Message)
		})
	})
}

// --- 3. compaction_requested_at ---

// Spec, "RequestCompaction" and "Manual compaction".
func TestRuleCompactionRequest(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)

		from := []struct {
			name  string
			build func(t testing.TB) uuid.UUID
			want  chatstate.State
		}{
			{"W", func(t testing.TB) uuid.UUID { return rlIdle(t, f) }, chatstate.StateR0},
			{"E0", func(t testing.TB) uuid.UUID { return rlErrored(t, f, 0) }, chatstate.StateR0},
			{"E1", func(t testing.TB) uuid.UUID { return rlErrored(t, f, 1) }, chatstate.StateR1},
		}
		for _, tc := range from {
			t.Run("RequestCompaction from "+tc.name, func(t *testing.T) {
				id := tc.build(t)
				before := f.snap(t, id)
				require.Equal(t, int64(1), before.Chat.GenerationAttempt, "fixture: the previous turn made an attempt")
				require.Nil(t, before.Chat.CompactionRequestedAt)
				f.advance(time.Minute)
				require.Equal(t, tc.want, rlRequestCompaction(t, f, id))
				after := f.snap(t, id)
				require.Equal(t, tc.want, after.State)
				require.NotNil(t, after.Chat.CompactionRequestedAt)
				require.True(t, after.Chat.CompactionRequestedAt.Equal(f.clock()),
					"compaction_requested_at %v, want the transaction's now %v", after.Chat.CompactionRequestedAt, f.clock())
				require.Equal(t, before.Chat.SnapshotVersion+1, after.Chat.SnapshotVersion)
				require.Equal(t, after.Chat.SnapshotVersion, after.Chat.HistoryVersion, "history_version must move to the new snapshot")
				require.Zero(t, after.Chat.GenerationAttempt, "generation_attempt must restart")
				require.Equal(t, before.Messages, after.Messages, "RequestCompaction must not write history")
				require.Equal(t, before.Queue, after.Queue)
				require.Nil(t, after.Chat.LastError)
			})
		}

		nothing := []struct {
			name  string
			build func(t testing.TB) uuid.UUID
		}{
			{"no assistant message", func(t testing.TB) uuid.UUID {
				id := f.create(t, "hello")
				rlFinishTurn(t, f, id)
				return id
			}},
			{"empty chat", func(t testing.TB) uuid.UUID { return f.create(t, "") }},
			{"errored before any reply", func(t testing.TB) uuid.UUID { return f.seed(t, chatstate.StateE0) }},
			{"already cleared", func(t testing.TB) uuid.UUID {
				id := rlIdle(t, f)
				rlApply(t, f, id, rlClearStep)
				return id
			}},
			{"already compacted", func(t testing.TB) uuid.UUID {
				id := rlCompacting(t, f)
				rlCommit(t, f, id, rlCompactionStep(t, id))
				rlFinishTurn(t, f, id)
				return id
			}},
		}
		for _, tc := range nothing {
			t.Run("nothing to compact: "+tc.name, func(t *testing.T) {
				id := tc.build(t)
				err := rlRejects(t, f, func(tx *chatstate.Tx) error { return rlRequestCompactionStep(tx, id) }, id)
				require.ErrorIs(t, err, chatstate.ErrNothingToCompact)
			})
		}

		t.Run("carried while the turn stays alive", func(t *testing.T) {
			id := rlCompacting(t, f)
			want := f.snap(t, id).Chat.CompactionRequestedAt
			require.NotNil(t, want)
			requireKept := func(what string) {
				t.Helper()
				got := f.snap(t, id).Chat.CompactionRequestedAt
				require.NotNil(t, got, "%s dropped compaction_requested_at", what)
				require.True(t, got.Equal(*want), "%s changed compaction_requested_at to %v", what, got)
			}
			f.advance(time.Second)
			f.acquire(t, id)
			requireKept("Acquire")
			rlAbandon(t, f, id)
			requireKept("Abandon")
			f.acquire(t, id)
			rlSend(t, f, id, "while busy", chatstate.BusyQueue)
			require.Equal(t, chatstate.StateR1, f.snap(t, id).State)
			requireKept("SendMessage(queue)")
			rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
				if _, err := tx.RecordGenerationAttempt(id); err != nil {
					return err
				}
				_, err := tx.RecordRetryState(id, sdk.ChatRetry{Attempt: 1, Error: "overloaded", Kind: sdk.ChatErrorOverloaded})
				return err
			})
			requireKept("RecordGenerationAttempt/RecordRetryState")
			rlCommit(t, f, id, assistantStep("an ordinary step"))
			requireKept("an ordinary CommitStep")
			rlCommit(t, f, id, rlCompactionStep(t, id))
			require.Nil(t, f.snap(t, id).Chat.CompactionRequestedAt, "the compaction CommitStep must consume the request")
		})

		t.Run("carried by SetArchived", func(t *testing.T) {
			// No transition leaves an idle chat with the marker set, so it is
			// written directly.
			id := rlIdle(t, f)
			at := f.clock().Add(-time.Hour)
			rlPatch(t, f, id, store.ChatPatch{CompactionRequestedAt: store.Some(&at)})
			for _, archived := range []bool{true, false} {
				rlApply(t, f, id, rlArchiveStep(archived))
				got := f.snap(t, id).Chat.CompactionRequestedAt
				require.NotNil(t, got, "SetArchived(%v) dropped compaction_requested_at", archived)
				require.True(t, got.Equal(at))
			}
		})

		marked := func(t testing.TB, id uuid.UUID) uuid.UUID {
			at := f.clock().Add(-time.Hour)
			rlPatch(t, f, id, store.ChatPatch{CompactionRequestedAt: store.Some(&at)})
			return id
		}
		cleared := []struct {
			name  string
			build func(t testing.TB) uuid.UUID
			apply rlAction
			want  chatstate.State
		}{
			{"FinishTurn", func(t testing.TB) uuid.UUID { return rlCompacting(t, f) }, rlFinishTurnStep, chatstate.StateW},
			{"FinishError", func(t testing.TB) uuid.UUID { return rlCompacting(t, f) }, rlFinishErrorStep, chatstate.StateE0},
			{"Interrupt", func(t testing.TB) uuid.UUID { return rlCompacting(t, f) }, rlInterrupt, chatstate.StateI0},
			{"EditMessage", func(t testing.TB) uuid.UUID { return rlCompacting(t, f) }, rlEditFirst(f), chatstate.StateR0},
			{"PromoteQueuedMessage", func(t testing.TB) uuid.UUID {
				id := rlErrored(t, f, 1)
				require.Equal(t, chatstate.StateR1, rlRequestCompaction(t, f, id))
				return id
			}, rlPromoteHead(f), chatstate.StateI1},
			{"CancelRequiresAction", func(t testing.TB) uuid.UUID { return marked(t, rlPending(t, f, 0, "c1")) }, rlCancelAction, chatstate.StateR0},
			{"ReconcileInvalidState", func(t testing.TB) uuid.UUID { return marked(t, f.seed(t, chatstate.StateInvalid)) }, rlReconcile, chatstate.StateE0},
			{"compaction CommitStep", func(t testing.TB) uuid.UUID { return rlCompacting(t, f) }, func(tx *chatstate.Tx, id uuid.UUID) error {
				_, err := tx.CommitStep(id, rlCompactionStep(t, id))
				return err
			}, chatstate.StateR0},
		}
		for _, tc := range cleared {
			t.Run("cleared by "+tc.name, func(t *testing.T) {
				id := tc.build(t)
				require.NotNil(t, f.snap(t, id).Chat.CompactionRequestedAt)
				rlApply(t, f, id, tc.apply)
				s := f.snap(t, id)
				require.Equal(t, tc.want, s.State)
				require.Nil(t, s.Chat.CompactionRequestedAt)
			})
		}
	})
}

// --- 4. ClearContext ---

// Spec, "ClearContext" and "POST /api/v2/chats/{chat}/clear".
func TestRuleClearContext(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)

		requireTriplet := func(t *testing.T, before, after snapshot) {
			t.Helper()
			require.Len(t, after.Messages, len(before.Messages)+3, "clear inserts exactly the triplet")
			require.Equal(t, before.Messages, after.Messages[:len(before.Messages)], "the transcript is preserved")
			triplet := after.Messages[len(before.Messages):]
			anchor, call, result := triplet[0], triplet[1], triplet[2]

			require.Equal(t, store.RoleUser, anchor.Role)
			require.Equal(t, store.VisibilityModel, anchor.Visibility, "the anchor is model-only")
			require.True(t, anchor.Compressed)
			require.True(t, chatstate.IsBoundaryAnchor(anchor))

			require.Equal(t, store.RoleAssistant, call.Role)
			require.Equal(t, store.VisibilityUser, call.Visibility, "the tool call is visible")
			require.True(t, call.Compressed)
			callParts := partsOf(t, call)
			require.Len(t, callParts, 1)
			require.Equal(t, sdk.PartToolCall, callParts[0].Type)
			require.Equal(t, chatstate.ToolChatCleared, callParts[0].ToolName)

			require.Equal(t, store.RoleTool, result.Role)
			require.Equal(t, store.VisibilityUser, result.Visibility, "the tool result is visible")
			require.True(t, result.Compressed)
			resultParts := partsOf(t, result)
			require.Len(t, resultParts, 1)
			require.Equal(t, sdk.PartToolResult, resultParts[0].Type)
			require.Equal(t, chatstate.ToolChatCleared, resultParts[0].ToolName)
			require.Equal(t, callParts[0].ToolCallID, resultParts[0].ToolCallID)

			for _, m := range triplet {
				require.Equal(t, after.Chat.SnapshotVersion, m.Revision)
				require.False(t, m.Deleted)
			}
			require.Equal(t, after.Chat.SnapshotVersion, after.Chat.HistoryVersion)
			require.Zero(t, after.Chat.GenerationAttempt)
			require.Equal(t, before.Chat.WorkerID, after.Chat.WorkerID, "ClearContext leaves ownership untouched")
			require.Equal(t, before.Chat.RunnerID, after.Chat.RunnerID, "ClearContext leaves ownership untouched")
			require.Nil(t, after.Chat.LastError)
			require.Nil(t, after.Chat.CompactionRequestedAt)
		}

		for _, tc := range []struct {
			name  string
			build func(t testing.TB) uuid.UUID
		}{
			{"W", func(t testing.TB) uuid.UUID { return rlIdle(t, f) }},
			{"E0", func(t testing.TB) uuid.UUID { return rlErrored(t, f, 0) }},
			{"E0 without a reply", func(t testing.TB) uuid.UUID { return f.seed(t, chatstate.StateE0) }},
		} {
			t.Run("from "+tc.name, func(t *testing.T) {
				id := tc.build(t)
				before := f.snap(t, id)
				require.True(t, before.Chat.WorkerID.Valid, "fixture: an owned chat shows ownership is kept")
				var to chatstate.State
				rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
					res, err := tx.ClearContext(id, uuid.NullUUID{UUID: f.user.ID, Valid: true})
					to = res.State
					return err
				})
				require.Equal(t, chatstate.StateW, to)
				after := f.snap(t, id)
				require.Equal(t, chatstate.StateW, after.State)
				requireTriplet(t, before, after)

				err := rlRejects(t, f, func(tx *chatstate.Tx) error { return rlClearStep(tx, id) }, id)
				require.ErrorIs(t, err, chatstate.ErrNothingToClear, "a second clear must find nothing to clear")
			})
		}

		t.Run("empty chat has nothing to clear", func(t *testing.T) {
			id := f.create(t, "")
			err := rlRejects(t, f, func(tx *chatstate.Tx) error { return rlClearStep(tx, id) }, id)
			require.ErrorIs(t, err, chatstate.ErrNothingToClear)
		})

		t.Run("E1 is rejected", func(t *testing.T) {
			id := rlErrored(t, f, 1)
			err := rlRejects(t, f, func(tx *chatstate.Tx) error { return rlClearStep(tx, id) }, id)
			require.ErrorIs(t, err, chatstate.ErrTransitionNotAllowed)
		})
	})
}

// --- 5. promotion ---

// Spec: "Every transition that promotes a queued message into history
// stores the queue row's ID in chat_messages.queued_message_id".
func TestRulePromotion(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)

		// requirePromoted checks that m is the promoted q and q left the queue.
		requirePromoted := func(t *testing.T, id uuid.UUID, m store.Message, q store.QueuedMessage) {
			t.Helper()
			require.NotNil(t, m.QueuedMessageID, "promoted message %d has no queued_message_id", m.ID)
			require.Equal(t, q.ID, *m.QueuedMessageID)
			require.Equal(t, store.RoleUser, m.Role)
			require.Equal(t, rlText(t, q.Content), rlText(t, m.Content))
			s := f.snap(t, id)
			require.Equal(t, m.ID, rlLastUser(t, s).ID)
			for _, left := range s.Queue {
				require.NotEqual(t, q.ID, left.ID, "the promoted row is still queued")
			}
		}

		t.Run("FinishTurn from R1", func(t *testing.T) {
			id := f.seed(t, chatstate.StateR1)
			head := f.snap(t, id).Queue[0]
			fin := rlFinishTurn(t, f, id)
			require.Equal(t, chatstate.StateR0, fin.State)
			require.Len(t, fin.Promoted, 1)
			requirePromoted(t, id, fin.Promoted[0], head)
		})

		t.Run("FinishInterruption from I1", func(t *testing.T) {
			id := f.seed(t, chatstate.StateI1)
			head := f.snap(t, id).Queue[0]
			var fin chatstate.Result
			rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
				var err error
				fin, err = tx.FinishInterruption(id, nil)
				return err
			})
			require.Equal(t, chatstate.StateR0, fin.State)
			require.Len(t, fin.Promoted, 1)
			requirePromoted(t, id, fin.Promoted[0], head)
		})

		t.Run("E1 SendMessage promotes the head and queues m", func(t *testing.T) {
			id := rlErrored(t, f, 1)
			head := f.snap(t, id).Queue[0]
			res := rlSend(t, f, id, "newest", chatstate.BusyQueue)
			require.Equal(t, chatstate.StateR1, res.State)
			require.Nil(t, res.Message, "m stays queued")
			require.Len(t, res.Promoted, 1)
			requirePromoted(t, id, res.Promoted[0], head)
			require.NotNil(t, res.Queued)
			require.NotEqual(t, head.ID, res.Queued.ID)
			require.Equal(t, "newest", rlText(t, res.Queued.Content))
			require.Equal(t, []int64{res.Queued.ID}, rlQueueIDs(f.snap(t, id)))
		})

		for _, tc := range []struct {
			name  string
			build func(t testing.TB) uuid.UUID
			want  chatstate.State
		}{
			{"E1", func(t testing.TB) uuid.UUID { return rlErrored(t, f, 1) }, chatstate.StateR0},
			{"A1", func(t testing.TB) uuid.UUID { return rlPending(t, f, 1, "c1") }, chatstate.StateR0},
		} {
			t.Run("PromoteQueuedMessage from "+tc.name, func(t *testing.T) {
				id := tc.build(t)
				head := f.snap(t, id).Queue[0]
				var res chatstate.Result
				rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
					var err error
					res, err = tx.PromoteQueuedMessage(id, head.ID)
					return err
				})
				require.Equal(t, tc.want, res.State)
				require.NotNil(t, res.Message)
				requirePromoted(t, id, *res.Message, head)
			})
		}

		t.Run("PromoteQueuedMessage of a non-head item in E1", func(t *testing.T) {
			id := rlErrored(t, f, 3)
			queue := f.snap(t, id).Queue
			require.Len(t, queue, 3)
			var res chatstate.Result
			rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
				var err error
				res, err = tx.PromoteQueuedMessage(id, queue[2].ID)
				return err
			})
			require.Equal(t, chatstate.StateR1, res.State)
			require.NotNil(t, res.Message)
			requirePromoted(t, id, *res.Message, queue[2])
			require.Equal(t, []int64{queue[0].ID, queue[1].ID}, rlQueueIDs(f.snap(t, id)), "the rest of the queue keeps its order")
		})

		t.Run("PromoteQueuedMessage from R1 moves qid to the head and interrupts", func(t *testing.T) {
			id := f.seed(t, chatstate.StateR1)
			rlSend(t, f, id, "second", chatstate.BusyQueue)
			queue := f.snap(t, id).Queue
			require.Len(t, queue, 2)
			var res chatstate.Result
			rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
				var err error
				res, err = tx.PromoteQueuedMessage(id, queue[1].ID)
				return err
			})
			require.Nil(t, res.Message, "from R1 the message stays queued until the interruption finishes")
			s := f.snap(t, id)
			require.Equal(t, chatstate.StateI1, s.State)
			require.Equal(t, []int64{queue[1].ID, queue[0].ID}, rlQueueIDs(s))

			var fin chatstate.Result
			rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
				var err error
				fin, err = tx.FinishInterruption(id, nil)
				return err
			})
			require.Equal(t, chatstate.StateR1, fin.State)
			require.Len(t, fin.Promoted, 1)
			requirePromoted(t, id, fin.Promoted[0], queue[1])
			require.Equal(t, []int64{queue[0].ID}, rlQueueIDs(f.snap(t, id)))
		})

		t.Run("PromoteQueuedMessage from I1 reorders only", func(t *testing.T) {
			id := f.seed(t, chatstate.StateI1)
			rlSend(t, f, id, "second", chatstate.BusyQueue)
			queue := f.snap(t, id).Queue
			rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
				_, err := tx.PromoteQueuedMessage(id, queue[1].ID)
				return err
			})
			s := f.snap(t, id)
			require.Equal(t, chatstate.StateI1, s.State)
			require.Equal(t, []int64{queue[1].ID, queue[0].ID}, rlQueueIDs(s))
		})

		t.Run("unknown queued message", func(t *testing.T) {
			id := rlErrored(t, f, 2)
			other := rlErrored(t, f, 1)
			foreign := f.snap(t, other).Queue[0].ID
			for _, qid := range []int64{987654, foreign} {
				err := rlRejects(t, f, func(tx *chatstate.Tx) error {
					_, err := tx.DeleteQueuedMessage(id, qid)
					return err
				}, id, other)
				require.ErrorIs(t, err, chatstate.ErrNotFound, "DeleteQueuedMessage(%d)", qid)
				err = rlRejects(t, f, func(tx *chatstate.Tx) error {
					_, err := tx.PromoteQueuedMessage(id, qid)
					return err
				}, id, other)
				require.ErrorIs(t, err, chatstate.ErrNotFound, "PromoteQueuedMessage(%d)", qid)
			}
		})
	})
}

func rlQueueIDs(s snapshot) []int64 {
	ids := make([]int64, 0, len(s.Queue))
	for _, q := range s.Queue {
		ids = append(ids, q.ID)
	}
	return ids
}

// --- 6. unowned chats ---

// Spec, "POST /api/v2/chats/{chat}/messages" and ".../interrupt": with no
// worker, nothing is generating, so the interruption finishes in the same
// transaction.
func TestRuleUnownedChats(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)

		unownedR1 := func(t testing.TB) uuid.UUID {
			id := f.create(t, "hello")
			rlSend(t, f, id, "queued", chatstate.BusyQueue)
			require.Equal(t, chatstate.StateR1, f.snap(t, id).State)
			return id
		}
		abandoned := func(t testing.TB, st chatstate.State) uuid.UUID {
			id := f.seed(t, st)
			rlAbandon(t, f, id)
			return id
		}

		t.Run("SendMessage(interrupt) on R0 promotes m at once", func(t *testing.T) {
			id := f.create(t, "hello")
			f.pub.take()
			res := rlSend(t, f, id, "now", chatstate.BusyInterrupt)
			require.Equal(t, chatstate.StateR0, res.State)
			require.Nil(t, res.Queued, "m was promoted, so it is not reported as queued")
			require.NotNil(t, res.Message)
			require.NotNil(t, res.Message.QueuedMessageID, "m went through the queue")
			require.Equal(t, "now", rlText(t, res.Message.Content))
			s := f.snap(t, id)
			require.Equal(t, chatstate.StateR0, s.State)
			require.False(t, s.Chat.WorkerID.Valid)
			require.Empty(t, s.Queue)
			require.Equal(t, res.Message.ID, rlLastUser(t, s).ID)
			_, ownership := rlNotices(t, f)
			require.Len(t, ownership, 1, "a runnable unowned chat is announced to workers")
		})

		t.Run("SendMessage(interrupt) on R1 promotes the old head and queues m", func(t *testing.T) {
			id := unownedR1(t)
			head := f.snap(t, id).Queue[0]
			res := rlSend(t, f, id, "now", chatstate.BusyInterrupt)
			require.Equal(t, chatstate.StateR1, res.State)
			require.Nil(t, res.Message)
			require.Len(t, res.Promoted, 1)
			require.Equal(t, head.ID, *res.Promoted[0].QueuedMessageID)
			require.NotNil(t, res.Queued)
			require.NotEqual(t, head.ID, res.Queued.ID)
			s := f.snap(t, id)
			require.Equal(t, []int64{res.Queued.ID}, rlQueueIDs(s))
			require.False(t, s.Chat.WorkerID.Valid)
		})

		t.Run("Interrupt on R0 lands W", func(t *testing.T) {
			id := f.create(t, "hello")
			var res chatstate.Result
			rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
				var err error
				res, err = tx.Interrupt(id)
				return err
			})
			require.Equal(t, chatstate.StateW, res.State)
			require.Equal(t, chatstate.StateW, f.snap(t, id).State)
		})

		for _, tc := range []struct {
			name  string
			build func(t testing.TB) uuid.UUID
			want  chatstate.State
		}{
			{"R1", unownedR1, chatstate.StateR0},
			{"I1", func(t testing.TB) uuid.UUID { return abandoned(t, chatstate.StateI1) }, chatstate.StateR0},
		} {
			t.Run("Interrupt on "+tc.name+" promotes the head", func(t *testing.T) {
				id := tc.build(t)
				head := f.snap(t, id).Queue[0]
				var res chatstate.Result
				rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
					var err error
					res, err = tx.Interrupt(id)
					return err
				})
				require.Equal(t, tc.want, res.State)
				require.Len(t, res.Promoted, 1)
				require.Equal(t, head.ID, *res.Promoted[0].QueuedMessageID)
				s := f.snap(t, id)
				require.Equal(t, tc.want, s.State)
				require.Empty(t, s.Queue)
				require.False(t, s.Chat.WorkerID.Valid)
			})
		}

		t.Run("Interrupt on I0 lands W", func(t *testing.T) {
			id := abandoned(t, chatstate.StateI0)
			rlApply(t, f, id, rlInterrupt)
			require.Equal(t, chatstate.StateW, f.snap(t, id).State)
		})

		for _, st := range []chatstate.State{chatstate.StateI0, chatstate.StateI1} {
			t.Run("Interrupt on an owned "+string(st)+" is rejected", func(t *testing.T) {
				id := f.seed(t, st)
				err := rlRejects(t, f, func(tx *chatstate.Tx) error { return rlInterrupt(tx, id) }, id)
				require.ErrorIs(t, err, chatstate.ErrTransitionNotAllowed)
			})
		}
	})
}

// Spec, "POST /api/v2/chats/{chat}/messages": I0 -> SendMessage(m, queue)
// -> I1. Finishing the interruption in the same transaction is described
// for busy_behavior=interrupt only; queueing must leave m queued.
func TestRuleQueueOnUnownedInterruptingChat(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		id := f.seed(t, chatstate.StateI0)
		rlAbandon(t, f, id)
		res := rlSend(t, f, id, "later", chatstate.BusyQueue)
		require.Equal(t, chatstate.StateI1, res.State)
		require.NotNil(t, res.Queued, "m must stay queued")
		require.Equal(t, chatstate.StateI1, f.snap(t, id).State)
	})
}

// --- 7. family archive ---

// Spec, "PATCH /api/v2/chats/{chat}".
func TestFamilyArchive(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)

		// family is root -> {a, b}, a -> grandchild, created one second
		// apart so descendants list parents first. b is parked in error.
		family := func(t testing.TB) (root, a, b, grand uuid.UUID) {
			root = f.create(t, "")
			f.advance(time.Second)
			a = rlCreateChild(t, f, root, "")
			f.advance(time.Second)
			b = rlCreateChild(t, f, root, "work")
			rlFinishError(t, f, b, "boom")
			f.advance(time.Second)
			grand = rlCreateChild(t, f, a, "")
			f.advance(time.Second)
			return root, a, b, grand
		}
		archiveFamily := func(root uuid.UUID, archived bool) func(tx *chatstate.Tx) error {
			return func(tx *chatstate.Tx) error { _, err := tx.SetArchivedFamily(root, archived); return err }
		}

		t.Run("archive and unarchive the whole family", func(t *testing.T) {
			root, a, b, grand := family(t)
			ids := []uuid.UUID{root, a, b, grand}
			require.ElementsMatch(t, []uuid.UUID{a, b, grand}, rlChatIDs(rlDescendants(t, f, root)))

			for _, step := range []struct {
				archived bool
				want     []chatstate.State
			}{
				{true, []chatstate.State{chatstate.StateXW, chatstate.StateXW, chatstate.StateXE0, chatstate.StateXW}},
				{false, []chatstate.State{chatstate.StateW, chatstate.StateW, chatstate.StateE0, chatstate.StateW}},
			} {
				before := make([]snapshot, len(ids))
				for i, id := range ids {
					before[i] = f.snap(t, id)
				}
				f.pub.take()
				f.do(t, archiveFamily(root, step.archived))
				updates, ownership := rlNotices(t, f)
				require.Empty(t, ownership)
				for i, id := range ids {
					after := f.snap(t, id)
					require.Equal(t, step.want[i], after.State, "member %d", i)
					require.Equal(t, before[i].Chat.SnapshotVersion+1, after.Chat.SnapshotVersion, "member %d", i)
					require.Equal(t, before[i].Messages, after.Messages)
					require.Equal(t, []chatstate.UpdatePayload{rlWantPayload(after.Chat)}, updates[id], "member %d", i)
				}
			}
		})

		t.Run("one member that cannot be archived fails the whole family", func(t *testing.T) {
			root, a, b, grand := family(t)
			running := rlCreateChild(t, f, a, "still working")
			require.Equal(t, chatstate.StateR0, f.snap(t, running).State)
			err := rlRejects(t, f, archiveFamily(root, true), root, a, b, grand, running)
			require.ErrorIs(t, err, chatstate.ErrTransitionNotAllowed)
		})

		t.Run("a child cannot be unarchived while its parent is archived", func(t *testing.T) {
			root, a, _, grand := family(t)
			f.do(t, archiveFamily(root, true))
			all := append([]uuid.UUID{root}, rlChatIDs(rlDescendants(t, f, root))...)
			for _, child := range []uuid.UUID{a, grand} {
				err := rlRejects(t, f, func(tx *chatstate.Tx) error { return rlArchiveStep(false)(tx, child) }, all...)
				require.ErrorIs(t, err, chatstate.ErrTransitionNotAllowed)
				err = rlRejects(t, f, archiveFamily(child, false), all...)
				require.ErrorIs(t, err, chatstate.ErrTransitionNotAllowed)
			}
		})

		t.Run("no child joins an archived family", func(t *testing.T) {
			root, a, _, _ := family(t)
			f.do(t, archiveFamily(root, true))
			members := rlDescendants(t, f, root)
			for _, parent := range []uuid.UUID{root, a} {
				childID := uuid.New()
				err := rlRejects(t, f, func(tx *chatstate.Tx) error {
					_, err := tx.Create(rlChildParams(f, childID, parent, ""))
					return err
				}, root, a, childID)
				require.ErrorIs(t, err, chatstate.ErrTransitionNotAllowed)
				require.False(t, f.snap(t, childID).Exists)
			}
			require.Equal(t, members, rlDescendants(t, f, root))
		})
	})
}

func rlChatIDs(cs []store.Chat) []uuid.UUID {
	ids := make([]uuid.UUID, 0, len(cs))
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

// The guard "unarchiving a child fails while its parent is archived" must
// not fire inside the family operation, whatever order descendants are
// listed in. Descendants are listed by (created_at, id); here a child and
// its grandchild share created_at (a frozen clock, as with replica clock
// skew or a coarse clock) and the grandchild's id sorts first.
func TestFamilyUnarchiveWhenGrandchildSortsFirst(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		root := f.create(t, "")
		child := uuid.MustParse("ffffffff-ffff-4fff-bfff-ffffffffffff")
		grand := uuid.MustParse("00000000-0000-4000-8000-000000000001")
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.Create(rlChildParams(f, child, root, ""))
			return err
		})
		f.do(t, func(tx *chatstate.Tx) error {
			_, err := tx.Create(rlChildParams(f, grand, child, ""))
			return err
		})
		f.do(t, func(tx *chatstate.Tx) error { _, err := tx.SetArchivedFamily(root, true); return err })
		f.do(t, func(tx *chatstate.Tx) error { _, err := tx.SetArchivedFamily(root, false); return err })
		for _, id := range []uuid.UUID{root, child, grand} {
			require.Equal(t, chatstate.StateW, f.snap(t, id).State)
		}
	})
}

// errors.go: ErrChatArchived is "the chat (or its family root) is archived".
// A child refused because its family is archived must say so, not that a
// chat was not found (TransitionError from N unwraps to ErrNotFound).
func TestFamilyCreateUnderArchivedRootReportsArchived(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		root := f.create(t, "")
		f.do(t, func(tx *chatstate.Tx) error { _, err := tx.SetArchivedFamily(root, true); return err })
		err := f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			_, err := tx.Create(rlChildParams(f, uuid.New(), root, ""))
			return err
		})
		require.ErrorIs(t, err, chatstate.ErrTransitionNotAllowed)
		require.ErrorIs(t, err, chatstate.ErrChatArchived)
		require.NotErrorIs(t, err, chatstate.ErrNotFound, "the parent exists; the family is archived")
	})
}

// Spec: "A concurrent child creation therefore either commits first and is
// included in the family update, or waits for it and fails if the root is
// now archived." On Postgres this is FOR SHARE against FOR UPDATE on the
// root row; on SQLite the single writer.
func TestFamilyArchiveRacesChildCreate(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		var childFirst, archiveFirst int
		for range 20 {
			root := f.create(t, "")
			sibling := rlCreateChild(t, f, root, "")
			childID := uuid.New()
			start := make(chan struct{})
			var wg sync.WaitGroup
			var createErr, archiveErr error
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				createErr = f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
					_, err := tx.Create(rlChildParams(f, childID, root, ""))
					return err
				})
			}()
			go func() {
				defer wg.Done()
				<-start
				archiveErr = f.m.Do(f.ctx, func(tx *chatstate.Tx) error { _, err := tx.SetArchivedFamily(root, true); return err })
			}()
			close(start)
			wg.Wait()

			require.NoError(t, archiveErr)
			require.Equal(t, chatstate.StateXW, f.snap(t, root).State)
			require.Equal(t, chatstate.StateXW, f.snap(t, sibling).State)
			child := f.snap(t, childID)
			if createErr == nil {
				childFirst++
				require.True(t, child.Exists)
				require.Equal(t, chatstate.StateXW, child.State, "a child created first must be archived with its family")
			} else {
				archiveFirst++
				require.ErrorIs(t, createErr, chatstate.ErrTransitionNotAllowed)
				require.False(t, child.Exists, "a refused child must not exist")
			}
			for _, c := range rlDescendants(t, f, root) {
				require.True(t, c.Archived, "unarchived chat %s in an archived family", c.ID)
			}
		}
		t.Logf("child committed first %d times, archive first %d times", childFirst, archiveFirst)
	})
}

// --- 8. bundles ---

// Spec, "Transitions": a transaction bumps snapshot_version once, however
// many transitions it applies, and notifications follow the commit.
func TestRuleBundle(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)

		t.Run("several transitions bump once and notify once", func(t *testing.T) {
			id := f.seed(t, chatstate.StateR0)
			before := f.snap(t, id)
			f.pub.take()
			var states []chatstate.State
			f.do(t, func(tx *chatstate.Tx) error {
				res, err := tx.SendMessage(id, f.input("next"), chatstate.BusyQueue)
				if err != nil {
					return err
				}
				ir, err := tx.Interrupt(id)
				if err != nil {
					return err
				}
				fin, err := tx.FinishInterruption(id, assistantStep("partial").Messages)
				states = []chatstate.State{res.State, ir.State, fin.State}
				return err
			})
			require.Equal(t, []chatstate.State{chatstate.StateR1, chatstate.StateI1, chatstate.StateR0}, states)
			after := f.snap(t, id)
			require.Equal(t, chatstate.StateR0, after.State)
			require.Equal(t, before.Chat.SnapshotVersion+1, after.Chat.SnapshotVersion)
			require.Equal(t, after.Chat.SnapshotVersion, after.Chat.HistoryVersion)
			require.Equal(t, after.Chat.SnapshotVersion, after.Chat.QueueVersion)
			for _, m := range after.Messages[len(before.Messages):] {
				require.Equal(t, after.Chat.SnapshotVersion, m.Revision)
			}
			updates, ownership := rlNotices(t, f)
			require.Empty(t, ownership, "the chat is owned")
			require.Equal(t, map[uuid.UUID][]chatstate.UpdatePayload{id: {rlWantPayload(after.Chat)}}, updates)
		})

		t.Run("a failure on the second transition rolls back the first", func(t *testing.T) {
			id := f.seed(t, chatstate.StateR0)
			err := rlRejects(t, f, func(tx *chatstate.Tx) error {
				if _, err := tx.SendMessage(id, f.input("next"), chatstate.BusyQueue); err != nil {
					return err
				}
				_, err := tx.CompleteRequiresAction(id, nil, uuid.NullUUID{})
				return err
			}, id)
			require.ErrorIs(t, err, chatstate.ErrTransitionNotAllowed)
		})

		t.Run("a failure on another chat rolls back both", func(t *testing.T) {
			a := f.seed(t, chatstate.StateR0)
			b := f.seed(t, chatstate.StateW)
			err := rlRejects(t, f, func(tx *chatstate.Tx) error {
				if _, err := tx.FinishTurn(a); err != nil {
					return err
				}
				_, err := tx.FinishTurn(b)
				return err
			}, a, b)
			require.ErrorIs(t, err, chatstate.ErrTransitionNotAllowed)
		})
	})
}

// --- 9. notifications ---

// Spec, "Pubsub": chat:update carries the committed row; chat:ownership
// announces chats left runnable and unowned, and (chatd's addition) chats
// that gave up a slot of the concurrent agent limiter, marked slot_freed.
func TestRuleNotifications(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		var id uuid.UUID

		// expect checks what the last bundle published: one chat:update with
		// the committed row, and chat:ownership only when announced.
		expect := func(t *testing.T, announced, freed bool) {
			t.Helper()
			row := f.snap(t, id).Chat
			updates, ownership := rlNotices(t, f)
			require.Equal(t, map[uuid.UUID][]chatstate.UpdatePayload{id: {rlWantPayload(row)}}, updates)
			if !announced && !freed {
				require.Empty(t, ownership)
				return
			}
			want := map[string]any{"chat_id": id.String(), "snapshot_version": float64(row.SnapshotVersion)}
			if freed {
				want["slot_freed"] = true
			}
			require.Equal(t, []map[string]any{want}, ownership)
		}
		worker2 := uuid.New()
		// announced: left runnable and unowned; freed: gave up a slot.
		steps := []struct {
			name             string
			apply            func(tx *chatstate.Tx) error
			announced, freed bool
		}{
			{"Create with content (unowned R0)", func(tx *chatstate.Tx) error {
				res, err := tx.Create(chatstate.CreateParams{OwnerID: f.user.ID, Title: "n", Input: f.input("hello")})
				id = res.Chat.ID
				return err
			}, true, false},
			{"Acquire", func(tx *chatstate.Tx) error {
				_, err := tx.Acquire(id, f.worker, uuid.New())
				return err
			}, false, false},
			{"RecordGenerationAttempt", func(tx *chatstate.Tx) error {
				_, err := tx.RecordGenerationAttempt(id)
				return err
			}, false, false},
			{"RecordRetryState", func(tx *chatstate.Tx) error {
				_, err := tx.RecordRetryState(id, sdk.ChatRetry{Attempt: 1, DelayMS: 500, Error: "overloaded", Kind: sdk.ChatErrorOverloaded})
				return err
			}, false, false},
			{"SendMessage(queue)", func(tx *chatstate.Tx) error {
				_, err := tx.SendMessage(id, f.input("queued"), chatstate.BusyQueue)
				return err
			}, false, false},
			{"CommitStep", func(tx *chatstate.Tx) error {
				_, err := tx.CommitStep(id, assistantStep("answer"))
				return err
			}, false, false},
			{"Abandon a running chat", func(tx *chatstate.Tx) error {
				_, err := tx.Abandon(id)
				return err
			}, true, true},
			{"Acquire by another worker", func(tx *chatstate.Tx) error {
				_, err := tx.Acquire(id, worker2, uuid.New())
				return err
			}, false, false},
			{"FinishTurn promoting", func(tx *chatstate.Tx) error { return rlFinishTurnStep(tx, id) }, false, false},
			{"CommitStep with a dynamic call", func(tx *chatstate.Tx) error {
				_, err := tx.CommitStep(id, rlCallsStep("c1"))
				return err
			}, false, false},
			{"EnterRequiresAction", func(tx *chatstate.Tx) error {
				_, err := tx.EnterRequiresAction(id)
				return err
			}, false, true},
			{"Abandon a chat waiting for action", func(tx *chatstate.Tx) error {
				_, err := tx.Abandon(id)
				return err
			}, true, false},
			{"CancelRequiresAction (unowned)", func(tx *chatstate.Tx) error { return rlCancelAction(tx, id) }, true, false},
			{"Acquire again", func(tx *chatstate.Tx) error {
				_, err := tx.Acquire(id, f.worker, uuid.New())
				return err
			}, false, false},
			{"FinishTurn to W", func(tx *chatstate.Tx) error { return rlFinishTurnStep(tx, id) }, false, false},
			{"Abandon an idle chat", func(tx *chatstate.Tx) error {
				_, err := tx.Abandon(id)
				return err
			}, false, true},
			{"SetArchived(true)", func(tx *chatstate.Tx) error { return rlArchiveStep(true)(tx, id) }, false, false},
			{"SetArchived(false)", func(tx *chatstate.Tx) error { return rlArchiveStep(false)(tx, id) }, false, false},
			{"SendMessage to an unowned idle chat", func(tx *chatstate.Tx) error {
				_, err := tx.SendMessage(id, f.input("again"), chatstate.BusyQueue)
				return err
			}, true, false},
			{"Create without content (W)", func(tx *chatstate.Tx) error {
				res, err := tx.Create(chatstate.CreateParams{OwnerID: f.user.ID, Title: "idle"})
				id = res.Chat.ID
				return err
			}, false, false},
		}
		for _, step := range steps {
			t.Run(step.name, func(t *testing.T) {
				f.pub.take()
				f.do(t, step.apply)
				expect(t, step.announced, step.freed)
			})
		}

		t.Run("a rolled-back bundle publishes nothing", func(t *testing.T) {
			other := f.create(t, "x")
			rlRejects(t, f, func(tx *chatstate.Tx) error {
				if _, err := tx.SendMessage(other, f.input("y"), chatstate.BusyQueue); err != nil {
					return err
				}
				_, err := tx.ClearContext(id, uuid.NullUUID{}) // id is empty: nothing to clear
				return err
			}, other, id)
		})
	})
}

// Spec, "Notification emission rules": a chat counts as unowned for
// chat:ownership when "there is no fresh heartbeat row for the current
// (chat_id, runner_id)"; the acquisition loop treats heartbeats older than
// 30 seconds as expired.
func TestRuleOwnershipNotifiedForStaleHeartbeat(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		id := f.seed(t, chatstate.StateR0) // heartbeat written at Acquire
		f.advance(time.Minute)
		dbtest.AgeLeases(t, f.s, time.Minute) // Postgres judges by its own clock
		f.pub.take()
		rlSend(t, f, id, "anyone there?", chatstate.BusyQueue)
		_, ownership := rlNotices(t, f)
		require.Len(t, ownership, 1, "a runnable chat whose lease expired must be announced to workers")
	})
}

// --- 10. queue limit ---

func TestRuleQueueLimit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		for _, tc := range []struct {
			name  string
			build func(t testing.TB) uuid.UUID
			busy  chatstate.BusyBehavior
		}{
			{"R0 queue", func(t testing.TB) uuid.UUID { return f.seed(t, chatstate.StateR0) }, chatstate.BusyQueue},
			{"R0 interrupt", func(t testing.TB) uuid.UUID { return f.seed(t, chatstate.StateR0) }, chatstate.BusyInterrupt},
			{"A0 queue", func(t testing.TB) uuid.UUID { return rlPending(t, f, 0, "c1") }, chatstate.BusyQueue},
		} {
			t.Run(tc.name, func(t *testing.T) {
				id := tc.build(t)
				for i := range 5 {
					rlSend(t, f, id, "queued "+string(rune('a'+i)), chatstate.BusyQueue)
				}
				require.Len(t, f.snap(t, id).Queue, 5)
				err := rlRejects(t, f, func(tx *chatstate.Tx) error {
					_, err := tx.SendMessage(id, f.input("sixth"), tc.busy)
					return err
				}, id)
				require.ErrorIs(t, err, chatstate.ErrQueueFull)
			})
		}
	})
}

// --- 11. invalid states ---

// Spec, "Invalid states".
func TestRuleReconcileInvalidState(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)

		requireReconciled := func(t *testing.T, id uuid.UUID, want chatstate.State) snapshot {
			t.Helper()
			before := f.snap(t, id)
			require.Equal(t, chatstate.StateInvalid, before.State)
			var to chatstate.State
			rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
				res, err := tx.ReconcileInvalidState(id)
				to = res.State
				return err
			})
			require.Equal(t, want, to)
			s := f.snap(t, id)
			require.Equal(t, want, s.State)
			require.False(t, s.Chat.Archived)
			require.Equal(t, store.ChatStatusError, s.Chat.Status)
			require.Equal(t, sdk.ChatErrorInvalidState, rlLastError(t, s.Chat).Kind)
			require.NotEmpty(t, rlLastError(t, s.Chat).Message)
			require.Nil(t, s.Chat.RequiresActionDeadlineAt)
			require.Equal(t, before.Chat.SnapshotVersion+1, s.Chat.SnapshotVersion)
			require.Equal(t, before.Queue, s.Queue)
			return s
		}

		t.Run("lands E0", func(t *testing.T) {
			requireReconciled(t, f.seed(t, chatstate.StateInvalid), chatstate.StateE0)
		})

		t.Run("lands E1 with a queue", func(t *testing.T) {
			id := f.seed(t, chatstate.StateInvalid)
			rlQueueInsert(t, f, id, "left over")
			requireReconciled(t, id, chatstate.StateE1)
		})

		t.Run("cancels pending calls and clears the deadline", func(t *testing.T) {
			id := rlPending(t, f, 0, "c1")
			rlPatch(t, f, id, store.ChatPatch{Archived: store.Some(true)})
			require.NotNil(t, f.snap(t, id).Chat.RequiresActionDeadlineAt)
			s := requireReconciled(t, id, chatstate.StateE0)
			rlRequireCancelled(t, s, "c1")
		})

		id := f.seed(t, chatstate.StateInvalid)
		rlQueueInsert(t, f, id, "left over")
		qid := f.snap(t, id).Queue[0].ID
		first := rlFirstUser(t, f.snap(t, id)).ID
		others := map[string]rlAction{
			"SendMessage(queue)":     rlSendAction(f, chatstate.BusyQueue),
			"SendMessage(interrupt)": rlSendAction(f, chatstate.BusyInterrupt),
			"EditMessage": func(tx *chatstate.Tx, id uuid.UUID) error {
				_, err := tx.EditMessage(id, first, f.input("edited"))
				return err
			},
			"DeleteQueuedMessage": func(tx *chatstate.Tx, id uuid.UUID) error {
				_, err := tx.DeleteQueuedMessage(id, qid)
				return err
			},
			"PromoteQueuedMessage": func(tx *chatstate.Tx, id uuid.UUID) error {
				_, err := tx.PromoteQueuedMessage(id, qid)
				return err
			},
			"Interrupt":              rlInterrupt,
			"CompleteRequiresAction": rlComplete(nil),
			"RequestCompaction":      rlRequestCompactionStep,
			"ClearContext":           rlClearStep,
			"SetArchived(true)":      rlArchiveStep(true),
			"SetArchived(false)":     rlArchiveStep(false),
			"SetArchivedFamily(false)": func(tx *chatstate.Tx, id uuid.UUID) error {
				_, err := tx.SetArchivedFamily(id, false)
				return err
			},
			"CommitStep": func(tx *chatstate.Tx, id uuid.UUID) error {
				_, err := tx.CommitStep(id, assistantStep("x"))
				return err
			},
			"EnterRequiresAction": func(tx *chatstate.Tx, id uuid.UUID) error {
				_, err := tx.EnterRequiresAction(id)
				return err
			},
			"FinishInterruption": func(tx *chatstate.Tx, id uuid.UUID) error {
				_, err := tx.FinishInterruption(id, nil)
				return err
			},
			"RecordGenerationAttempt": func(tx *chatstate.Tx, id uuid.UUID) error {
				_, err := tx.RecordGenerationAttempt(id)
				return err
			},
			"RecordRetryState": func(tx *chatstate.Tx, id uuid.UUID) error {
				_, err := tx.RecordRetryState(id, sdk.ChatRetry{Attempt: 1})
				return err
			},
			"FinishTurn":           rlFinishTurnStep,
			"FinishError":          rlFinishErrorStep,
			"CancelRequiresAction": rlCancelAction,
		}
		for name, apply := range others {
			t.Run(name+" is refused", func(t *testing.T) {
				err := rlRejects(t, f, func(tx *chatstate.Tx) error { return apply(tx, id) }, id)
				require.ErrorIs(t, err, chatstate.ErrInvalidState)
				require.ErrorIs(t, err, chatstate.ErrTransitionNotAllowed)
			})
		}
	})
}

// --- 12. retry state and the action deadline ---

// Spec, "Retry state version" and "EnterRequiresAction".
func TestRuleRetryStateAndDeadline(t *testing.T) {
	t.Parallel()
	retry := sdk.ChatRetry{Attempt: 2, DelayMS: 1500, Error: "overloaded", Kind: sdk.ChatErrorOverloaded}
	record := func(tx *chatstate.Tx, id uuid.UUID) error {
		_, err := tx.RecordRetryState(id, retry)
		return err
	}
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)

		t.Run("RecordGenerationAttempt clears the retry state", func(t *testing.T) {
			id := f.seed(t, chatstate.StateR0)
			rlApply(t, f, id, record)
			s := f.snap(t, id).Chat
			require.NotNil(t, s.RetryState)
			var got sdk.ChatRetry
			require.NoError(t, json.Unmarshal(s.RetryState, &got))
			require.Equal(t, retry.Error, got.Error)
			require.Equal(t, s.SnapshotVersion, s.RetryStateVersion)

			rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
				_, err := tx.RecordGenerationAttempt(id)
				return err
			})
			after := f.snap(t, id).Chat
			require.Nil(t, after.RetryState)
			require.Equal(t, s.GenerationAttempt+1, after.GenerationAttempt)
			require.Equal(t, s.SnapshotVersion+1, after.SnapshotVersion)
			require.Equal(t, after.SnapshotVersion, after.RetryStateVersion, "retry_state_version follows the clear")

			rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
				_, err := tx.RecordGenerationAttempt(id)
				return err
			})
			again := f.snap(t, id).Chat
			require.Equal(t, after.RetryStateVersion, again.RetryStateVersion, "no retry state to clear, no version move")
		})

		for _, tc := range []struct {
			name  string
			apply rlAction
		}{
			{"Interrupt", rlInterrupt},
			{"FinishError", rlFinishErrorStep},
			{"EnterRequiresAction", func(tx *chatstate.Tx, id uuid.UUID) error {
				if _, err := tx.CommitStep(id, rlCallsStep("c1")); err != nil {
					return err
				}
				_, err := tx.EnterRequiresAction(id)
				return err
			}},
		} {
			t.Run(tc.name+" drops a pending retry", func(t *testing.T) {
				id := f.seed(t, chatstate.StateR0)
				rlApply(t, f, id, record)
				rlApply(t, f, id, tc.apply)
				c := f.snap(t, id).Chat
				require.Nil(t, c.RetryState)
				require.Equal(t, c.SnapshotVersion, c.RetryStateVersion)
			})
		}

		t.Run("EnterRequiresAction sets the deadline from the clock", func(t *testing.T) {
			id := f.seed(t, chatstate.StateR0)
			rlCommit(t, f, id, rlCallsStep("c1"))
			f.advance(90 * time.Second)
			rlApply(t, f, id, func(tx *chatstate.Tx, id uuid.UUID) error {
				_, err := tx.EnterRequiresAction(id)
				return err
			})
			c := f.snap(t, id).Chat
			require.Equal(t, 5*time.Minute, chatstate.DefaultRequiresActionTimeout)
			want := f.clock().Add(5 * time.Minute)
			require.NotNil(t, c.RequiresActionDeadlineAt)
			require.True(t, c.RequiresActionDeadlineAt.Equal(want), "deadline %v, want %v", c.RequiresActionDeadlineAt, want)
		})
	})
}
