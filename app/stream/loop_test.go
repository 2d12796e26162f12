package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/stream"
	"github.com/chatd/chatd/store"
)

// Event type shorthands for expected sequences.
const (
	tPart    = sdk.StreamMessagePart
	tMessage = sdk.StreamMessage
	tStatus  = sdk.StreamStatus
	tError   = sdk.StreamError
	tQueue   = sdk.StreamQueueUpdate
	tAction  = sdk.StreamActionRequired
	tRetry   = sdk.StreamRetry
	tPreview = sdk.StreamPreviewReset
	tHistory = sdk.StreamHistoryReset
)

var (
	testRetry = &sdk.ChatRetry{Attempt: 1, DelayMS: 1000, Error: "overloaded", Kind: sdk.ChatErrorOverloaded,
		RetryingAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	testError = sdk.ChatError{Message: "provider failed", Kind: sdk.ChatErrorAuth, Provider: "openai", StatusCode: 401}
	testCalls = []chatstate.ToolCall{
		{MessageID: 2, ID: "call_1", Name: "lookup", Args: json.RawMessage(`{"q":"go"}`)},
		{MessageID: 2, ID: "call_2", Name: "now"},
	}
)

// TestLoopBootstrap: the first Sync fetches without hints and emits the full
// state in the spec's order: messages, queue_update (always), status, error
// or action_required, retry, then preview_reset for a non-empty history.
func TestLoopBootstrap(t *testing.T) {
	t.Parallel()
	w1 := newWorkerID()
	tests := []struct {
		name    string
		setup   func(w *world)
		want    []string
		texts   []string
		targets []stream.Target
		check   func(t *testing.T, w *world, events []sdk.ChatStreamEvent)
	}{{
		name:    "empty chat",
		setup:   func(*world) {},
		want:    []string{tQueue, tStatus},
		targets: []stream.Target{{}},
		check: func(t *testing.T, _ *world, events []sdk.ChatStreamEvent) {
			require.NotNil(t, events[0].QueuedMessages)
			require.Empty(t, events[0].QueuedMessages)
			b, err := json.Marshal(events[0])
			require.NoError(t, err)
			require.Contains(t, string(b), `"queued_messages":[]`, "an empty queue is an empty array on the wire")
			require.Equal(t, sdk.ChatStatusWaiting, events[1].Status.Status)
		},
	}, {
		name: "history, queue and pending dynamic tool calls",
		setup: func(w *world) {
			var gone store.Message
			w.tx(func() {
				w.message(store.RoleUser, "hi")
				gone = w.message(store.RoleAssistant, "deleted later")
			})
			w.tx(func() {
				w.softDeleteFrom(gone.ID)
				w.message(store.RoleAssistant, "calling tools")
				w.message(store.RoleUser, "model-only context", store.VisibilityModel)
				w.enqueue("queued one")
				w.enqueue("queued two")
				w.requireAction(testCalls...)
			})
		},
		want:  []string{tMessage, tMessage, tQueue, tStatus, tAction, tPreview},
		texts: []string{"hi", "calling tools"},
		check: func(t *testing.T, w *world, events []sdk.ChatStreamEvent) {
			require.Len(t, events[2].QueuedMessages, 2)
			require.Equal(t, w.queue[0].ID, events[2].QueuedMessages[0].ID)
			require.Equal(t, "queued two", events[2].QueuedMessages[1].Content[0].Text)
			require.Equal(t, sdk.ChatStatusRequiresAction, events[3].Status.Status)
			require.Equal(t, []sdk.ChatStreamToolCall{
				{ToolCallID: "call_1", ToolName: "lookup", Args: `{"q":"go"}`},
				{ToolCallID: "call_2", ToolName: "now", Args: "{}"},
			}, events[4].ActionRequired.ToolCalls)
			b, err := json.Marshal(events[4])
			require.NoError(t, err)
			require.Contains(t, string(b), `"args":"{\"q\":\"go\"}"`, "args is a JSON string")
		},
	}, {
		name: "error",
		setup: func(w *world) {
			w.tx(func() {
				w.message(store.RoleUser, "hi")
				w.fail(testError)
			})
		},
		want:  []string{tMessage, tQueue, tStatus, tError, tPreview},
		texts: []string{"hi"},
		check: func(t *testing.T, _ *world, events []sdk.ChatStreamEvent) {
			require.Equal(t, sdk.ChatStatusError, events[2].Status.Status)
			require.Equal(t, testError, *events[3].Error)
		},
	}, {
		name: "running, waiting to retry",
		setup: func(w *world) {
			w.tx(func() {
				w.message(store.RoleUser, "hi")
				w.status(store.ChatStatusRunning)
				w.own(w1)
			})
			w.tx(func() { w.attempt() })
			w.tx(func() { w.retry(testRetry) })
		},
		want:  []string{tMessage, tQueue, tStatus, tRetry, tPreview},
		texts: []string{"hi"},
		check: func(t *testing.T, w *world, events []sdk.ChatStreamEvent) {
			require.Equal(t, *testRetry, *events[3].Retry)
		},
	}, {
		name: "running, streaming",
		setup: func(w *world) {
			w.tx(func() {
				w.message(store.RoleUser, "hi")
				w.status(store.ChatStatusRunning)
				w.own(w1)
			})
			w.tx(func() { w.attempt() })
		},
		want:  []string{tMessage, tQueue, tStatus, tPreview},
		texts: []string{"hi"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld()
			tt.setup(w)
			h := newHarness(t, w)
			events := h.bootstrap()
			require.Equal(t, tt.want, kinds(events))
			require.Equal(t, tt.texts, texts(events))
			require.Equal(t, 1, w.fetches)
			if tt.targets != nil {
				require.Equal(t, tt.targets, h.targets)
			}
			if tt.check != nil {
				tt.check(t, w, events)
			}
		})
	}
}

// TestLoopBootstrapRelay: the bootstrap points the relay at the running
// episode, and a retrying attempt's parts are dropped from the start.
func TestLoopBootstrapRelay(t *testing.T) {
	t.Parallel()
	w1 := newWorkerID()
	w := newWorld()
	w.tx(func() {
		w.message(store.RoleUser, "hi")
		w.status(store.ChatStatusRunning)
		w.own(w1)
		w.attempt()
	})
	h := newHarness(t, w)
	h.bootstrap()
	hv, ga := h.episode()
	require.Equal(t, []stream.Target{{WorkerID: w1, HistoryVersion: hv, GenerationAttempt: 1}}, h.targets)
	e := h.part(hv, ga, 1, "tok")
	require.Equal(t, sdk.ChatStreamMessagePart{Role: store.RoleAssistant, Part: sdk.ChatMessagePart{Type: sdk.PartText, Text: "tok"},
		HistoryVersion: hv, GenerationAttempt: ga, Seq: 1}, *e.MessagePart)
	require.Equal(t, tPart, e.Type)
	require.Equal(t, w.chat.ID, e.ChatID)

	w.tx(func() { w.retry(testRetry) })
	r := newHarness(t, w)
	r.bootstrap()
	r.dropped(hv, ga, 1)
	r.dropped(hv, ga, 7) // retired: not a gap
}

// TestLoopSyncOrder: one Sync that sees several changes emits them in the
// spec's deterministic order.
func TestLoopSyncOrder(t *testing.T) {
	t.Parallel()
	w1 := newWorkerID()
	tests := []struct {
		name   string
		change func(w *world)
		want   []string
	}{{
		name: "a new turn waiting to retry",
		change: func(w *world) {
			w.message(store.RoleUser, "again")
			w.enqueue("next")
			w.status(store.ChatStatusRunning)
			w.own(w1)
			w.attempt()
			w.retry(testRetry)
		},
		want: []string{tMessage, tQueue, tStatus, tRetry, tPreview},
	}, {
		name: "a failed turn",
		change: func(w *world) {
			w.message(store.RoleUser, "again")
			w.enqueue("next")
			w.fail(testError)
		},
		want: []string{tMessage, tQueue, tStatus, tError, tPreview},
	}, {
		name: "a turn that calls dynamic tools",
		change: func(w *world) {
			w.message(store.RoleUser, "again")
			w.message(store.RoleAssistant, "calling")
			w.enqueue("next")
			w.requireAction(testCalls...)
		},
		want: []string{tMessage, tMessage, tQueue, tStatus, tAction, tPreview},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld()
			w.tx(func() {
				w.message(store.RoleUser, "hi")
				w.message(store.RoleAssistant, "hello")
			})
			h := newHarness(t, w)
			h.bootstrap()
			events := h.sync(w.tx(func() { tt.change(w) }))
			require.Equal(t, tt.want, kinds(events))
		})
	}
}

// TestLoopHints: hints only decide whether to fetch (spec: Sync steps 1-3);
// a fetch that finds nothing newer emits nothing.
func TestLoopHints(t *testing.T) {
	t.Parallel()
	w1, w2 := newWorkerID(), newWorkerID()
	waiting, running := store.ChatStatusWaiting, store.ChatStatusRunning
	// The local state: running, owned by w1, attempt 2, one queued message.
	base := func() *world {
		w := newWorld()
		w.tx(func() {
			w.message(store.RoleUser, "hi")
			w.enqueue("queued")
			w.status(running)
			w.own(w1)
		})
		w.tx(func() { w.attempt() })
		w.tx(func() { w.retry(testRetry) })
		w.tx(func() { w.attempt() })
		return w
	}
	c := base().chat
	tests := []struct {
		name  string
		hints func(c store.Chat) stream.Hints
		fetch bool
	}{
		{"none", func(store.Chat) stream.Hints { return stream.Hints{} }, false},
		{"snapshot newer alone", func(c store.Chat) stream.Hints { return stream.Hints{SnapshotVersion: ptr(c.SnapshotVersion + 1)} }, false},
		{"snapshot equal, history newer", func(c store.Chat) stream.Hints {
			return stream.Hints{SnapshotVersion: ptr(c.SnapshotVersion), HistoryVersion: ptr(c.HistoryVersion + 5)}
		}, false},
		{"snapshot older, status differs", func(c store.Chat) stream.Hints {
			return stream.Hints{SnapshotVersion: ptr(c.SnapshotVersion - 1), Status: &waiting}
		}, false},
		{"snapshot newer, history newer", func(c store.Chat) stream.Hints {
			return stream.Hints{SnapshotVersion: ptr(c.SnapshotVersion + 1), HistoryVersion: ptr(c.HistoryVersion + 1)}
		}, true},
		{"history newer", func(c store.Chat) stream.Hints { return stream.Hints{HistoryVersion: ptr(c.HistoryVersion + 1)} }, true},
		{"history equal", func(c store.Chat) stream.Hints { return stream.Hints{HistoryVersion: ptr(c.HistoryVersion)} }, false},
		{"history older", func(c store.Chat) stream.Hints { return stream.Hints{HistoryVersion: ptr(c.HistoryVersion - 1)} }, false},
		{"queue newer", func(c store.Chat) stream.Hints { return stream.Hints{QueueVersion: ptr(c.QueueVersion + 1)} }, true},
		{"queue equal", func(c store.Chat) stream.Hints { return stream.Hints{QueueVersion: ptr(c.QueueVersion)} }, false},
		{"queue older", func(c store.Chat) stream.Hints { return stream.Hints{QueueVersion: ptr(c.QueueVersion - 1)} }, false},
		{"retry newer", func(c store.Chat) stream.Hints { return stream.Hints{RetryStateVersion: ptr(c.RetryStateVersion + 1)} }, true},
		{"retry equal", func(c store.Chat) stream.Hints { return stream.Hints{RetryStateVersion: ptr(c.RetryStateVersion)} }, false},
		{"status differs", func(store.Chat) stream.Hints { return stream.Hints{Status: &waiting} }, true},
		{"status same", func(store.Chat) stream.Hints { return stream.Hints{Status: &running} }, false},
		{"worker null, local owned", func(store.Chat) stream.Hints { return stream.Hints{WorkerID: &uuid.NullUUID{}} }, true},
		{"worker same", func(store.Chat) stream.Hints { return stream.Hints{WorkerID: &w1} }, false},
		{"worker other", func(store.Chat) stream.Hints { return stream.Hints{WorkerID: &w2} }, true},
		{"attempt higher", func(c store.Chat) stream.Hints { return stream.Hints{GenerationAttempt: ptr(c.GenerationAttempt + 1)} }, true},
		{"attempt lower", func(c store.Chat) stream.Hints { return stream.Hints{GenerationAttempt: ptr(c.GenerationAttempt - 1)} }, true},
		{"attempt same", func(c store.Chat) stream.Hints { return stream.Hints{GenerationAttempt: ptr(c.GenerationAttempt)} }, false},
		{"gone", func(store.Chat) stream.Hints { return stream.Hints{Gone: true} }, true},
		{"poller hints of the same row", stream.HintsFromChat, false},
		{"notification of the same row", func(c store.Chat) stream.Hints {
			return stream.HintsFromPayload(chatstate.NewUpdatePayload(c))
		}, false},
	}
	require.Equal(t, int64(2), c.GenerationAttempt)
	require.Positive(t, c.RetryStateVersion)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := base()
			h := newHarness(t, w)
			h.bootstrap()
			w.fetches = 0
			events := h.sync(tt.hints(w.chat))
			want := 0
			if tt.fetch {
				want = 1
			}
			require.Equal(t, want, w.fetches, "fetches")
			require.Empty(t, events, "nothing changed in the database")
		})
	}
}

// TestLoopHintsWorkerTriState: a notification without a worker is a
// present null worker, not an absent one.
func TestLoopHintsWorkerTriState(t *testing.T) {
	t.Parallel()
	w := newWorld()
	w.tx(func() { w.own(newWorkerID()) })
	h := newHarness(t, w)
	h.bootstrap()
	w.tx(func() {}) // a newer snapshot that changed nothing the hints show
	p := chatstate.NewUpdatePayload(w.chat)
	p.WorkerID = nil
	w.fetches = 0
	require.Empty(t, h.sync(stream.HintsFromPayload(p)))
	require.Equal(t, 1, w.fetches, "present null worker against an owned chat")
	p.WorkerID = &w.chat.WorkerID.UUID
	p.SnapshotVersion++
	require.Empty(t, h.sync(stream.HintsFromPayload(p)))
	require.Equal(t, 1, w.fetches, "the same worker")

	unowned := newWorld()
	u := newHarness(t, unowned)
	u.bootstrap()
	unowned.tx(func() {})
	unowned.fetches = 0
	u.sync(stream.HintsFromPayload(chatstate.NewUpdatePayload(unowned.chat)))
	require.Equal(t, 0, unowned.fetches, "null worker hint against a null local worker")
}

// TestLoopDroppedHints: a later hint converges to the database state even
// when the hints in between were lost; the lost hint arriving late is a
// no-op.
func TestLoopDroppedHints(t *testing.T) {
	t.Parallel()
	w := newWorld()
	w.tx(func() { w.message(store.RoleUser, "one") })
	h := newHarness(t, w)
	h.bootstrap()

	lost := w.tx(func() {
		w.message(store.RoleAssistant, "two")
		w.enqueue("queued")
	})
	last := w.tx(func() {
		w.message(store.RoleUser, "three")
		w.status(store.ChatStatusRunning)
	})
	events := h.sync(last)
	require.Equal(t, []string{tMessage, tMessage, tQueue, tStatus, tPreview}, kinds(events))
	require.Equal(t, []string{"two", "three"}, texts(events))

	w.fetches = 0
	require.Empty(t, h.sync(lost))
	require.Zero(t, w.fetches, "an older snapshot_version is not fetched")
}

// TestLoopDuplicateHints: the same hint twice (pubsub and poller) emits
// once and fetches once.
func TestLoopDuplicateHints(t *testing.T) {
	t.Parallel()
	w := newWorld()
	h := newHarness(t, w)
	h.bootstrap()
	hint := w.tx(func() {
		w.message(store.RoleUser, "one")
		w.status(store.ChatStatusRunning)
	})
	w.fetches = 0
	require.Equal(t, []string{tMessage, tStatus, tPreview}, kinds(h.sync(hint)))
	require.Empty(t, h.sync(hint))
	require.Empty(t, h.sync(stream.HintsFromChat(w.chat)))
	require.Empty(t, h.sync(stream.HintsFromPayload(chatstate.NewUpdatePayload(w.chat))))
	require.Equal(t, 1, w.fetches)
}

// TestLoopReorderedHints: an older snapshot after a newer one is a no-op,
// and a fetch that reads an older snapshot than the local one emits nothing
// and does not move the cursors.
func TestLoopReorderedHints(t *testing.T) {
	t.Parallel()
	w := newWorld()
	h := newHarness(t, w)
	h.bootstrap()
	older := w.tx(func() { w.message(store.RoleUser, "one") })
	newer := w.tx(func() { w.message(store.RoleAssistant, "two") })
	require.Equal(t, []string{"one", "two"}, texts(h.sync(newer)))
	w.fetches = 0
	require.Empty(t, h.sync(older))
	require.Zero(t, w.fetches)

	// A read older than what the loop has applied.
	before, err := w.Fetch(context.Background(), w.chat.ID, stream.Cursors{HistoryVersion: w.chat.HistoryVersion, QueueVersion: w.chat.QueueVersion})
	require.NoError(t, err)
	hint := w.tx(func() { w.message(store.RoleUser, "three") })
	w.lagging = &before
	w.fetches = 0
	require.Empty(t, h.sync(hint), "the fetched snapshot is not newer")
	require.Equal(t, 1, w.fetches)
	// Nothing moved: the real state is still news.
	w.lagging = nil
	require.Equal(t, []string{"three"}, texts(h.sync(hint)))
}

// TestLoopFetchError: a failed fetch changes nothing; a failed bootstrap is
// retried as a bootstrap.
func TestLoopFetchError(t *testing.T) {
	t.Parallel()
	w := newWorld()
	w.tx(func() { w.message(store.RoleUser, "one") })
	h := newHarness(t, w)
	boom := errors.New("database is down")
	w.err = boom
	_, err := h.loop.Sync(context.Background(), w, stream.Hints{})
	require.ErrorIs(t, err, boom)
	w.err = nil
	require.Equal(t, []string{tMessage, tQueue, tStatus, tPreview}, kinds(h.sync(stream.Hints{})))

	hint := w.tx(func() { w.message(store.RoleAssistant, "two") })
	w.err = boom
	_, err = h.loop.Sync(context.Background(), w, hint)
	require.ErrorIs(t, err, boom)
	w.err = nil
	require.Equal(t, []string{"two"}, texts(h.sync(hint)), "the failed sync moved nothing")
}

// TestLoopDecodeErrors: corrupt JSON payloads fail the Sync.
func TestLoopDecodeErrors(t *testing.T) {
	t.Parallel()
	w := newWorld()
	w.tx(func() {
		w.message(store.RoleUser, "hi")
		w.status(store.ChatStatusError)
		w.chat.LastError = json.RawMessage(`{"message":`)
	})
	_, err := newHarness(t, w).loop.Sync(context.Background(), w, stream.Hints{})
	require.ErrorContains(t, err, "last_error")

	w = newWorld()
	w.tx(func() {
		w.status(store.ChatStatusRunning)
		w.chat.RetryState, w.chat.RetryStateVersion = json.RawMessage(`[`), w.snap()
	})
	_, err = newHarness(t, w).loop.Sync(context.Background(), w, stream.Hints{})
	require.ErrorContains(t, err, "retry_state")
}

// streaming is a world whose chat streams attempt 1 on worker w1.
func streaming(t *testing.T) (*world, *harness, uuid.NullUUID) {
	w1 := newWorkerID()
	w := newWorld()
	w.tx(func() {
		w.message(store.RoleUser, "hi")
		w.status(store.ChatStatusRunning)
		w.own(w1)
	})
	w.tx(func() { w.attempt() })
	h := newHarness(t, w)
	h.bootstrap()
	return w, h, w1
}

// TestLoopPartSequence: parts of the current episode are accepted in seq
// order; duplicates are ignored; a gap is ErrSeqGap.
func TestLoopPartSequence(t *testing.T) {
	t.Parallel()
	_, h, _ := streaming(t)
	hv, ga := h.episode()
	for seq := int64(1); seq <= 3; seq++ {
		e := h.part(hv, ga, seq, "t")
		require.Equal(t, seq, e.MessagePart.Seq)
	}
	h.dropped(hv, ga, 2)
	h.dropped(hv, ga, 3)
	_, err := h.loop.Part(hv, ga, 5, sdk.ChatMessagePart{Type: sdk.PartText, Text: "gap"})
	require.ErrorIs(t, err, stream.ErrSeqGap)
	h.part(hv, ga, 4, "t")
}

// TestLoopPartOtherEpisode: parts of another history version or attempt
// are dropped and never count as a gap.
func TestLoopPartOtherEpisode(t *testing.T) {
	t.Parallel()
	_, h, _ := streaming(t)
	hv, ga := h.episode()
	h.dropped(hv, ga+1, 1)
	h.dropped(hv, ga+1, 9)
	h.dropped(hv-1, ga, 9)
	h.dropped(hv+1, ga, 1)
	h.dropped(hv, 0, 1)
	h.part(hv, ga, 1, "first")
	h.dropped(hv, ga+1, 2)
	h.part(hv, ga, 2, "second")
}

// TestLoopAttemptRetired: a retry state or an error retires the attempt
// (its parts are dropped before the seq check); cancelling the retry keeps
// it retired; a new attempt or history version clears it.
func TestLoopAttemptRetired(t *testing.T) {
	t.Parallel()
	t.Run("retry state, cancelled, new attempt", func(t *testing.T) {
		t.Parallel()
		w, h, w1 := streaming(t)
		hv, ga := h.episode()
		h.part(hv, ga, 1, "a")
		require.Equal(t, []string{tRetry}, kinds(h.sync(w.tx(func() { w.retry(testRetry) }))))
		h.dropped(hv, ga, 2)
		h.dropped(hv, ga, 9) // retired parts never count as a gap

		require.Empty(t, h.sync(w.tx(func() { w.retry(nil) })), "a cleared retry emits nothing")
		h.dropped(hv, ga, 2)

		require.Equal(t, []string{tPreview}, kinds(h.sync(w.tx(func() { w.attempt() }))))
		require.Equal(t, stream.Target{WorkerID: w1, HistoryVersion: hv, GenerationAttempt: ga + 1}, h.targets[len(h.targets)-1])
		h.dropped(hv, ga, 2)
		h.part(hv, ga+1, 1, "b")
	})
	t.Run("retry version moved in the same episode", func(t *testing.T) {
		t.Parallel()
		w, h, _ := streaming(t)
		hv, ga := h.episode()
		h.part(hv, ga, 1, "a")
		// Set and cleared between two reads: only the version moved.
		require.Empty(t, h.sync(w.tx(func() { w.chat.RetryStateVersion = w.snap() })))
		h.dropped(hv, ga, 2)
	})
	t.Run("error, then a new turn", func(t *testing.T) {
		t.Parallel()
		w, h, _ := streaming(t)
		hv, ga := h.episode()
		h.part(hv, ga, 1, "a")
		require.Equal(t, []string{tStatus, tError}, kinds(h.sync(w.tx(func() { w.fail(testError) }))))
		h.dropped(hv, ga, 2)
		h.dropped(hv, ga, 5)

		require.Equal(t, []string{tMessage, tStatus, tPreview}, kinds(h.sync(w.tx(func() {
			w.message(store.RoleUser, "try again")
			w.status(store.ChatStatusRunning)
		}))))
		require.Equal(t, []string{tPreview}, kinds(h.sync(w.tx(func() { w.attempt() }))))
		hv2, ga2 := h.episode()
		h.part(hv2, ga2, 1, "b")
	})
	t.Run("error in the same episode stays retired until a new attempt", func(t *testing.T) {
		t.Parallel()
		w, h, _ := streaming(t)
		hv, ga := h.episode()
		h.sync(w.tx(func() { w.fail(testError) }))
		// Still in error: a queue change keeps the attempt retired.
		require.Equal(t, []string{tQueue}, kinds(h.sync(w.tx(func() { w.enqueue("later") }))))
		h.dropped(hv, ga, 1)
	})
}

// TestLoopPreviewReset: preview_reset when the history version changes or
// a new non-zero attempt starts; it restarts the part sequence.
func TestLoopPreviewReset(t *testing.T) {
	t.Parallel()
	w, h, w1 := streaming(t)
	hv, ga := h.episode()
	h.part(hv, ga, 1, "a")
	h.part(hv, ga, 2, "b")

	require.Equal(t, []string{tStatus}, kinds(h.sync(w.tx(func() { w.status(store.ChatStatusInterrupting) }))),
		"no preview_reset without a new episode")
	require.Equal(t, []string{tQueue}, kinds(h.sync(w.tx(func() { w.enqueue("q") }))))
	h.part(hv, ga, 3, "c")

	// A new attempt of the same history.
	require.Equal(t, []string{tStatus, tPreview}, kinds(h.sync(w.tx(func() {
		w.status(store.ChatStatusRunning)
		w.attempt()
	}))))
	h.part(hv, ga+1, 1, "a2")

	// History moves (the step committed): attempt 0, reset.
	events := h.sync(w.tx(func() { w.message(store.RoleAssistant, "a2b2") }))
	require.Equal(t, []string{tMessage, tPreview}, kinds(events))
	n := len(h.targets)
	require.Equal(t, stream.Target{WorkerID: w1, HistoryVersion: hv, GenerationAttempt: ga + 1}, h.targets[n-1],
		"attempt 0 does not configure the relay")

	// Attempt 0 -> 1 of the new history resets again; parts restart at 1.
	require.Equal(t, []string{tPreview}, kinds(h.sync(w.tx(func() { w.attempt() }))))
	hv2, ga2 := h.episode()
	h.part(hv2, ga2, 1, "x")

	// The same history going back to attempt 0 is not a new episode with
	// parts: no reset.
	require.Empty(t, h.sync(w.tx(func() { w.chat.GenerationAttempt = 0 })))
}

// TestLoopHistoryReset: a soft-deleted row makes the Sync emit
// history_reset and resend the whole active history; the known revisions
// are replaced by the resent ones.
func TestLoopHistoryReset(t *testing.T) {
	t.Parallel()
	w := newWorld()
	var third store.Message
	w.tx(func() {
		w.message(store.RoleUser, "one")
		w.message(store.RoleAssistant, "two")
		third = w.message(store.RoleUser, "three")
		w.message(store.RoleAssistant, "four")
	})
	h := newHarness(t, w)
	require.Equal(t, []string{tMessage, tMessage, tMessage, tMessage, tQueue, tStatus, tPreview}, kinds(h.bootstrap()),
		"no history_reset at bootstrap")

	events := h.sync(w.tx(func() {
		w.softDeleteFrom(third.ID)
		w.message(store.RoleUser, "three, edited")
		w.status(store.ChatStatusRunning)
	}))
	require.Equal(t, []string{tHistory, tMessage, tMessage, tMessage, tStatus, tPreview}, kinds(events))
	require.Equal(t, []string{"one", "two", "three, edited"}, texts(events))

	events = h.sync(w.tx(func() { w.message(store.RoleAssistant, "reply") }))
	require.Equal(t, []string{tMessage, tPreview}, kinds(events))
	require.Equal(t, []string{"reply"}, texts(events))
}

// sourceFunc is a Source with a scripted answer.
type sourceFunc func(c stream.Cursors) (stream.Snapshot, error)

func (f sourceFunc) Fetch(_ context.Context, _ uuid.UUID, c stream.Cursors) (stream.Snapshot, error) {
	return f(c)
}

// TestLoopMessageRevisions: message events only for visible rows whose
// revision is newer than the one already sent.
func TestLoopMessageRevisions(t *testing.T) {
	t.Parallel()
	w := newWorld()
	var one, two store.Message
	w.tx(func() {
		one = w.message(store.RoleUser, "one")
		two = w.message(store.RoleAssistant, "two")
	})
	h := newHarness(t, w)
	h.bootstrap()

	require.Equal(t, []string{"one, revised"}, texts(h.sync(w.tx(func() { w.edit(one.ID, "one, revised") }))))
	events := h.sync(w.tx(func() { w.message(store.RoleUser, "hidden", store.VisibilityModel) }))
	require.Equal(t, []string{tPreview}, kinds(events), "model-only rows are not shown")

	// A source that returns rows the loop already has at the same revision.
	chat := w.chat
	chat.SnapshotVersion++
	chat.HistoryVersion = chat.SnapshotVersion
	three := store.Message{ID: 99, ChatID: chat.ID, Role: store.RoleUser, Content: json.RawMessage(`[{"type":"text","text":"three"}]`),
		Visibility: store.VisibilityBoth, Revision: chat.SnapshotVersion}
	hiddenUser := three
	hiddenUser.ID, hiddenUser.Visibility = 100, store.VisibilityModel
	src := sourceFunc(func(stream.Cursors) (stream.Snapshot, error) {
		return stream.Snapshot{Chat: chat, Changed: []store.Message{two, hiddenUser, three}}, nil
	})
	events, err := h.loop.Sync(context.Background(), src, stream.HintsFromChat(chat))
	require.NoError(t, err)
	require.Equal(t, []string{"three"}, texts(events))
}

// TestLoopRelayTargets: the relay is pointed at (worker, history, attempt)
// only for attempts > 0, and at nothing when the chat has no worker.
func TestLoopRelayTargets(t *testing.T) {
	t.Parallel()
	w1, w2 := newWorkerID(), newWorkerID()
	w := newWorld()
	h := newHarness(t, w)
	h.bootstrap()
	require.Equal(t, []stream.Target{{}}, h.targets)

	h.sync(w.tx(func() {
		w.message(store.RoleUser, "hi")
		w.status(store.ChatStatusRunning)
	}))
	require.Equal(t, stream.Target{}, h.targets[len(h.targets)-1])
	n := len(h.targets)

	h.sync(w.tx(func() { w.own(w1) }))
	require.Len(t, h.targets, n, "owned at attempt 0: nothing to relay yet")

	hv := w.chat.HistoryVersion
	h.sync(w.tx(func() { w.attempt() }))
	require.Equal(t, stream.Target{WorkerID: w1, HistoryVersion: hv, GenerationAttempt: 1}, h.targets[len(h.targets)-1])
	h.sync(w.tx(func() { w.own(w2) }))
	require.Equal(t, stream.Target{WorkerID: w2, HistoryVersion: hv, GenerationAttempt: 1}, h.targets[len(h.targets)-1])
	h.sync(w.tx(func() { w.attempt() }))
	require.Equal(t, stream.Target{WorkerID: w2, HistoryVersion: hv, GenerationAttempt: 2}, h.targets[len(h.targets)-1])
	h.sync(w.tx(func() {
		w.own(uuid.NullUUID{})
		w.status(store.ChatStatusWaiting)
	}))
	require.Equal(t, stream.Target{}, h.targets[len(h.targets)-1])
}

// TestLoopRetryOnlyWhileRunning: a retry event needs a retry state and the
// running status.
func TestLoopRetryOnlyWhileRunning(t *testing.T) {
	t.Parallel()
	w, h, _ := streaming(t)
	raw, err := json.Marshal(testRetry)
	require.NoError(t, err)
	events := h.sync(w.tx(func() {
		w.chat.Status = store.ChatStatusInterrupting
		w.chat.RetryState, w.chat.RetryStateVersion = raw, w.snap()
	}))
	require.Equal(t, []string{tStatus}, kinds(events))
	events = h.sync(w.tx(func() {
		w.chat.Status = store.ChatStatusRunning
		w.chat.RetryStateVersion = w.snap()
	}))
	require.Equal(t, []string{tStatus, tRetry}, kinds(events))
	require.Empty(t, h.sync(w.tx(func() { w.retry(nil) })))
}

// TestLoopErrorAndActionOncePerHistory: error and action_required are sent
// once per history version.
func TestLoopErrorAndActionOncePerHistory(t *testing.T) {
	t.Parallel()
	t.Run("error", func(t *testing.T) {
		t.Parallel()
		w, h, _ := streaming(t)
		require.Equal(t, []string{tStatus, tError}, kinds(h.sync(w.tx(func() { w.fail(testError) }))))
		require.Equal(t, []string{tQueue}, kinds(h.sync(w.tx(func() { w.enqueue("q") }))))
		events := h.sync(w.tx(func() { w.message(store.RoleAssistant, "note") }))
		require.Equal(t, []string{tMessage, tError, tPreview}, kinds(events), "a new history in error is a new error")
	})
	t.Run("action required", func(t *testing.T) {
		t.Parallel()
		w, h, _ := streaming(t)
		events := h.sync(w.tx(func() {
			w.message(store.RoleAssistant, "calling")
			w.requireAction(testCalls[0])
		}))
		require.Equal(t, []string{tMessage, tStatus, tAction, tPreview}, kinds(events))
		require.Equal(t, []string{tQueue}, kinds(h.sync(w.tx(func() { w.enqueue("q") }))))
		require.Equal(t, []string{tStatus}, kinds(h.sync(w.tx(func() { w.status(store.ChatStatusRunning) }))))
		require.Equal(t, []string{tStatus}, kinds(h.sync(w.tx(func() { w.requireAction(testCalls...) }))),
			"same history version: already sent")
	})
}
