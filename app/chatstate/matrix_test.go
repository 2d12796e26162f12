package chatstate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/chatstate/chatstatetest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// TestMatrix applies every transition to a chat seeded in every state. A
// pair the diagram does not allow must be rejected without mutating the
// chat or publishing anything; an allowed (from, transition, to) triple
// must land where its case says, with the versions, queue, history and
// notifications the spec describes. Every allowed triple needs a case.
//
// The cases of one store share a fixture, and so its notification
// recorder, so they run one after another; the two stores run in parallel.
func TestMatrix(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		f := setup(t, newStore)
		matrix := chatstate.Transitions()
		for _, tr := range chatstate.AllTransitions {
			require.Contains(t, mxAppliers, tr, "no applier for %s", tr)
		}
		for x := range mxCases {
			require.Contains(t, matrix[x.From][x.Tr], x.To, "case %s is not an edge of the matrix", x)
		}

		// Subtests run one at a time, so these need no lock.
		var (
			covered          = map[mxTriple]bool{}
			planned, started int
		)
		run := func(t *testing.T, name string, fn func(t *testing.T)) {
			planned++
			t.Run(name, func(t *testing.T) {
				started++
				fn(t)
			})
		}
		t.Run("matrix", func(t *testing.T) {
			for _, from := range chatstate.AllStates {
				for _, tr := range chatstate.AllTransitions {
					outs, allowed := matrix[from][tr]
					if !allowed {
						run(t, fmt.Sprintf("%s/%s/rejected", from, tr), func(t *testing.T) {
							mxRejected(t, f, from, tr)
						})
						continue
					}
					for _, to := range outs {
						x := mxTriple{from, tr, to}
						c, ok := mxCases[x]
						if !ok {
							continue // reported by the coverage guard
						}
						run(t, fmt.Sprintf("%s/%s/%s", from, tr, to), func(t *testing.T) {
							var seed mxSeedFn
							if c.seed != nil {
								seed = mxBuild(*c.seed)
							}
							r := mxAttempt(t, f, from, tr, seed, c.apply)
							require.NoError(t, r.err)
							require.Contains(t, outs, r.after.State, "landed outside the matrix")
							require.Equal(t, to, r.after.State, "landing state")
							covered[x] = true
							r.common(t, to)
							c.check(t, r)
						})
						if from != chatstate.StateR0 && from != chatstate.StateR1 {
							continue
						}
						// The same triple on a turn started by RequestCompaction:
						// the one-shot marker is carried or cleared.
						run(t, fmt.Sprintf("%s/%s/%s/compaction-requested", from, tr, to), func(t *testing.T) {
							r := mxAttempt(t, f, from, tr, mxBuild(mxCompacting(from, c.seed)), c.apply)
							require.NoError(t, r.err)
							require.Equal(t, to, r.after.State, "landing state")
							r.common(t, to)
							c.check(t, r)
							r.compactionMarker(t)
						})
					}
				}
			}
		})

		t.Run("unowned", func(t *testing.T) {
			for _, c := range mxUnownedCases {
				t.Run(c.name, func(t *testing.T) {
					r := mxAttempt(t, f, c.from, c.tr, c.seed, nil)
					require.NoError(t, r.err)
					require.False(t, r.before.Chat.WorkerID.Valid, "seed must be unowned")
					require.Equal(t, c.to, r.after.State, "landing state")
					r.common(t, c.to)
					c.check(t, r)
				})
			}
		})

		// The same transitions on chats whose current turn has a tool call
		// running (the seed committed a call and nothing answered it): where
		// the turn ends, the call is answered in the same bundle, so the
		// invariant holds after each one.
		t.Run("tools-running", func(t *testing.T) {
			for _, from := range []chatstate.State{chatstate.StateR0, chatstate.StateR1, chatstate.StateI0, chatstate.StateI1} {
				for _, owned := range []bool{true, false} {
					for _, tr := range chatstate.AllTransitions {
						outs, allowed := matrix[from][tr]
						if !allowed {
							continue
						}
						var apply mxApplyFn
						for _, to := range outs {
							if c, ok := mxCases[mxTriple{from, tr, to}]; ok && c.apply != nil {
								apply = c.apply
								break
							}
						}
						name := fmt.Sprintf("%s/%s", from, tr)
						if !owned {
							name += "/unowned"
						}
						t.Run(name, func(t *testing.T) {
							sp := mxSpec{State: from, Pending: true, Unowned: !owned}
							r := mxAttempt(t, f, from, tr, mxBuild(sp), apply)
							require.NoError(t, r.err)
							require.NotEmpty(t, r.calls, "seed has a tool call running")
							if owned {
								// Unowned, a transition may finish at once (see mxUnownedCases).
								require.Contains(t, outs, r.after.State, "landed outside the matrix")
							}
							r.common(t, r.after.State)
						})
					}
				}
			}
		})

		t.Run("ownership", func(t *testing.T) {
			for _, tr := range []chatstate.Transition{chatstate.Acquire, chatstate.Abandon} {
				for _, st := range chatstate.AllStates {
					t.Run(fmt.Sprintf("%s/%s", st, tr), func(t *testing.T) {
						mxOwnership(t, f, st, tr, nil)
					})
				}
				// Ownership changes carry a pending compaction request
				// (spec: "Manual compaction").
				t.Run(fmt.Sprintf("R0/%s/compaction-requested", tr), func(t *testing.T) {
					mxOwnership(t, f, chatstate.StateR0, tr, mxBuild(mxCompacting(chatstate.StateR0, nil)))
				})
				t.Run(fmt.Sprintf("R0/%s/unowned", tr), func(t *testing.T) {
					mxOwnership(t, f, chatstate.StateR0, tr, mxBuild(mxSpec{State: chatstate.StateR0, Unowned: true}))
				})
			}
		})

		// Coverage guard: every allowed triple of the diagram has a case,
		// and, unless -run selected a subset, every case landed on it.
		var missing, unexercised []string
		for from, trs := range matrix {
			for tr, outs := range trs {
				for _, to := range outs {
					x := mxTriple{from, tr, to}
					if _, ok := mxCases[x]; !ok {
						missing = append(missing, x.String())
					} else if !covered[x] {
						unexercised = append(unexercised, x.String())
					}
				}
			}
		}
		sort.Strings(missing)
		sort.Strings(unexercised)
		require.Empty(t, missing, "allowed triples without a case")
		if planned > 0 && started == planned {
			require.Empty(t, unexercised, "allowed triples whose case did not land on them")
		} else {
			t.Logf("ran %d of %d matrix subtests: not checking that every case landed", started, planned)
		}
	})
}

// mxTriple is one edge of the execution state diagram.
type mxTriple struct {
	From chatstate.State
	Tr   chatstate.Transition
	To   chatstate.State
}

func (x mxTriple) String() string { return fmt.Sprintf("%s -> %s -> %s", x.From, x.Tr, x.To) }

// mxSeedFn brings a new chat into a state; nil means f.seed.
type mxSeedFn func(t *testing.T, f *fixture) uuid.UUID

// mxApplyFn applies one transition inside a bundle and returns its result.
type mxApplyFn func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error)

// mxCase is the expectation for one allowed triple.
type mxCase struct {
	seed  *mxSpec   // nil: f.seed(from)
	apply mxApplyFn // nil: mxAppliers[tr]
	check func(t *testing.T, r *mxRun)
}

// mxRun is one attempted transition: the chat around it and the inputs the
// applier chose.
type mxRun struct {
	f      *fixture
	id     uuid.UUID
	from   chatstate.State
	tr     chatstate.Transition
	before snapshot
	after  snapshot
	qid    int64    // queued message given to Delete (head) or Promote (tail)
	editID int64    // user message given to EditMessage (the last one)
	calls  []string // tool calls outstanding before the transition
	res    chatstate.Result
	err    error
	pubs   []published
}

// mxMissingID stands for a message or queued message that does not exist.
const mxMissingID = int64(1) << 40

// mxNew in an expected queue stands for the row the transition queued.
const mxNew = int64(0)

// Inputs the appliers send, so checks can recognise them.
var (
	mxRetry = sdk.ChatRetry{
		Attempt: 1, DelayMS: 1500, Error: "provider overloaded", Kind: sdk.ChatErrorOverloaded,
		RetryingAt: time.Date(2026, 3, 4, 5, 6, 9, 0, time.UTC),
	}
	mxChatError = sdk.ChatError{Message: "kaput", Kind: sdk.ChatErrorGeneric}
)

const mxToolOutput = `{"ok":true}`

var mxAppliers = map[chatstate.Transition]mxApplyFn{
	chatstate.Create: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		res, err := tx.Create(chatstate.CreateParams{
			ID: r.id, OwnerID: r.f.user.ID, Title: "t", SystemPrompt: "sys", Input: r.f.input("new"),
		})
		return res, err
	},
	chatstate.SetArchivedTrue: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.SetArchived(r.id, true)
	},
	chatstate.SetArchivedFalse: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.SetArchived(r.id, false)
	},
	chatstate.SendMessageQueue: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.SendMessage(r.id, r.f.input("new"), chatstate.BusyQueue)
	},
	chatstate.SendMessageInterrupt: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.SendMessage(r.id, r.f.input("new"), chatstate.BusyInterrupt)
	},
	chatstate.EditMessage: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.EditMessage(r.id, r.editID, r.f.input("edited"))
	},
	chatstate.DeleteQueuedMessage: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.DeleteQueuedMessage(r.id, r.qid)
	},
	chatstate.PromoteQueuedMessage: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.PromoteQueuedMessage(r.id, r.qid)
	},
	chatstate.Interrupt: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.Interrupt(r.id)
	},
	chatstate.CompleteRequiresAction: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		calls, err := tx.OutstandingToolCalls(r.id)
		if err != nil {
			return chatstate.Result{}, err
		}
		results := make([]sdk.ToolResult, 0, len(calls))
		for _, c := range calls {
			results = append(results, sdk.ToolResult{ToolCallID: c.ID, Output: json.RawMessage(mxToolOutput)})
		}
		return tx.CompleteRequiresAction(r.id, results, uuid.NullUUID{UUID: r.f.user.ID, Valid: true})
	},
	chatstate.RequestCompaction: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.RequestCompaction(r.id)
	},
	chatstate.ClearContext: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.ClearContext(r.id, uuid.NullUUID{UUID: r.f.user.ID, Valid: true})
	},
	chatstate.CommitStep: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.CommitStep(r.id, assistantStep("step"))
	},
	chatstate.EnterRequiresAction: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.EnterRequiresAction(r.id)
	},
	chatstate.EnterReview: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.EnterReview(r.id)
	},
	chatstate.EnterApproval: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		calls, err := tx.OutstandingToolCalls(r.id)
		if err != nil {
			return chatstate.Result{}, err
		}
		var ask []sdk.ToolApproval
		for _, c := range calls {
			ask = append(ask, sdk.ToolApproval{ToolCallID: c.ID, ToolName: c.Name, Server: "srv", Args: c.Args, Effect: store.EffectEffectful})
		}
		return tx.EnterApproval(r.id, ask)
	},
	chatstate.AnswerApproval: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return mxAnswer(tx, r, -1)
	},
	chatstate.FinishInterruption: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.FinishInterruption(r.id, assistantStep("partial").Messages)
	},
	chatstate.RecordGenerationAttempt: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.RecordGenerationAttempt(r.id)
	},
	chatstate.RecordRetryState: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.RecordRetryState(r.id, mxRetry)
	},
	chatstate.FinishTurn: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.FinishTurn(r.id)
	},
	chatstate.FinishError: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.FinishError(r.id, mxChatError)
	},
	chatstate.CancelRequiresAction: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.CancelRequiresAction(r.id)
	},
	chatstate.ReconcileInvalidState: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.ReconcileInvalidState(r.id)
	},
	// The active branch, through its last user message: a switch that
	// changes no message (versions_test.go switches between branches).
	chatstate.SwitchBranch: func(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
		return tx.SwitchBranch(r.id, r.editID)
	},
}

// mxAnswer answers the first n calls awaiting approval (all when n < 0):
// the first approved, the others denied.
func mxAnswer(tx *chatstate.Tx, r *mxRun, n int) (chatstate.Result, error) {
	pending, err := chatstate.PendingApprovals(r.before.Chat)
	if err != nil {
		return chatstate.Result{}, err
	}
	if n >= 0 {
		pending = pending[:n]
	}
	var answers []sdk.ToolApprovalAnswer
	for i, a := range pending {
		answers = append(answers, sdk.ToolApprovalAnswer{ToolCallID: a.ToolCallID, Approved: i == 0, Reason: "no"})
	}
	return tx.AnswerApproval(r.id, answers)
}

// mxAnswerOne answers one of two calls awaiting approval.
func mxAnswerOne(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) { return mxAnswer(tx, r, 1) }

// mxApprovalRound checks the approval round after the transition: every
// outstanding call is in it, want of them still pending.
func mxApprovalRound(want int) func(t *testing.T, r *mxRun) {
	return func(t *testing.T, r *mxRun) {
		t.Helper()
		r.history(t)
		if len(r.before.Queue) > 0 {
			r.queue(t, r.q(0))
		} else {
			r.queue(t)
		}
		round, err := chatstate.Approvals(r.after.Chat)
		require.NoError(t, err)
		var ids []string
		for _, a := range round {
			ids = append(ids, a.ToolCallID)
		}
		require.ElementsMatch(t, r.calls, ids, "the round holds the outstanding calls")
		pending, err := chatstate.PendingApprovals(r.after.Chat)
		require.NoError(t, err)
		require.Len(t, pending, want, "calls still awaiting approval")
		if r.tr == chatstate.AnswerApproval {
			require.Equal(t, sdk.ApprovalApproved, round[0].State)
			for _, a := range round[1 : len(round)-want] {
				require.Equal(t, sdk.ApprovalDenied, a.State)
				require.Equal(t, "no", a.Reason)
			}
		}
	}
}

// mxCreateIdle is Create without a user message: the chat starts waiting.
func mxCreateIdle(tx *chatstate.Tx, r *mxRun) (chatstate.Result, error) {
	return tx.Create(chatstate.CreateParams{ID: r.id, OwnerID: r.f.user.ID, Title: "t", SystemPrompt: "sys"})
}

// mxAttempt seeds a chat in from, picks the applier's inputs from it and
// applies tr in one bundle, recording the chat and notifications around it.
// Running chats first record a generation attempt and a retry state, so
// that resetting or keeping them is observable.
func mxAttempt(t *testing.T, f *fixture, from chatstate.State, tr chatstate.Transition, seed mxSeedFn, apply mxApplyFn) *mxRun {
	t.Helper()
	var id uuid.UUID
	if seed != nil {
		id = seed(t, f)
	} else {
		id = f.seed(t, from)
	}
	if st := f.snap(t, id).State; st == chatstate.StateR0 || st == chatstate.StateR1 {
		f.do(t, func(tx *chatstate.Tx) error {
			if _, err := tx.RecordGenerationAttempt(id); err != nil {
				return err
			}
			_, err := tx.RecordRetryState(id, sdk.ChatRetry{Attempt: 1, DelayMS: 10, Error: "seeded", Kind: sdk.ChatErrorTimeout})
			return err
		})
	}
	r := &mxRun{f: f, id: id, from: from, tr: tr, qid: mxMissingID, editID: mxMissingID}
	r.before = f.snap(t, id)
	require.Equal(t, from, r.before.State, "seed")
	r.calls = mxOutstanding(t, r.before.Messages)
	if q := r.before.Queue; len(q) > 0 {
		r.qid = q[0].ID
		if tr == chatstate.PromoteQueuedMessage {
			r.qid = q[len(q)-1].ID
		}
	}
	for _, m := range r.before.active() {
		if m.Role == store.RoleUser && m.Visibility != store.VisibilityModel {
			r.editID = m.ID
		}
	}
	if apply == nil {
		apply = mxAppliers[tr]
	}
	f.pub.take()
	r.err = f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
		var err error
		r.res, err = apply(tx, r)
		return err
	})
	r.after = f.snap(t, id)
	r.pubs = f.pub.take()
	return r
}

// mxRejected checks that a pair the diagram does not allow is refused with
// the right condition, changes nothing and publishes nothing.
func mxRejected(t *testing.T, f *fixture, from chatstate.State, tr chatstate.Transition) {
	r := mxAttempt(t, f, from, tr, nil, nil)
	require.Error(t, r.err, "%s from %s must be rejected", tr, from)
	require.Equal(t, r.before, r.after, "a rejected transition must not change the chat")
	require.Empty(t, r.pubs, "a rejected transition must not publish")
	if tr == chatstate.Create {
		// Create takes no existing chat: addressed to one, it can only
		// fail on the id, which is a conflict rather than a diagram miss.
		if !mxErrorIsAny(r.err, chatstate.ErrTransitionNotAllowed, store.ErrConflict) {
			t.Fatalf("Create over an existing chat: got %v, want ErrTransitionNotAllowed or ErrConflict", r.err)
		}
		return
	}
	mxRequireRejection(t, r.err, from, tr)
}

func mxErrorIsAny(err error, targets ...error) bool {
	return slices.ContainsFunc(targets, func(target error) bool { return errors.Is(err, target) })
}

// mxRequireRejection: every rejection is ErrTransitionNotAllowed, and also
// ErrNotFound from N, ErrInvalidState from Invalid, ErrChatArchived from an
// archived state.
func mxRequireRejection(t *testing.T, err error, from chatstate.State, tr chatstate.Transition) {
	t.Helper()
	require.ErrorIs(t, err, chatstate.ErrTransitionNotAllowed)
	var te *chatstate.TransitionError
	require.ErrorAs(t, err, &te)
	require.Equal(t, from, te.From)
	require.Equal(t, tr, te.Transition)
	switch {
	case from == chatstate.StateN:
		require.ErrorIs(t, err, chatstate.ErrNotFound)
	case from == chatstate.StateInvalid:
		require.ErrorIs(t, err, chatstate.ErrInvalidState)
	case from == chatstate.StateXW || from == chatstate.StateXE0 || from == chatstate.StateXE1:
		require.ErrorIs(t, err, chatstate.ErrChatArchived)
	}
}

// --- expectations common to every allowed transition ---

// q is the id of the i-th queued message before the transition.
func (r *mxRun) q(i int) int64 { return r.before.Queue[i].ID }

// snapVersion is the snapshot_version the bundle must commit: one more
// than before, or 1 for a created chat.
func (r *mxRun) snapVersion() int64 {
	if !r.before.Exists {
		return 1
	}
	return r.before.Chat.SnapshotVersion + 1
}

// common checks what every allowed transition owes the spec, whatever the
// triple: versions ("Core state machine" through "Queue version" and
// "Retry state version"), last_error and pending-action rules
// ("Miscellaneous transition rules"), ownership and notifications.
func (r *mxRun) common(t *testing.T, to chatstate.State) {
	t.Helper()
	b, a := r.before.Chat, r.after.Chat
	v := r.snapVersion()
	require.Equal(t, v, a.SnapshotVersion, "snapshot_version advances by exactly 1 per bundle")
	require.Equal(t, to, r.res.State, "state reported by %s", r.tr)
	require.Equal(t, a, r.res.Chat, "chat reported by %s is the committed row", r.tr)
	var appended, reported []int64
	for _, m := range r.after.Messages[len(r.before.Messages):] {
		appended = append(appended, m.ID)
	}
	for _, m := range r.res.Messages {
		reported = append(reported, m.ID)
	}
	require.Equal(t, appended, reported, "messages reported by %s are those it appended", r.tr)

	// A history change sets history_version to this snapshot and resets
	// generation_attempt; RequestCompaction does both without a message,
	// and Create's snapshot is the chat's first history version even when
	// it writes no message (its system prompt is no message).
	require.GreaterOrEqual(t, len(r.after.Messages), len(r.before.Messages), "messages were removed")
	histChanged := !mxSameRows(r.before.Messages, r.after.Messages)
	if histChanged || r.tr == chatstate.RequestCompaction || r.tr == chatstate.Create {
		require.Equal(t, v, a.HistoryVersion, "history_version after a history change")
		require.Zero(t, a.GenerationAttempt, "generation_attempt after a history change")
	} else {
		require.Equal(t, b.HistoryVersion, a.HistoryVersion, "history_version without a history change")
		want := b.GenerationAttempt
		if r.tr == chatstate.RecordGenerationAttempt {
			want++
		}
		require.Equal(t, want, a.GenerationAttempt, "generation_attempt")
	}
	old := map[int64]store.Message{}
	for _, m := range r.before.Messages {
		old[m.ID] = m
	}
	for _, m := range r.after.Messages {
		if o, ok := old[m.ID]; !ok || !reflect.DeepEqual(o, m) {
			require.Equal(t, v, m.Revision, "revision of message %d, written in this snapshot", m.ID)
		}
	}

	// A promotion deletes a queue row even when the net queue is the same
	// (a message queued and promoted in one bundle).
	queueChanged := !mxSameRows(r.before.Queue, r.after.Queue) ||
		slices.ContainsFunc(r.after.Messages[len(r.before.Messages):], func(m store.Message) bool {
			return m.QueuedMessageID != nil
		})
	if queueChanged {
		require.Equal(t, v, a.QueueVersion, "queue_version after a queue change")
	} else {
		require.Equal(t, b.QueueVersion, a.QueueVersion, "queue_version without a queue change")
	}

	// Retry state is scoped to the generation attempt and to the running turn.
	switch {
	case r.tr == chatstate.RecordRetryState:
		require.JSONEq(t, string(mxJSON(t, mxRetry)), string(a.RetryState), "retry_state")
	case a.Status != store.ChatStatusRunning || a.GenerationAttempt != b.GenerationAttempt:
		require.Nil(t, a.RetryState, "retry_state once the attempt or the running turn is over")
	default:
		require.Equal(t, b.RetryState, a.RetryState, "retry_state")
	}
	if bytes.Equal(b.RetryState, a.RetryState) {
		require.Equal(t, b.RetryStateVersion, a.RetryStateVersion, "retry_state_version without a retry change")
	} else {
		require.Equal(t, v, a.RetryStateVersion, "retry_state_version after a retry change")
	}

	require.Equal(t, b.WorkerID, a.WorkerID, "execution transitions leave worker_id alone")
	require.Equal(t, b.RunnerID, a.RunnerID, "execution transitions leave runner_id alone")

	switch {
	case r.tr == chatstate.FinishError:
		require.JSONEq(t, string(mxJSON(t, mxChatError)), string(a.LastError), "last_error")
	case r.tr == chatstate.ReconcileInvalidState:
		var e sdk.ChatError
		require.NoError(t, json.Unmarshal(a.LastError, &e))
		require.Equal(t, sdk.ChatErrorInvalidState, e.Kind)
		require.NotEmpty(t, e.Message)
	case r.tr == chatstate.EnterReview:
		var e sdk.ChatError
		require.NoError(t, json.Unmarshal(a.LastError, &e))
		require.Equal(t, sdk.ChatErrorUnresolvedEffects, e.Kind, "a chat waiting for review says why")
		require.NotEmpty(t, e.Message)
	case mxErrorState(to):
		require.Equal(t, b.LastError, a.LastError, "last_error stays while the chat stays in error")
	default:
		require.Nil(t, a.LastError, "last_error outside the error states")
	}

	now := r.f.clock()
	switch {
	case mxAction(to) && mxAction(r.from):
		require.Equal(t, b.RequiresActionDeadlineAt, a.RequiresActionDeadlineAt, "deadline of the pending action")
	case r.tr == chatstate.EnterReview:
		require.Nil(t, a.RequiresActionDeadlineAt, "an operator's review has no deadline")
	case r.tr == chatstate.EnterApproval:
		require.Nil(t, a.RequiresActionDeadlineAt, "an approval has no deadline")
	case mxAction(to):
		require.NotNil(t, a.RequiresActionDeadlineAt, "requires_action_deadline_at")
		require.True(t, now.Add(5*time.Minute).Equal(*a.RequiresActionDeadlineAt),
			"deadline %v, want now + 5 minutes", *a.RequiresActionDeadlineAt)
	default:
		require.Nil(t, a.RequiresActionDeadlineAt, "requires_action_deadline_at outside requires_action")
	}

	switch r.tr {
	case chatstate.RequestCompaction:
		require.NotNil(t, a.CompactionRequestedAt, "compaction_requested_at")
		require.True(t, now.Equal(*a.CompactionRequestedAt), "compaction_requested_at = %v, want now", *a.CompactionRequestedAt)
	case chatstate.ClearContext:
		require.Nil(t, a.CompactionRequestedAt, "ClearContext drops a pending compaction request")
	}

	// No user message may follow unanswered calls, and leaving a pending
	// action (or an invalid state) answers every call.
	pending := mxOutstanding(t, r.after.Messages)
	// The last approval answer leaves them to the worker, which runs the
	// approved calls and answers the denied ones.
	if (mxAction(r.from) && !mxAction(to) && r.tr != chatstate.AnswerApproval) || r.tr == chatstate.ReconcileInvalidState {
		require.Empty(t, pending, "tool calls left unanswered when leaving %s", r.from)
	}

	mxToolResults(t, r.after)
	r.notified(t)
}

// mxToolResults proves the invariant "every tool call in history has
// exactly one result" on the chat a transition left: never two results,
// and none missing once the turn is over (DESIGN.md rule 6).
func mxToolResults(t *testing.T, s snapshot) {
	t.Helper()
	require.NoError(t, chatstatetest.CheckToolResults(s.Messages, mxSettled(s.State)), "after the transition, in %s", s.State)
}

// mxSettled: no turn is in progress, so no tool call may wait for a result.
func mxSettled(s chatstate.State) bool {
	switch s {
	case chatstate.StateW, chatstate.StateXW, chatstate.StateE0, chatstate.StateE1, chatstate.StateXE0, chatstate.StateXE1:
		return true
	}
	return false
}

// notified: exactly one chat:update:{id} carrying the committed row, and a
// chat:ownership only when the chat is left runnable with no owner or gives
// up a slot of the concurrent agent limiter (owned and not in
// requires_action before, not after).
func (r *mxRun) notified(t *testing.T) {
	t.Helper()
	a := r.after.Chat
	var updates, owns []published
	for _, p := range r.pubs {
		switch p.Channel {
		case "chat:update:" + r.id.String():
			updates = append(updates, p)
		case "chat:ownership":
			owns = append(owns, p)
		default:
			t.Fatalf("unexpected publish on %q: %s", p.Channel, p.Payload)
		}
	}
	require.Len(t, updates, 1, "chat:update publishes")
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(updates[0].Payload, &fields))
	for _, k := range []string{"snapshot_version", "worker_id", "runner_id", "history_version", "queue_version",
		"retry_state_version", "generation_attempt", "status", "archived"} {
		require.Contains(t, fields, k, "chat:update payload field")
	}
	var got chatstate.UpdatePayload
	require.NoError(t, json.Unmarshal(updates[0].Payload, &got))
	want := chatstate.UpdatePayload{
		ChatID: a.ID, SnapshotVersion: a.SnapshotVersion, HistoryVersion: a.HistoryVersion,
		QueueVersion: a.QueueVersion, RetryStateVersion: a.RetryStateVersion,
		GenerationAttempt: a.GenerationAttempt, Status: a.Status, Archived: a.Archived,
	}
	if a.WorkerID.Valid {
		want.WorkerID = &a.WorkerID.UUID
	}
	if a.RunnerID.Valid {
		want.RunnerID = &a.RunnerID.UUID
	}
	require.Equal(t, want, got, "chat:update payload is the committed row")

	b := r.before.Chat
	freed := b.WorkerID.Valid && b.Status != store.ChatStatusRequiresAction &&
		(!a.WorkerID.Valid || a.Status == store.ChatStatusRequiresAction)
	if mxRunnable(r.after.State) && (!a.WorkerID.Valid || !a.RunnerID.Valid) || freed {
		require.Len(t, owns, 1, "chat:ownership for a runnable, unowned chat or a freed slot")
		var op chatstate.OwnershipPayload
		require.NoError(t, json.Unmarshal(owns[0].Payload, &op))
		require.Equal(t, chatstate.OwnershipPayload{ChatID: a.ID, SnapshotVersion: a.SnapshotVersion, SlotFreed: freed}, op)
	} else {
		require.Empty(t, owns, "chat:ownership only for runnable, unowned chats and freed slots")
	}
}

// mxSameRows compares row lists, a nil list being the same as an empty one.
func mxSameRows[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

func mxRunnable(s chatstate.State) bool {
	switch s {
	case chatstate.StateR0, chatstate.StateR1, chatstate.StateI0, chatstate.StateI1, chatstate.StateA0, chatstate.StateA1:
		return true
	}
	return false
}

func mxAction(s chatstate.State) bool { return s == chatstate.StateA0 || s == chatstate.StateA1 }

func mxErrorState(s chatstate.State) bool {
	switch s {
	case chatstate.StateE0, chatstate.StateE1, chatstate.StateXE0, chatstate.StateXE1:
		return true
	}
	return false
}

func mxJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// mxOutstanding walks active history in order and returns the dynamic tool
// calls left without a result. A user message that enters history while
// calls are outstanding fails the test (spec: "Miscellaneous transition
// rules").
func mxOutstanding(t *testing.T, msgs []store.Message) []string {
	t.Helper()
	var pending []string
	for _, m := range msgs {
		if m.Deleted {
			continue
		}
		if m.Role == store.RoleUser {
			require.Empty(t, pending, "user message %d follows unanswered tool calls", m.ID)
		}
		for _, p := range partsOf(t, m) {
			switch {
			case p.Type == sdk.PartToolCall && !p.ProviderExecuted:
				pending = append(pending, p.ToolCallID)
			case p.Type == sdk.PartToolResult:
				pending = slices.DeleteFunc(pending, func(id string) bool { return id == p.ToolCallID })
			}
		}
	}
	return pending
}

// --- history and queue expectations ---

// mxMsg checks one message a transition appended.
type mxMsg func(t *testing.T, r *mxRun, m store.Message)

// history: the messages present before are untouched and exactly want
// were appended, in order.
func (r *mxRun) history(t *testing.T, want ...mxMsg) {
	t.Helper()
	b, a := r.before.Messages, r.after.Messages
	require.GreaterOrEqual(t, len(a), len(b), "messages were removed")
	require.True(t, mxSameRows(b, a[:len(b)]), "messages present before must be unchanged:\nbefore %+v\nafter  %+v", b, a[:len(b)])
	r.appended(t, a[len(b):], want)
}

// edited: the messages before the edited one are untouched, the active
// ones from it on are soft-deleted (and only that), and want were appended.
func (r *mxRun) edited(t *testing.T, want ...mxMsg) {
	t.Helper()
	b, a := r.before.Messages, r.after.Messages
	require.GreaterOrEqual(t, len(a), len(b), "messages were removed")
	var deleted []int64
	for i, m := range b {
		got := a[i]
		if m.ID < r.editID || m.Deleted {
			require.Equal(t, m, got, "message %d before the edited one is unchanged", m.ID)
			continue
		}
		require.True(t, got.Deleted, "message %d from the edited one on is soft-deleted", m.ID)
		require.Equal(t, r.snapVersion(), got.Revision, "revision of soft-deleted message %d", m.ID)
		deleted = append(deleted, m.ID)
		if m.ID == r.editID && r.res.Message != nil {
			// The replacement is a new version of it (issue 32).
			require.Equal(t, append(slices.Clone(m.SiblingIDs), r.res.Message.ID), got.SiblingIDs, "versions of the edited message")
		}
		got.Deleted, got.Revision, got.SiblingIDs = m.Deleted, m.Revision, m.SiblingIDs
		require.Equal(t, m, got, "soft-deleting message %d changes nothing else", m.ID)
	}
	require.NotEmpty(t, deleted)
	require.Equal(t, r.editID, deleted[0], "the edited message itself is soft-deleted")
	res := r.res
	require.ElementsMatch(t, deleted, res.DeletedIDs, "Result.DeletedIDs")
	r.appended(t, a[len(b):], want)
	require.Equal(t, a[len(a)-1].ID, res.Message.ID, "Result.Message is the replacement")
}

func (r *mxRun) appended(t *testing.T, got []store.Message, want []mxMsg) {
	t.Helper()
	var desc []string
	for _, m := range got {
		desc = append(desc, fmt.Sprintf("%s %q", m.Role, mxText(t, m.Content)))
	}
	require.Len(t, got, len(want), "appended messages: %v", desc)
	for i := range want {
		want[i](t, r, got[i])
	}
}

// queue checks the queue order after the transition: ids of rows that were
// there before, and mxNew for the row the transition queued.
func (r *mxRun) queue(t *testing.T, want ...int64) {
	t.Helper()
	old := map[int64]store.QueuedMessage{}
	for _, q := range r.before.Queue {
		old[q.ID] = q
	}
	var ids []int64
	for _, q := range r.after.Queue {
		ids = append(ids, q.ID)
	}
	require.Len(t, r.after.Queue, len(want), "queue after: %v", ids)
	for i, w := range want {
		q := r.after.Queue[i]
		if w == mxNew {
			require.NotContains(t, old, q.ID, "queue[%d] is the newly queued message", i)
			require.Equal(t, "new", mxText(t, q.Content))
			require.Equal(t, uuid.NullUUID{UUID: r.f.user.ID, Valid: true}, q.CreatedBy)
			continue
		}
		require.Equal(t, w, q.ID, "queue[%d] (queue after: %v)", i, ids)
		require.Equal(t, old[w].Content, q.Content, "queued message %d content", w)
		require.Equal(t, old[w].CreatedBy, q.CreatedBy, "queued message %d created_by", w)
	}
}

// mxText joins a message's text parts.
func mxText(t *testing.T, content json.RawMessage) string {
	t.Helper()
	var parts []sdk.ChatMessagePart
	require.NoError(t, json.Unmarshal(content, &parts))
	var b strings.Builder
	for _, p := range parts {
		if p.Type == sdk.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func mxUser(text string) mxMsg {
	return func(t *testing.T, r *mxRun, m store.Message) {
		t.Helper()
		require.Equal(t, store.RoleUser, m.Role)
		require.Equal(t, store.VisibilityBoth, m.Visibility)
		require.Equal(t, text, mxText(t, m.Content))
		require.Nil(t, m.QueuedMessageID, "a message sent straight to history has no queued_message_id")
		require.Equal(t, uuid.NullUUID{UUID: r.f.user.ID, Valid: true}, m.CreatedBy)
	}
}

// mxPromoted: the queued message qid entered history carrying its id.
func mxPromoted(qid int64) mxMsg {
	return func(t *testing.T, r *mxRun, m store.Message) {
		t.Helper()
		i := slices.IndexFunc(r.before.Queue, func(q store.QueuedMessage) bool { return q.ID == qid })
		require.GreaterOrEqual(t, i, 0, "queued message %d was not queued before", qid)
		q := r.before.Queue[i]
		require.Equal(t, store.RoleUser, m.Role)
		require.NotNil(t, m.QueuedMessageID, "a promoted message carries queued_message_id")
		require.Equal(t, qid, *m.QueuedMessageID, "queued_message_id of the promoted message")
		require.Equal(t, mxText(t, q.Content), mxText(t, m.Content), "promoted content")
		require.Equal(t, q.CreatedBy, m.CreatedBy)
	}
}

// mxPromotedNew: the message this transition queued was promoted at once.
func mxPromotedNew() mxMsg {
	return func(t *testing.T, r *mxRun, m store.Message) {
		t.Helper()
		require.Equal(t, store.RoleUser, m.Role)
		require.Equal(t, "new", mxText(t, m.Content))
		require.NotNil(t, m.QueuedMessageID, "a promoted message carries queued_message_id")
		for _, q := range r.before.Queue {
			require.NotEqual(t, q.ID, *m.QueuedMessageID, "promoted an older queued message")
		}
	}
}

// systemPrompt: the chat's system prompt is want, kept beside the chat
// (not a message of its history).
func (r *mxRun) systemPrompt(t *testing.T, want string) {
	t.Helper()
	require.NoError(t, r.f.s.ReadTx(r.f.ctx, func(tx store.Reader) error {
		got, err := tx.ChatSystemPromptGet(r.f.ctx, r.id)
		require.Equal(t, want, got)
		return err
	}))
}

func mxAssistant(text string) mxMsg {
	return func(t *testing.T, _ *mxRun, m store.Message) {
		t.Helper()
		require.Equal(t, store.RoleAssistant, m.Role)
		require.Equal(t, text, mxText(t, m.Content))
		require.Nil(t, m.QueuedMessageID)
	}
}

// mxCancelled: one tool message answering every call outstanding before
// with a synthetic cancellation.
func mxCancelled() mxMsg {
	return func(t *testing.T, r *mxRun, m store.Message) {
		t.Helper()
		require.NotEmpty(t, r.calls, "seed has no outstanding tool call to cancel")
		require.Equal(t, store.RoleTool, m.Role)
		parts := partsOf(t, m)
		require.Len(t, parts, len(r.calls), "one cancellation per outstanding call")
		for i, p := range parts {
			require.Equal(t, sdk.PartToolResult, p.Type)
			require.Equal(t, r.calls[i], p.ToolCallID)
			require.True(t, p.IsError, "a cancellation is an error result")
			var res chatstate.CancelledResult
			require.NoError(t, json.Unmarshal(p.Result, &res))
			require.True(t, res.Cancelled, "synthetic result is a cancellation")
			require.NotEmpty(t, res.Error)
		}
	}
}

// mxSubmitted: one tool message with the results the client submitted.
func mxSubmitted() mxMsg {
	return func(t *testing.T, r *mxRun, m store.Message) {
		t.Helper()
		require.NotEmpty(t, r.calls, "seed has no outstanding tool call")
		require.Equal(t, store.RoleTool, m.Role)
		parts := partsOf(t, m)
		require.Len(t, parts, len(r.calls))
		for i, p := range parts {
			require.Equal(t, sdk.PartToolResult, p.Type)
			require.Equal(t, r.calls[i], p.ToolCallID)
			require.False(t, p.IsError)
			require.JSONEq(t, mxToolOutput, string(p.Result))
		}
	}
}

// mxCleared: the clear boundary triplet, a hidden model-only anchor then a
// visible chat_cleared call and its result, all compressed.
func mxCleared() []mxMsg {
	var callID string
	return []mxMsg{
		func(t *testing.T, _ *mxRun, m store.Message) {
			t.Helper()
			require.Equal(t, store.RoleUser, m.Role)
			require.Equal(t, store.VisibilityModel, m.Visibility)
			require.True(t, m.Compressed)
		},
		func(t *testing.T, _ *mxRun, m store.Message) {
			t.Helper()
			require.Equal(t, store.RoleAssistant, m.Role)
			require.Equal(t, store.VisibilityUser, m.Visibility)
			require.True(t, m.Compressed)
			parts := partsOf(t, m)
			require.Len(t, parts, 1)
			require.Equal(t, sdk.PartToolCall, parts[0].Type)
			require.Equal(t, chatstate.ToolChatCleared, parts[0].ToolName)
			callID = parts[0].ToolCallID
		},
		func(t *testing.T, _ *mxRun, m store.Message) {
			t.Helper()
			require.Equal(t, store.RoleTool, m.Role)
			require.Equal(t, store.VisibilityUser, m.Visibility)
			require.True(t, m.Compressed)
			parts := partsOf(t, m)
			require.Len(t, parts, 1)
			require.Equal(t, sdk.PartToolResult, parts[0].Type)
			require.Equal(t, callID, parts[0].ToolCallID)
		},
	}
}

// sentToHistory: SendMessage put m straight into history.
func (r *mxRun) sentToHistory(t *testing.T) {
	t.Helper()
	res := r.res
	require.Nil(t, res.Queued, "Result.Queued")
	require.NotNil(t, res.Message, "Result.Message")
	require.Equal(t, r.after.Messages[len(r.after.Messages)-1].ID, res.Message.ID)
}

// sentQueued: SendMessage left m queued at the tail.
func (r *mxRun) sentQueued(t *testing.T) {
	t.Helper()
	res := r.res
	require.Nil(t, res.Message, "Result.Message")
	require.NotNil(t, res.Queued, "Result.Queued")
	require.Equal(t, r.after.Queue[len(r.after.Queue)-1].ID, res.Queued.ID)
}

// --- seeds beyond f.seed ---

// mxSpec describes a chat to build through real transitions.
type mxSpec = chatstatetest.Spec

// mxCompacting is the spec of a running chat like the case's seed (f.seed's
// when nil) whose turn was started by RequestCompaction from error.
func mxCompacting(from chatstate.State, seed *mxSpec) mxSpec {
	sp := mxSpec{State: from}
	if seed != nil {
		sp = *seed
	} else if from == chatstate.StateR1 {
		sp.Queued = 1
	}
	sp.Turns = max(sp.Turns, 1) // something to compact
	sp.Compact = true
	return sp
}

// compactionMarker: the one-shot compaction request survives only the
// transitions that keep the active turn alive (spec: "Manual compaction":
// Acquire, Abandon, SetArchived, queueing a message on a busy chat; and the
// worker's own bookkeeping of that turn: generation attempts, retry state,
// ordinary steps, queue deletions). Every other transition clears it.
func (r *mxRun) compactionMarker(t *testing.T) {
	t.Helper()
	require.NotNil(t, r.before.Chat.CompactionRequestedAt, "seed carries a compaction request")
	switch r.tr {
	case chatstate.SendMessageQueue, chatstate.RecordGenerationAttempt, chatstate.RecordRetryState,
		chatstate.CommitStep, chatstate.DeleteQueuedMessage:
		require.Equal(t, r.before.Chat.CompactionRequestedAt, r.after.Chat.CompactionRequestedAt,
			"%s keeps the turn alive and carries the compaction request", r.tr)
	default:
		require.Nil(t, r.after.Chat.CompactionRequestedAt, "%s clears the one-shot compaction request", r.tr)
	}
}

// mxBuild returns a seed for sp (chatstatetest.Seed: chats start with
// the user message "hello" and are acquired; Unowned ones are abandoned
// at the end).
func mxBuild(sp mxSpec) mxSeedFn {
	return func(t *testing.T, f *fixture) uuid.UUID {
		t.Helper()
		return f.build(t, sp).ID
	}
}

// --- the cases: one per allowed triple ---

func mxSame(t *testing.T, r *mxRun) {
	t.Helper()
	r.history(t)
	r.queue(t)
}

func mxSameQ0(t *testing.T, r *mxRun) {
	t.Helper()
	r.history(t)
	r.queue(t, r.q(0))
}

// Seeds for the triples f.seed cannot reach: a history with something to
// edit, compact or keep, and more than one queued message.
var (
	mxHistW   = &mxSpec{State: chatstate.StateW, Turns: 2}
	mxHistE0  = &mxSpec{State: chatstate.StateE0, Turns: 1}
	mxHistE1  = &mxSpec{State: chatstate.StateE1, Turns: 1, Queued: 1}
	mxTwoE1   = &mxSpec{State: chatstate.StateE1, Queued: 2}
	mxTwoR1   = &mxSpec{State: chatstate.StateR1, Queued: 2}
	mxTwoI1   = &mxSpec{State: chatstate.StateI1, Queued: 2}
	mxTwoA1   = &mxSpec{State: chatstate.StateA1, Queued: 2}
	mxInvalA0 = &mxSpec{State: chatstate.StateInvalid, Base: chatstate.StateA0}
	mxCallR0  = &mxSpec{State: chatstate.StateR0, Pending: true}
	mxCallR1  = &mxSpec{State: chatstate.StateR1, Pending: true}
	mxAskA0   = &mxSpec{State: chatstate.StateA0, Approval: 1}
	mxAsk2A0  = &mxSpec{State: chatstate.StateA0, Approval: 2}
	mxAskA1   = &mxSpec{State: chatstate.StateA1, Approval: 1}
	mxAsk2A1  = &mxSpec{State: chatstate.StateA1, Approval: 2}
	mxInvalR1 = &mxSpec{State: chatstate.StateInvalid, Base: chatstate.StateR1, Queued: 1}
)

const (
	mxN   = chatstate.StateN
	mxW   = chatstate.StateW
	mxE0  = chatstate.StateE0
	mxE1  = chatstate.StateE1
	mxR0  = chatstate.StateR0
	mxR1  = chatstate.StateR1
	mxI0  = chatstate.StateI0
	mxI1  = chatstate.StateI1
	mxA0  = chatstate.StateA0
	mxA1  = chatstate.StateA1
	mxXW  = chatstate.StateXW
	mxXE0 = chatstate.StateXE0
	mxXE1 = chatstate.StateXE1
	mxInv = chatstate.StateInvalid
)

var mxCases = map[mxTriple]mxCase{
	// N
	{mxN, chatstate.Create, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxUser("new"))
		r.systemPrompt(t, "sys")
		r.queue(t)
	}},
	{mxN, chatstate.Create, mxW}: {apply: mxCreateIdle, check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.systemPrompt(t, "sys")
		r.queue(t)
	}},

	// W
	{mxW, chatstate.SendMessageQueue, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxUser("new"))
		r.queue(t)
		r.sentToHistory(t)
	}},
	{mxW, chatstate.SendMessageInterrupt, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxUser("new"))
		r.queue(t)
		r.sentToHistory(t)
	}},
	{mxW, chatstate.EditMessage, mxR0}: {seed: mxHistW, check: func(t *testing.T, r *mxRun) {
		r.edited(t, mxUser("edited"))
		r.queue(t)
	}},
	{mxW, chatstate.RequestCompaction, mxR0}: {seed: mxHistW, check: mxSame},
	{mxW, chatstate.ClearContext, mxW}: {seed: mxHistW, check: func(t *testing.T, r *mxRun) {
		r.history(t, mxCleared()...)
		r.queue(t)
	}},
	{mxW, chatstate.FinishError, mxE0}:     {check: mxSame},
	{mxW, chatstate.SetArchivedTrue, mxXW}: {check: mxSame},
	{mxW, chatstate.SwitchBranch, mxW}:     {seed: mxHistW, check: mxSame},

	// E0
	{mxE0, chatstate.SendMessageQueue, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxUser("new"))
		r.queue(t)
		r.sentToHistory(t)
	}},
	{mxE0, chatstate.SendMessageInterrupt, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxUser("new"))
		r.queue(t)
		r.sentToHistory(t)
	}},
	{mxE0, chatstate.EditMessage, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.edited(t, mxUser("edited"))
		r.queue(t)
	}},
	{mxE0, chatstate.RequestCompaction, mxR0}: {seed: mxHistE0, check: mxSame},
	{mxE0, chatstate.ClearContext, mxW}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxCleared()...)
		r.queue(t)
	}},
	{mxE0, chatstate.SetArchivedTrue, mxXE0}: {check: mxSame},
	{mxE0, chatstate.SwitchBranch, mxE0}:     {check: mxSame},

	// E1: a send joins the tail and the old head is promoted.
	{mxE1, chatstate.SendMessageQueue, mxR1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxPromoted(r.q(0)))
		r.queue(t, mxNew)
		r.sentQueued(t)
	}},
	{mxE1, chatstate.SendMessageInterrupt, mxR1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxPromoted(r.q(0)))
		r.queue(t, mxNew)
		r.sentQueued(t)
	}},
	{mxE1, chatstate.EditMessage, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.edited(t, mxUser("edited"))
		r.queue(t)
	}},
	{mxE1, chatstate.RequestCompaction, mxR1}:   {seed: mxHistE1, check: mxSameQ0},
	{mxE1, chatstate.DeleteQueuedMessage, mxE0}: {check: mxSame},
	{mxE1, chatstate.DeleteQueuedMessage, mxE1}: {seed: mxTwoE1, check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.queue(t, r.q(1))
	}},
	{mxE1, chatstate.PromoteQueuedMessage, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxPromoted(r.q(0)))
		r.queue(t)
	}},
	{mxE1, chatstate.PromoteQueuedMessage, mxR1}: {seed: mxTwoE1, check: func(t *testing.T, r *mxRun) {
		r.history(t, mxPromoted(r.q(1)))
		r.queue(t, r.q(0))
	}},
	{mxE1, chatstate.SetArchivedTrue, mxXE1}: {check: mxSameQ0},
	{mxE1, chatstate.SwitchBranch, mxE1}:     {check: mxSameQ0},

	// R0
	{mxR0, chatstate.RecordGenerationAttempt, mxR0}: {check: mxSame},
	{mxR0, chatstate.RecordRetryState, mxR0}:        {check: mxSame},
	{mxR0, chatstate.CommitStep, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxAssistant("step"))
		r.queue(t)
	}},
	{mxR0, chatstate.EnterRequiresAction, mxA0}: {check: mxSame},
	{mxR0, chatstate.EnterReview, mxA0}:         {check: mxSame},
	{mxR0, chatstate.EnterApproval, mxA0}:       {seed: mxCallR0, check: mxApprovalRound(1)},
	{mxR0, chatstate.Interrupt, mxI0}:           {check: mxSame},
	{mxR0, chatstate.SendMessageInterrupt, mxI1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.queue(t, mxNew)
		r.sentQueued(t)
	}},
	{mxR0, chatstate.EditMessage, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.edited(t, mxUser("edited"))
		r.queue(t)
	}},
	{mxR0, chatstate.FinishTurn, mxW}:   {check: mxSame},
	{mxR0, chatstate.FinishError, mxE0}: {check: mxSame},
	{mxR0, chatstate.SendMessageQueue, mxR1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.queue(t, mxNew)
		r.sentQueued(t)
	}},

	// R1
	{mxR1, chatstate.RecordGenerationAttempt, mxR1}: {check: mxSameQ0},
	{mxR1, chatstate.RecordRetryState, mxR1}:        {check: mxSameQ0},
	{mxR1, chatstate.CommitStep, mxR1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxAssistant("step"))
		r.queue(t, r.q(0))
	}},
	{mxR1, chatstate.EnterRequiresAction, mxA1}: {check: mxSameQ0},
	{mxR1, chatstate.EnterReview, mxA1}:         {check: mxSameQ0},
	{mxR1, chatstate.EnterApproval, mxA1}:       {seed: mxCallR1, check: mxApprovalRound(1)},
	{mxR1, chatstate.Interrupt, mxI1}:           {check: mxSameQ0},
	{mxR1, chatstate.SendMessageInterrupt, mxI1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.queue(t, r.q(0), mxNew)
		r.sentQueued(t)
	}},
	{mxR1, chatstate.EditMessage, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.edited(t, mxUser("edited"))
		r.queue(t)
	}},
	{mxR1, chatstate.FinishError, mxE1}: {check: mxSameQ0},
	{mxR1, chatstate.SendMessageQueue, mxR1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.queue(t, r.q(0), mxNew)
		r.sentQueued(t)
	}},
	{mxR1, chatstate.DeleteQueuedMessage, mxR0}: {check: mxSame},
	{mxR1, chatstate.DeleteQueuedMessage, mxR1}: {seed: mxTwoR1, check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.queue(t, r.q(1))
	}},
	// The tail moves to the head; FinishInterruption promotes it later.
	{mxR1, chatstate.PromoteQueuedMessage, mxI1}: {seed: mxTwoR1, check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.queue(t, r.q(1), r.q(0))
	}},
	{mxR1, chatstate.FinishTurn, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxPromoted(r.q(0)))
		r.queue(t)
	}},
	{mxR1, chatstate.FinishTurn, mxR1}: {seed: mxTwoR1, check: func(t *testing.T, r *mxRun) {
		r.history(t, mxPromoted(r.q(0)))
		r.queue(t, r.q(1))
	}},

	// I0
	{mxI0, chatstate.SendMessageQueue, mxI1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.queue(t, mxNew)
		r.sentQueued(t)
	}},
	{mxI0, chatstate.SendMessageInterrupt, mxI1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.queue(t, mxNew)
		r.sentQueued(t)
	}},
	{mxI0, chatstate.EditMessage, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.edited(t, mxUser("edited"))
		r.queue(t)
	}},
	{mxI0, chatstate.FinishInterruption, mxW}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxAssistant("partial"))
		r.queue(t)
	}},

	// I1
	{mxI1, chatstate.SendMessageQueue, mxI1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.queue(t, r.q(0), mxNew)
		r.sentQueued(t)
	}},
	{mxI1, chatstate.SendMessageInterrupt, mxI1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.queue(t, r.q(0), mxNew)
		r.sentQueued(t)
	}},
	{mxI1, chatstate.EditMessage, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.edited(t, mxUser("edited"))
		r.queue(t)
	}},
	{mxI1, chatstate.DeleteQueuedMessage, mxI0}: {check: mxSame},
	{mxI1, chatstate.DeleteQueuedMessage, mxI1}: {seed: mxTwoI1, check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.queue(t, r.q(1))
	}},
	{mxI1, chatstate.PromoteQueuedMessage, mxI1}: {seed: mxTwoI1, check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.queue(t, r.q(1), r.q(0))
	}},
	{mxI1, chatstate.FinishInterruption, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxAssistant("partial"), mxPromoted(r.q(0)))
		r.queue(t)
	}},
	{mxI1, chatstate.FinishInterruption, mxR1}: {seed: mxTwoI1, check: func(t *testing.T, r *mxRun) {
		r.history(t, mxAssistant("partial"), mxPromoted(r.q(0)))
		r.queue(t, r.q(1))
	}},

	// A0
	{mxA0, chatstate.AnswerApproval, mxR0}: {seed: mxAskA0, check: mxApprovalRound(0)},
	{mxA0, chatstate.AnswerApproval, mxA0}: {seed: mxAsk2A0, apply: mxAnswerOne, check: mxApprovalRound(1)},
	{mxA0, chatstate.CompleteRequiresAction, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxSubmitted())
		r.queue(t)
	}},
	{mxA0, chatstate.Interrupt, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxCancelled())
		r.queue(t)
	}},
	{mxA0, chatstate.CancelRequiresAction, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxCancelled())
		r.queue(t)
	}},
	{mxA0, chatstate.SendMessageQueue, mxA1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.queue(t, mxNew)
		r.sentQueued(t)
	}},
	{mxA0, chatstate.SendMessageInterrupt, mxR1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxCancelled())
		r.queue(t, mxNew)
		r.sentQueued(t)
	}},
	{mxA0, chatstate.EditMessage, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.edited(t, mxUser("edited"))
		r.queue(t)
	}},

	// A1
	{mxA1, chatstate.AnswerApproval, mxR1}: {seed: mxAskA1, check: mxApprovalRound(0)},
	{mxA1, chatstate.AnswerApproval, mxA1}: {seed: mxAsk2A1, apply: mxAnswerOne, check: mxApprovalRound(1)},
	{mxA1, chatstate.CompleteRequiresAction, mxR1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxSubmitted())
		r.queue(t, r.q(0))
	}},
	{mxA1, chatstate.Interrupt, mxR1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxCancelled())
		r.queue(t, r.q(0))
	}},
	{mxA1, chatstate.CancelRequiresAction, mxR1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxCancelled())
		r.queue(t, r.q(0))
	}},
	{mxA1, chatstate.SendMessageQueue, mxA1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.queue(t, r.q(0), mxNew)
		r.sentQueued(t)
	}},
	{mxA1, chatstate.SendMessageInterrupt, mxR1}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxCancelled())
		r.queue(t, r.q(0), mxNew)
		r.sentQueued(t)
	}},
	{mxA1, chatstate.EditMessage, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.edited(t, mxUser("edited"))
		r.queue(t)
	}},
	{mxA1, chatstate.DeleteQueuedMessage, mxA0}: {check: mxSame},
	{mxA1, chatstate.DeleteQueuedMessage, mxA1}: {seed: mxTwoA1, check: func(t *testing.T, r *mxRun) {
		r.history(t)
		r.queue(t, r.q(1))
	}},
	{mxA1, chatstate.PromoteQueuedMessage, mxR0}: {check: func(t *testing.T, r *mxRun) {
		r.history(t, mxCancelled(), mxPromoted(r.q(0)))
		r.queue(t)
	}},
	{mxA1, chatstate.PromoteQueuedMessage, mxR1}: {seed: mxTwoA1, check: func(t *testing.T, r *mxRun) {
		r.history(t, mxCancelled(), mxPromoted(r.q(1)))
		r.queue(t, r.q(0))
	}},

	// Archived
	{mxXW, chatstate.SetArchivedFalse, mxW}:   {check: mxSame},
	{mxXE0, chatstate.SetArchivedFalse, mxE0}: {check: mxSame},
	{mxXE1, chatstate.SetArchivedFalse, mxE1}: {check: mxSameQ0},

	// Invalid: archived requires_action with a pending call, and archived
	// running with a queue.
	{mxInv, chatstate.ReconcileInvalidState, mxE0}: {seed: mxInvalA0, check: func(t *testing.T, r *mxRun) {
		r.history(t, mxCancelled())
		r.queue(t)
	}},
	{mxInv, chatstate.ReconcileInvalidState, mxE1}: {seed: mxInvalR1, check: mxSameQ0},
}

// mxUnownedCases are the documented exceptions for chats no worker owns:
// nothing is generating, so the same bundle finishes the interruption
// (spec: POST /messages, POST /interrupt; send.go, interrupt.go).
var mxUnownedCases = []struct {
	name  string
	from  chatstate.State
	seed  mxSeedFn
	tr    chatstate.Transition
	to    chatstate.State
	check func(t *testing.T, r *mxRun)
}{
	{
		name: "R0 Interrupt finishes at once", from: mxR0, tr: chatstate.Interrupt, to: mxW,
		seed: mxBuild(mxSpec{State: mxR0, Unowned: true}), check: mxSame,
	},
	{
		name: "R0 with a pending call Interrupt cancels it then finishes", from: mxR0, tr: chatstate.Interrupt, to: mxW,
		seed: mxBuild(mxSpec{State: mxR0, Pending: true, Unowned: true}),
		check: func(t *testing.T, r *mxRun) {
			r.history(t, mxCancelled())
			r.queue(t)
		},
	},
	{
		name: "R1 Interrupt promotes the head", from: mxR1, tr: chatstate.Interrupt, to: mxR0,
		seed: mxBuild(mxSpec{State: mxR1, Queued: 1, Unowned: true}),
		check: func(t *testing.T, r *mxRun) {
			r.history(t, mxPromoted(r.q(0)))
			r.queue(t)
		},
	},
	{
		name: "R1 with two queued Interrupt promotes the head and keeps running", from: mxR1, tr: chatstate.Interrupt, to: mxR1,
		seed: mxBuild(mxSpec{State: mxR1, Queued: 2, Unowned: true}),
		check: func(t *testing.T, r *mxRun) {
			r.history(t, mxPromoted(r.q(0)))
			r.queue(t, r.q(1))
		},
	},
	{
		name: "I0 Interrupt finishes", from: mxI0, tr: chatstate.Interrupt, to: mxW,
		seed: mxBuild(mxSpec{State: mxI0, Unowned: true}), check: mxSame,
	},
	{
		// FinishInterruption's guard covers the cancellations too.
		name: "I0 with a pending call Interrupt cancels it then finishes", from: mxI0, tr: chatstate.Interrupt, to: mxW,
		seed: mxBuild(mxSpec{State: mxI0, Pending: true, Unowned: true}),
		check: func(t *testing.T, r *mxRun) {
			r.history(t, mxCancelled())
			r.queue(t)
		},
	},
	{
		name: "I1 Interrupt promotes the head", from: mxI1, tr: chatstate.Interrupt, to: mxR0,
		seed: mxBuild(mxSpec{State: mxI1, Queued: 1, Unowned: true}),
		check: func(t *testing.T, r *mxRun) {
			r.history(t, mxPromoted(r.q(0)))
			r.queue(t)
		},
	},
	{
		name: "R0 SendMessage(interrupt) promotes m itself", from: mxR0, tr: chatstate.SendMessageInterrupt, to: mxR0,
		seed: mxBuild(mxSpec{State: mxR0, Unowned: true}),
		check: func(t *testing.T, r *mxRun) {
			r.history(t, mxPromotedNew())
			r.queue(t)
			r.sentToHistory(t)
		},
	},
	{
		name: "R1 SendMessage(interrupt) promotes the old head and queues m", from: mxR1, tr: chatstate.SendMessageInterrupt, to: mxR1,
		seed: mxBuild(mxSpec{State: mxR1, Queued: 1, Unowned: true}),
		check: func(t *testing.T, r *mxRun) {
			r.history(t, mxPromoted(r.q(0)))
			r.queue(t, mxNew)
			r.sentQueued(t)
			res := r.res
			require.Len(t, res.Promoted, 1)
			require.Equal(t, r.q(0), *res.Promoted[0].QueuedMessageID)
			require.NotEqual(t, res.Queued.ID, *res.Promoted[0].QueuedMessageID)
		},
	},
	{
		// Only busy_behavior=interrupt finishes an unowned interruption in
		// the same transaction (spec: POST /messages); queueing leaves the
		// interruption to the worker that acquires the chat.
		name: "I0 SendMessage(queue) stays interrupting", from: mxI0, tr: chatstate.SendMessageQueue, to: mxI1,
		seed: mxBuild(mxSpec{State: mxI0, Unowned: true}),
		check: func(t *testing.T, r *mxRun) {
			r.history(t)
			r.queue(t, mxNew)
			r.sentQueued(t)
		},
	},
	{
		name: "R1 PromoteQueuedMessage promotes qid at once", from: mxR1, tr: chatstate.PromoteQueuedMessage, to: mxR1,
		seed: mxBuild(mxSpec{State: mxR1, Queued: 2, Unowned: true}),
		check: func(t *testing.T, r *mxRun) {
			r.history(t, mxPromoted(r.q(1)))
			r.queue(t, r.q(0))
			res := r.res
			require.NotNil(t, res.Message)
			require.Equal(t, r.q(1), *res.Message.QueuedMessageID)
		},
	},
}

// mxOwnership applies Acquire or Abandon to a chat seeded in st. Spec:
// Acquire U -> O and O -> O, Abandon O -> U, orthogonal to the execution
// state (archived chats may be acquired); a missing chat has no owner.
func mxOwnership(t *testing.T, f *fixture, st chatstate.State, tr chatstate.Transition, seed mxSeedFn) {
	var id uuid.UUID
	if seed != nil {
		id = seed(t, f)
	} else {
		id = f.seed(t, st)
	}
	r := &mxRun{f: f, id: id, from: st, tr: tr}
	r.before = f.snap(t, id)
	require.Equal(t, st, r.before.State, "seed")
	f.pub.take()
	worker, runner := uuid.New(), uuid.New()
	var res chatstate.Result
	err := f.m.Do(f.ctx, func(tx *chatstate.Tx) error {
		var err error
		if tr == chatstate.Acquire {
			res, err = tx.Acquire(id, worker, runner)
		} else {
			res, err = tx.Abandon(id)
		}
		return err
	})
	r.after = f.snap(t, id)
	r.pubs = f.pub.take()

	_, inDiagram := chatstate.OwnershipTransitions()[chatstate.OwnershipOf(r.before.Chat)][tr]
	require.Equal(t, tr == chatstate.Acquire || r.before.Chat.WorkerID.Valid, inDiagram, "ownership diagram")
	allowed := r.before.Exists && inDiagram
	if !allowed {
		require.Error(t, err)
		mxRequireRejection(t, err, st, tr)
		require.Equal(t, r.before, r.after, "a rejected transition must not change the chat")
		require.Empty(t, r.pubs, "a rejected transition must not publish")
		return
	}
	require.NoError(t, err)
	require.Equal(t, st, r.after.State, "ownership transitions leave the execution state alone")
	require.True(t, mxSameRows(r.before.Messages, r.after.Messages), "ownership transitions leave history alone")
	require.True(t, mxSameRows(r.before.Queue, r.after.Queue), "ownership transitions leave the queue alone")
	var wantW, wantR uuid.NullUUID
	if tr == chatstate.Acquire {
		wantW, wantR = uuid.NullUUID{UUID: worker, Valid: true}, uuid.NullUUID{UUID: runner, Valid: true}
	}
	require.Equal(t, wantW, r.after.Chat.WorkerID)
	require.Equal(t, wantR, r.after.Chat.RunnerID)
	require.Equal(t, r.after.Chat, res.Chat, "the returned chat is the committed row")
	require.Equal(t, st, res.State, "the reported state")
	require.Equal(t, r.before.Chat.SnapshotVersion+1, r.after.Chat.SnapshotVersion)
	got := r.after.Chat
	got.WorkerID, got.RunnerID = r.before.Chat.WorkerID, r.before.Chat.RunnerID
	got.SnapshotVersion, got.UpdatedAt = r.before.Chat.SnapshotVersion, r.before.Chat.UpdatedAt
	require.Equal(t, r.before.Chat, got, "only ownership and snapshot_version change")
	mxToolResults(t, r.after)
	r.notified(t)
}

// The diagrams are handed out as copies: changing one changes nothing.
func TestTransitionsIsACopy(t *testing.T) {
	t.Parallel()
	m := chatstate.Transitions()
	m[chatstate.StateW][chatstate.SendMessageQueue][0] = chatstate.StateInvalid
	delete(m[chatstate.StateW], chatstate.ClearContext)
	m[chatstate.StateN][chatstate.FinishTurn] = []chatstate.State{chatstate.StateW}
	outs, ok := chatstate.Allowed(chatstate.StateW, chatstate.SendMessageQueue)
	require.True(t, ok)
	require.Equal(t, []chatstate.State{chatstate.StateR0}, outs)
	_, ok = chatstate.Allowed(chatstate.StateW, chatstate.ClearContext)
	require.True(t, ok)
	_, ok = chatstate.Allowed(chatstate.StateN, chatstate.FinishTurn)
	require.False(t, ok)
	require.Equal(t, chatstate.StateR0, chatstate.Transitions()[chatstate.StateW][chatstate.SendMessageQueue][0])

	outs[0] = chatstate.StateInvalid
	again, _ := chatstate.Allowed(chatstate.StateW, chatstate.SendMessageQueue)
	require.Equal(t, []chatstate.State{chatstate.StateR0}, again, "Allowed hands out a copy too")

	own := chatstate.OwnershipTransitions()
	own[chatstate.OwnershipU][chatstate.Abandon] = []chatstate.Ownership{chatstate.OwnershipU}
	_, ok = chatstate.OwnershipTransitions()[chatstate.OwnershipU][chatstate.Abandon]
	require.False(t, ok)
}
