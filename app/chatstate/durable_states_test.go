package chatstate_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// durable is a chat whose turn belongs to a durable request, and the
// server-side tool calls of that turn.
type durable struct {
	chat, request uuid.UUID
	calls         int
}

// durableChat creates a running chat (R0) whose first message is a
// durable request's, admitted in the same bundle as the API does.
func (f *fixture) durableChat(t *testing.T) *durable {
	t.Helper()
	d := &durable{chat: uuid.New(), request: uuid.New()}
	f.do(t, func(tx *chatstate.Tx) error {
		in := f.input("durable hello")
		in.RequestID = uuid.NullUUID{UUID: d.request, Valid: true}
		if _, err := tx.Create(chatstate.CreateParams{ID: d.chat, OwnerID: f.user.ID, Title: "t", Input: in}); err != nil {
			return err
		}
		ms, err := tx.Reader().MessageList(f.ctx, d.chat, store.MessageListParams{})
		if err != nil {
			return err
		}
		var msgID *int64
		for _, m := range ms {
			if m.Role == store.RoleUser {
				msgID = &m.ID
			}
		}
		_, err = tx.AdmitRequest(chatstate.Claim{
			RequestID: d.request, CallerID: f.user.ID, ContentSHA256: "00", Kind: "create_chat", ChatID: d.chat,
			MessageID: msgID, Response: json.RawMessage(`{}`),
		})
		return err
	})
	f.acquire(t, d.chat)
	return d
}

// toolCall commits an assistant step calling a new tool and journals the
// call as started; it returns the call id.
func (f *fixture) toolCall(t *testing.T, d *durable, effect string) string {
	t.Helper()
	d.calls++
	id := fmt.Sprintf("call-%d", d.calls)
	f.do(t, func(tx *chatstate.Tx) error {
		if _, err := tx.CommitStep(d.chat, toolCallStep(id, "hook")); err != nil {
			return err
		}
		decision, _, err := tx.JournalStart(d.chat, chatstate.JournalCall{
			ToolCallID: id, ToolName: "hook", Effect: effect, Args: json.RawMessage(`{}`),
			RequestID: uuid.NullUUID{UUID: d.request, Valid: true},
		})
		if err == nil && decision != chatstate.JournalRun {
			err = fmt.Errorf("a new call was decided %s", decision)
		}
		return err
	})
	return id
}

// answerReview moves a chat in review on the way a person can without a
// reconcile (an interrupt: its calls get "outcome unknown, under review"
// results, and their entries and request stay unresolved), so its turn
// goes on. Submitting results for them is refused.
func (f *fixture) answerReview(t *testing.T, d *durable) {
	t.Helper()
	f.do(t, func(tx *chatstate.Tx) error {
		calls, err := tx.OutstandingToolCalls(d.chat)
		if err != nil {
			return err
		}
		var results []sdk.ToolResult
		for _, c := range calls {
			results = append(results, sdk.ToolResult{ToolCallID: c.ID, Output: json.RawMessage(`"answered"`)})
		}
		_, err = tx.CompleteRequiresAction(d.chat, results, uuid.NullUUID{UUID: f.user.ID, Valid: true})
		if !errors.Is(err, chatstate.ErrToolCallUnderReview) {
			return fmt.Errorf("results for calls under review: got %v, want ErrToolCallUnderReview", err)
		}
		return nil
	})
	f.do(t, func(tx *chatstate.Tx) error {
		_, err := tx.Interrupt(d.chat)
		return err
	})
}

func (f *fixture) markUnresolved(d *durable, calls ...string) error {
	return f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
		_, err := tx.MarkUnresolved(d.chat, uuid.NullUUID{UUID: d.request, Valid: true}, calls)
		return err
	})
}

func (f *fixture) reconcile(d *durable) error {
	return f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
		_, err := tx.ReconcileRequest(d.request, chatstate.Reconciliation{
			Review: json.RawMessage(`{"assessment":"ok"}`), Result: json.RawMessage(`{"reviewed":true}`),
		})
		return err
	})
}

func (f *fixture) finishTurn(d *durable) error {
	return f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
		_, err := tx.FinishTurn(d.chat)
		return err
	})
}

func (f *fixture) invocation(t *testing.T, id uuid.UUID) (store.Invocation, bool) {
	t.Helper()
	var inv store.Invocation
	err := f.s.ReadTx(f.ctx, func(tx store.Reader) error {
		var err error
		inv, err = tx.InvocationGet(f.ctx, id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return store.Invocation{}, false
	}
	require.NoError(t, err)
	return inv, true
}

func (f *fixture) journal(t *testing.T, chatID uuid.UUID, callID string) (store.JournalEntry, bool) {
	t.Helper()
	var e store.JournalEntry
	err := f.s.ReadTx(f.ctx, func(tx store.Reader) error {
		var err error
		e, err = tx.JournalGet(f.ctx, chatID, callID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return store.JournalEntry{}, false
	}
	require.NoError(t, err)
	return e, true
}

// seedRequest brings a durable request into st through real methods.
// RequestNone is a chat whose request id nobody claimed.
func (f *fixture) seedRequest(t *testing.T, st store.InvocationState) *durable {
	t.Helper()
	switch st {
	case chatstate.RequestNone:
		return &durable{chat: f.create(t, ""), request: uuid.New()}
	case store.InvocationAdmitted:
		return f.durableChat(t)
	case store.InvocationCompleted:
		d := f.durableChat(t)
		require.NoError(t, f.finishTurn(d))
		return d
	case store.InvocationUnresolved:
		d := f.durableChat(t)
		require.NoError(t, f.markUnresolved(d, f.toolCall(t, d, store.EffectEffectful)))
		return d
	case store.InvocationReconciled:
		d := f.seedRequest(t, store.InvocationUnresolved)
		require.NoError(t, f.reconcile(d))
		return d
	}
	t.Fatalf("seedRequest: unknown state %q", st)
	return nil
}

type requestPair struct{ from, to store.InvocationState }

func (p requestPair) String() string {
	from := string(p.from)
	if p.from == chatstate.RequestNone {
		from = "none"
	}
	return from + "->" + string(p.to)
}

// requestCases are the request changes the design allows, each with why;
// the table must hold exactly these.
var requestCases = map[requestPair]string{
	{chatstate.RequestNone, store.InvocationAdmitted}:        "a claim with a message to run",
	{chatstate.RequestNone, store.InvocationCompleted}:       "a claim with nothing to run",
	{store.InvocationAdmitted, store.InvocationCompleted}:    "its turn ends",
	{store.InvocationAdmitted, store.InvocationUnresolved}:   "an effectful call is in doubt",
	{store.InvocationUnresolved, store.InvocationUnresolved}: "another call of the answered turn is in doubt",
	{store.InvocationUnresolved, store.InvocationReconciled}: "an operator reviews it",
	{store.InvocationReconciled, store.InvocationUnresolved}: "the reviewed turn goes on into another doubt",
}

// requestApply attempts to move a seeded request to a state through the
// public method that does it.
var requestApply = map[store.InvocationState]func(t *testing.T, f *fixture, d *durable) error{
	store.InvocationAdmitted: func(t *testing.T, f *fixture, d *durable) error {
		return f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			msg := int64(1)
			_, err := tx.AdmitRequest(chatstate.Claim{
				RequestID: d.request, CallerID: f.user.ID, ContentSHA256: "00", Kind: "send_message", ChatID: d.chat, MessageID: &msg,
			})
			return err
		})
	},
	store.InvocationCompleted: func(t *testing.T, f *fixture, d *durable) error {
		inv, ok := f.invocation(t, d.request)
		if !ok {
			// Nothing to run: a claim is completed at admission.
			return f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
				_, err := tx.AdmitRequest(chatstate.Claim{
					RequestID: d.request, CallerID: f.user.ID, ContentSHA256: "00", Kind: "create_chat", ChatID: d.chat,
				})
				return err
			})
		}
		if inv.State == store.InvocationUnresolved {
			f.answerReview(t, d)
		}
		return f.finishTurn(d)
	},
	store.InvocationUnresolved: func(t *testing.T, f *fixture, d *durable) error {
		if _, st, err := peek(f, d.chat); err == nil && (st == chatstate.StateA0 || st == chatstate.StateA1) {
			f.answerReview(t, d)
		}
		var calls []string
		if _, st, err := peek(f, d.chat); err == nil && st.Runnable() {
			calls = append(calls, f.toolCall(t, d, store.EffectEffectful))
		}
		return f.markUnresolved(d, calls...)
	},
	store.InvocationReconciled: func(t *testing.T, f *fixture, d *durable) error {
		return f.reconcile(d)
	},
}

func peek(f *fixture, id uuid.UUID) (store.Chat, chatstate.State, error) {
	var (
		c  store.Chat
		st chatstate.State
	)
	err := f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
		var err error
		c, st, err = tx.Peek(id)
		return err
	})
	return c, st, err
}

// TestRequestTransitions enumerates the durable request table through the
// public methods: every allowed change has a case that lands there, and
// every other pair leaves the claim (and the chat) as it was and publishes
// nothing. A refusal is a RequestTransitionError that unwraps to
// ErrTransitionNotAllowed; a second claim of an id is store.ErrConflict;
// a turn's end settles only a request still admitted, and a missing claim
// is not invented.
func TestRequestTransitions(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		table := chatstate.RequestTransitions()
		froms := append([]store.InvocationState{chatstate.RequestNone}, store.AllInvocationStates...)
		require.Len(t, table, len(froms), "the table has a row per state")
		for from, tos := range table {
			for _, to := range tos {
				require.Contains(t, requestCases, requestPair{from, to}, "no case for the allowed change %s", requestPair{from, to})
			}
		}
		for _, from := range froms {
			for _, to := range store.AllInvocationStates {
				p := requestPair{from, to}
				allowed := chatstate.RequestAllowed(from, to)
				require.Equal(t, allowed, contains(table[from], to), "RequestAllowed agrees with the table for %s", p)
				_, want := requestCases[p]
				require.Equal(t, want, allowed, "%s: the table disagrees with the cases", p)
				t.Run(p.String(), func(t *testing.T) {
					d := f.seedRequest(t, from)
					before, existed := f.invocation(t, d.request)
					if existed {
						require.Equal(t, from, before.State, "seed")
					}
					f.pub.take()
					chatBefore := f.snap(t, d.chat)
					err := requestApply[to](t, f, d)
					after, exists := f.invocation(t, d.request)
					if allowed {
						require.NoError(t, err)
						require.True(t, exists)
						require.Equal(t, to, after.State)
						require.Equal(t, f.clock(), after.UpdatedAt)
						if to == store.InvocationCompleted || to == store.InvocationReconciled {
							require.NotNil(t, after.CompletedAt)
						}
						return
					}
					switch {
					case from == chatstate.RequestNone:
						require.False(t, exists, "%s: no claim is invented", p)
					case to == store.InvocationAdmitted:
						require.ErrorIs(t, err, store.ErrConflict, "a request id is claimed once")
					case to == store.InvocationCompleted:
						// The turn may end or not; it settles only an admitted request.
					default:
						var te *chatstate.RequestTransitionError
						require.ErrorAs(t, err, &te)
						require.ErrorIs(t, err, chatstate.ErrTransitionNotAllowed)
						require.Equal(t, d.request, te.RequestID)
						require.Equal(t, from, te.From)
						require.Equal(t, to, te.To)
						require.Empty(t, f.pub.take(), "a refused change publishes nothing")
						require.Equal(t, chatBefore, f.snap(t, d.chat), "a refused change leaves the chat")
					}
					if existed {
						require.Equal(t, before, after, "%s changed the claim", p)
					}
				})
			}
		}
	})
}

// TestReconcileRefusesARequestThatIsNotUnresolved: the operator's error
// names the state the request is in.
func TestReconcileRefusesARequestThatIsNotUnresolved(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		d := f.seedRequest(t, store.InvocationAdmitted)
		err := f.reconcile(d)
		require.ErrorIs(t, err, chatstate.ErrTransitionNotAllowed)
		require.EqualError(t, err, fmt.Sprintf("request %s is admitted; only unresolved requests are reconciled", d.request))
		err = f.reconcile(&durable{chat: d.chat, request: uuid.New()})
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// seedJournal brings a journal entry into st through real methods and
// returns its chat and call; JournalNone is a call with no entry.
func (f *fixture) seedJournal(t *testing.T, st store.JournalState, effect string) (*durable, string) {
	t.Helper()
	d := f.durableChat(t)
	if st == chatstate.JournalNone {
		return d, "call-none"
	}
	call := f.toolCall(t, d, effect)
	switch st {
	case store.JournalStarted:
	case store.JournalCompleted:
		f.do(t, func(tx *chatstate.Tx) error {
			return tx.JournalComplete(d.chat, call, json.RawMessage(`{"ok":true}`), false)
		})
	case store.JournalUnresolved:
		require.NoError(t, f.markUnresolved(d, call))
	case store.JournalReconciled:
		require.NoError(t, f.markUnresolved(d, call))
		require.NoError(t, f.reconcile(d))
	default:
		t.Fatalf("seedJournal: unknown state %q", st)
	}
	return d, call
}

// journalCases are the journal changes the design allows, each with why;
// the table must hold exactly these.
var journalCases = map[[2]store.JournalState]string{
	{chatstate.JournalNone, store.JournalStarted}:      "a call is recorded before it runs",
	{store.JournalStarted, store.JournalStarted}:       "a pure or idempotent call runs again",
	{store.JournalStarted, store.JournalCompleted}:     "its result is committed",
	{store.JournalStarted, store.JournalUnresolved}:    "an effectful call is in doubt",
	{store.JournalUnresolved, store.JournalUnresolved}: "it is still in doubt",
	{store.JournalUnresolved, store.JournalReconciled}: "an operator reviews it",
}

// journalApply attempts to move a call's entry to a state through the
// public method that does it.
var journalApply = map[store.JournalState]func(t *testing.T, f *fixture, d *durable, call string) error{
	store.JournalStarted: func(t *testing.T, f *fixture, d *durable, call string) error {
		return f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			_, _, err := tx.JournalStart(d.chat, chatstate.JournalCall{
				ToolCallID: call, ToolName: "hook", Effect: store.EffectPure, Args: json.RawMessage(`{}`),
				RequestID: uuid.NullUUID{UUID: d.request, Valid: true},
			})
			return err
		})
	},
	store.JournalCompleted: func(t *testing.T, f *fixture, d *durable, call string) error {
		return f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
			return tx.JournalComplete(d.chat, call, json.RawMessage(`{"ok":true}`), false)
		})
	},
	store.JournalUnresolved: func(t *testing.T, f *fixture, d *durable, call string) error {
		if _, st, err := peek(f, d.chat); err == nil && (st == chatstate.StateA0 || st == chatstate.StateA1) {
			f.answerReview(t, d)
		}
		return f.markUnresolved(d, call)
	},
	store.JournalReconciled: func(t *testing.T, f *fixture, d *durable, call string) error {
		// Only an unresolved request is reviewed: put the request in review
		// when the entry's state did not, to see which entries a review settles.
		if inv, _ := f.invocation(t, d.request); inv.State != store.InvocationUnresolved {
			if _, st, err := peek(f, d.chat); err == nil && (st == chatstate.StateA0 || st == chatstate.StateA1) {
				f.answerReview(t, d)
			}
			if err := f.markUnresolved(d); err != nil {
				return err
			}
		}
		return f.reconcile(d)
	},
}

// TestJournalTransitions enumerates the tool-journal table through the
// public methods, the way TestRequestTransitions does for requests. A
// refusal is a JournalTransitionError; JournalStart never changes an entry
// it decides to reuse or to leave in doubt, and a review only settles
// unresolved entries.
func TestJournalTransitions(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		table := chatstate.JournalTransitions()
		froms := append([]store.JournalState{chatstate.JournalNone}, store.AllJournalStates...)
		require.Len(t, table, len(froms), "the table has a row per state")
		for from, tos := range table {
			for _, to := range tos {
				require.Contains(t, journalCases, [2]store.JournalState{from, to}, "no case for the allowed change %s -> %s", from, to)
			}
		}
		for _, from := range froms {
			for _, to := range store.AllJournalStates {
				allowed := chatstate.JournalAllowed(from, to)
				require.Equal(t, allowed, contains(table[from], to), "JournalAllowed agrees with the table")
				_, want := journalCases[[2]store.JournalState{from, to}]
				require.Equal(t, want, allowed, "%s -> %s: the table disagrees with the cases", from, to)
				name := string(from)
				if from == chatstate.JournalNone {
					name = "none"
				}
				t.Run(name+"->"+string(to), func(t *testing.T) {
					// Only a pure or idempotent call starts again.
					effect := store.EffectEffectful
					if to == store.JournalStarted {
						effect = store.EffectPure
					}
					d, call := f.seedJournal(t, from, effect)
					before, _ := f.journal(t, d.chat, call)
					f.pub.take()
					f.advance(time.Second)
					err := journalApply[to](t, f, d, call)
					after, exists := f.journal(t, d.chat, call)
					if allowed {
						require.NoError(t, err)
						require.True(t, exists)
						require.Equal(t, to, after.State)
						switch to {
						case store.JournalStarted:
							require.Equal(t, f.clock(), after.StartedAt)
							require.Equal(t, before.Attempts+1, after.Attempts, "one more attempt")
						case store.JournalCompleted, store.JournalReconciled:
							require.Equal(t, f.clock(), *after.CompletedAt)
							require.NotEmpty(t, after.Result)
						}
						return
					}
					if from == chatstate.JournalNone {
						require.False(t, exists, "no entry is invented")
						return
					}
					if err != nil {
						var te *chatstate.JournalTransitionError
						require.ErrorAs(t, err, &te)
						require.ErrorIs(t, err, chatstate.ErrTransitionNotAllowed)
						require.Equal(t, call, te.ToolCallID)
						require.Equal(t, from, te.From)
						require.Equal(t, to, te.To)
						require.Empty(t, f.pub.take(), "a refused change publishes nothing")
					}
					require.Equal(t, before, after, "the entry is unchanged")
				})
			}
		}
	})
}

// TestJournalStartDecides: what JournalStart answers for each state and
// effect class (the rule that a call runs at most as often as its effect
// class allows).
func TestJournalStartDecides(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		cases := []struct {
			state  store.JournalState
			effect string
			want   chatstate.JournalDecision
		}{
			{chatstate.JournalNone, store.EffectEffectful, chatstate.JournalRun},
			{store.JournalStarted, store.EffectPure, chatstate.JournalRun},
			{store.JournalStarted, store.EffectIdempotent, chatstate.JournalRun},
			{store.JournalStarted, store.EffectEffectful, chatstate.JournalInDoubt},
			{store.JournalCompleted, store.EffectEffectful, chatstate.JournalReuse},
			{store.JournalUnresolved, store.EffectPure, chatstate.JournalInDoubt},
			{store.JournalReconciled, store.EffectEffectful, chatstate.JournalReuse},
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s", c.state, c.effect), func(t *testing.T) {
				d, call := f.seedJournal(t, c.state, c.effect)
				var got chatstate.JournalDecision
				var entry store.JournalEntry
				f.do(t, func(tx *chatstate.Tx) error {
					var err error
					got, entry, err = tx.JournalStart(d.chat, chatstate.JournalCall{
						ToolCallID: call, ToolName: "hook", Effect: c.effect, Args: json.RawMessage(`{}`),
					})
					return err
				})
				require.Equal(t, c.want, got)
				require.Equal(t, call, entry.ToolCallID)
				if got == chatstate.JournalReuse {
					require.NotEmpty(t, entry.Result, "a reused call comes with its result")
				}
			})
		}
	})
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
