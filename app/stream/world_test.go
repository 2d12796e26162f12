package stream_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/stream"
	"github.com/chatd/chatd/store"
)

// world is an in-memory chat for Loop tests: a Source whose state tests
// change directly. Every transaction advances snapshot_version and stamps
// what it changed with it, as the database triggers do; Fetch reads the
// way the Source contract says (rows with a revision above the cursor, and
// the whole visible history at bootstrap or when one of them is
// soft-deleted).
type world struct {
	chat     store.Chat
	messages []store.Message
	queue    []store.QueuedMessage
	pending  []chatstate.ToolCall
	nextID   int64

	fetches int
	// lagging, when set, is what Fetch returns instead of the current state
	// (a read that is older than the hint that triggered it).
	lagging *stream.Snapshot
	// err, when set, fails Fetch.
	err error
}

var _ stream.Source = (*world)(nil)

func newWorld() *world {
	return &world{chat: store.Chat{ID: uuid.New(), Status: store.ChatStatusWaiting, SnapshotVersion: 1}}
}

// Fetch implements stream.Source.
func (w *world) Fetch(_ context.Context, chatID uuid.UUID, c stream.Cursors) (stream.Snapshot, error) {
	w.fetches++
	if w.err != nil {
		return stream.Snapshot{}, w.err
	}
	if w.lagging != nil {
		return *w.lagging, nil
	}
	if chatID != w.chat.ID {
		return stream.Snapshot{}, store.ErrNotFound
	}
	s := stream.Snapshot{Chat: w.chat}
	if w.chat.HistoryVersion > c.HistoryVersion {
		for _, m := range w.messages {
			if m.Revision > c.HistoryVersion {
				s.Changed = append(s.Changed, m)
			}
		}
		if c.Bootstrap || slices.ContainsFunc(s.Changed, func(m store.Message) bool { return m.Deleted }) {
			s.Full = true
			for _, m := range w.messages {
				if !m.Deleted && m.Visibility != store.VisibilityModel {
					s.All = append(s.All, m)
				}
			}
		}
	}
	if w.chat.QueueVersion > c.QueueVersion || c.Bootstrap {
		s.Queue = slices.Clone(w.queue)
	}
	if w.chat.Status == store.ChatStatusRequiresAction {
		s.Pending = slices.Clone(w.pending)
	}
	return s, nil
}

// tx runs fn as one transaction and returns the hints its notification
// carries.
func (w *world) tx(fn func()) stream.Hints {
	w.chat.SnapshotVersion++
	fn()
	return stream.HintsFromChat(w.chat)
}

func (w *world) snap() int64 { return w.chat.SnapshotVersion }

// touchHistory moves history_version; a new history starts at attempt 0,
// which clears any retry state.
func (w *world) touchHistory() {
	w.chat.HistoryVersion = w.snap()
	w.setAttempt(0)
}

func (w *world) setAttempt(n int64) {
	if w.chat.GenerationAttempt != n && w.chat.RetryState != nil {
		w.chat.RetryState, w.chat.RetryStateVersion = nil, w.snap()
	}
	w.chat.GenerationAttempt = n
}

// message appends a row (visibility both unless given).
func (w *world) message(role, text string, visibility ...string) store.Message {
	w.nextID++
	content, _ := json.Marshal([]sdk.ChatMessagePart{{Type: sdk.PartText, Text: text}})
	m := store.Message{ID: w.nextID, ChatID: w.chat.ID, Role: role, Content: content, Visibility: store.VisibilityBoth, Revision: w.snap()}
	if len(visibility) > 0 {
		m.Visibility = visibility[0]
	}
	w.messages = append(w.messages, m)
	w.touchHistory()
	return m
}

// edit rewrites a row's text in place.
func (w *world) edit(id int64, text string) {
	for i := range w.messages {
		if w.messages[i].ID == id {
			w.messages[i].Content, _ = json.Marshal([]sdk.ChatMessagePart{{Type: sdk.PartText, Text: text}})
			w.messages[i].Revision = w.snap()
		}
	}
	w.touchHistory()
}

// softDeleteFrom soft-deletes id and every later row.
func (w *world) softDeleteFrom(id int64) {
	for i := range w.messages {
		if w.messages[i].ID >= id && !w.messages[i].Deleted {
			w.messages[i].Deleted, w.messages[i].Revision = true, w.snap()
		}
	}
	w.touchHistory()
}

func (w *world) enqueue(text string) store.QueuedMessage {
	w.nextID++
	content, _ := json.Marshal([]sdk.ChatMessagePart{{Type: sdk.PartText, Text: text}})
	q := store.QueuedMessage{ID: w.nextID, ChatID: w.chat.ID, Position: int64(len(w.queue)), Content: content}
	w.queue = append(w.queue, q)
	w.chat.QueueVersion = w.snap()
	return q
}

// status sets the status; leaving running clears the retry state.
func (w *world) status(s store.ChatStatus) {
	w.chat.Status = s
	if s != store.ChatStatusRunning && w.chat.RetryState != nil {
		w.chat.RetryState, w.chat.RetryStateVersion = nil, w.snap()
	}
	if s != store.ChatStatusError {
		w.chat.LastError = nil
	}
}

func (w *world) own(worker uuid.NullUUID) { w.chat.WorkerID = worker }

func (w *world) attempt() { w.setAttempt(w.chat.GenerationAttempt + 1) }

// retry sets (or with nil clears) the retry state.
func (w *world) retry(r *sdk.ChatRetry) {
	w.chat.RetryState = nil
	if r != nil {
		w.chat.RetryState, _ = json.Marshal(r)
	}
	w.chat.RetryStateVersion = w.snap()
}

func (w *world) fail(e sdk.ChatError) {
	w.status(store.ChatStatusError)
	w.chat.LastError, _ = json.Marshal(e)
}

func (w *world) requireAction(calls ...chatstate.ToolCall) {
	w.status(store.ChatStatusRequiresAction)
	w.pending = calls
}

// harness is a Loop over a world, recording relay targets.
type harness struct {
	t       *testing.T
	w       *world
	loop    *stream.Loop
	targets []stream.Target
}

func newHarness(t *testing.T, w *world) *harness {
	h := &harness{t: t, w: w}
	h.loop = stream.NewLoop(w.chat.ID, func(tg stream.Target) { h.targets = append(h.targets, tg) })
	return h
}

// sync runs one Sync and returns its events.
func (h *harness) sync(hints stream.Hints) []sdk.ChatStreamEvent {
	h.t.Helper()
	events, err := h.loop.Sync(context.Background(), h.w, hints)
	require.NoError(h.t, err)
	for _, e := range events {
		require.Equal(h.t, h.w.chat.ID, e.ChatID, "every event names the chat")
	}
	return events
}

// bootstrap runs the first Sync.
func (h *harness) bootstrap() []sdk.ChatStreamEvent {
	h.t.Helper()
	return h.sync(stream.Hints{})
}

// part applies one part and expects it accepted.
func (h *harness) part(hv, ga, seq int64, text string) sdk.ChatStreamEvent {
	h.t.Helper()
	e, err := h.loop.Part(hv, ga, seq, sdk.ChatMessagePart{Type: sdk.PartText, Text: text})
	require.NoError(h.t, err)
	require.NotNil(h.t, e, "part (%d, %d, %d) accepted", hv, ga, seq)
	return *e
}

// dropped applies one part and expects it silently rejected.
func (h *harness) dropped(hv, ga, seq int64) {
	h.t.Helper()
	e, err := h.loop.Part(hv, ga, seq, sdk.ChatMessagePart{Type: sdk.PartText, Text: "x"})
	require.NoError(h.t, err, "a rejected part is not an error")
	require.Nil(h.t, e, "part (%d, %d, %d) dropped", hv, ga, seq)
}

// episode is the chat's current (history_version, generation_attempt).
func (h *harness) episode() (int64, int64) {
	return h.w.chat.HistoryVersion, h.w.chat.GenerationAttempt
}

// kinds lists the events' types.
func kinds(events []sdk.ChatStreamEvent) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		out = append(out, e.Type)
	}
	return out
}

// texts lists the first text of each message event.
func texts(events []sdk.ChatStreamEvent) []string {
	var out []string
	for _, e := range events {
		if e.Type == sdk.StreamMessage {
			text := ""
			if parts, _ := e.Message.Parts(); len(parts) > 0 {
				text = parts[0].Text
			}
			out = append(out, text)
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func newWorkerID() uuid.NullUUID { return uuid.NullUUID{UUID: uuid.New(), Valid: true} }
