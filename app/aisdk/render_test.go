package aisdk

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
)

// world builds stream events for the renderer.
type world struct{ chat uuid.UUID }

func (w world) message(id int64, role string, parts ...sdk.ChatMessagePart) sdk.ChatStreamEvent {
	raw, _ := json.Marshal(parts)
	return sdk.ChatStreamEvent{Type: sdk.StreamMessage, ChatID: w.chat, Message: &sdk.ChatMessage{ID: id, ChatID: w.chat, Role: role, RawContent: raw}}
}

func (w world) status(s sdk.ChatStatus) sdk.ChatStreamEvent {
	return sdk.ChatStreamEvent{Type: sdk.StreamStatus, Status: &sdk.ChatStreamStatus{Status: s}}
}

func (w world) queue(ids ...uuid.UUID) sdk.ChatStreamEvent {
	e := sdk.ChatStreamEvent{Type: sdk.StreamQueueUpdate, QueuedMessages: []sdk.ChatQueuedMessage{}}
	for _, id := range ids {
		e.QueuedMessages = append(e.QueuedMessages, sdk.ChatQueuedMessage{RequestID: &id})
	}
	return e
}

func part(p sdk.ChatMessagePart) sdk.ChatStreamEvent {
	return sdk.ChatStreamEvent{Type: sdk.StreamMessagePart, MessagePart: &sdk.ChatStreamMessagePart{Part: p}}
}

func text(s string) sdk.ChatMessagePart { return sdk.ChatMessagePart{Type: sdk.PartText, Text: s} }

type recorded struct{ chunks []Chunk }

func (r *recorded) emit(c Chunk) { r.chunks = append(r.chunks, c) }

func (r *recorded) types() []string {
	var out []string
	for _, c := range r.chunks {
		out = append(out, c.Type)
	}
	return out
}

// visibleText is the text the SDK shows after applying the chunks: deltas
// of the current step, dropped by reset-step.
func (r *recorded) visibleText() string {
	var done, step string
	for _, c := range r.chunks {
		switch c.Type {
		case ChunkTextDelta:
			step += c.Delta
		case ChunkResetStep:
			step = ""
		case ChunkFinishStep:
			done, step = done+step, ""
		}
	}
	return done + step
}

func TestRendererRetryResetsTheStep(t *testing.T) {
	w := world{chat: uuid.New()}
	rid := uuid.New()
	var rec recorded
	r := newRenderer(w.chat, Target{RequestID: uuid.NullUUID{UUID: rid, Valid: true}}, nil, rec.emit)
	user := w.message(1, "user", text("hi"))
	user.Message.RequestID = &rid
	require.NoError(t, r.apply([]sdk.ChatStreamEvent{user, w.queue(), w.status(sdk.ChatStatusRunning)}))
	require.NoError(t, r.apply([]sdk.ChatStreamEvent{part(text("Hel")), part(text("lo"))}))
	// The attempt fails and is retried: its parts are dropped.
	require.NoError(t, r.apply([]sdk.ChatStreamEvent{{Type: sdk.StreamPreviewReset}}))
	require.NoError(t, r.apply([]sdk.ChatStreamEvent{part(text("Hi"))}))
	require.NoError(t, r.apply([]sdk.ChatStreamEvent{w.message(2, "assistant", text("Hi there")), w.status(sdk.ChatStatusWaiting)}))
	require.True(t, r.done())
	require.Equal(t, []string{"start", "start-step", "text-start", "text-delta", "text-delta", "reset-step",
		"text-start", "text-delta", "text-delta", "text-end", "data-chatd-status", "finish-step", "finish"}, rec.types())
	require.Equal(t, "Hi there", rec.visibleText())
	require.Equal(t, "a-1", rec.chunks[0].MessageID)
	require.Equal(t, FinishStop, rec.chunks[len(rec.chunks)-1].FinishReason)
}

func TestRendererStoredStepThatDoesNotContinueThePreview(t *testing.T) {
	w := world{chat: uuid.New()}
	var rec recorded
	r := newRenderer(w.chat, Target{MessageID: 5}, nil, rec.emit)
	require.NoError(t, r.apply([]sdk.ChatStreamEvent{w.message(5, "user", text("q")), w.queue(), w.status(sdk.ChatStatusRunning)}))
	require.NoError(t, r.apply([]sdk.ChatStreamEvent{part(text("draft"))}))
	require.NoError(t, r.apply([]sdk.ChatStreamEvent{w.message(6, "assistant", text("final")), w.status(sdk.ChatStatusWaiting)}))
	require.Contains(t, rec.types(), ChunkResetStep)
	require.Equal(t, "final", rec.visibleText())
}

func TestRendererWaitsForTheQueue(t *testing.T) {
	w := world{chat: uuid.New()}
	rid := uuid.New()
	var rec recorded
	r := newRenderer(w.chat, Target{RequestID: uuid.NullUUID{UUID: rid, Valid: true}}, nil, rec.emit)
	// Another turn runs; ours waits in the queue: its parts are not ours.
	require.NoError(t, r.apply([]sdk.ChatStreamEvent{w.message(1, "user", text("first")), w.queue(rid), w.status(sdk.ChatStatusRunning)}))
	require.NoError(t, r.apply([]sdk.ChatStreamEvent{part(text("not ours"))}))
	require.Equal(t, []string{ChunkDataQueue}, rec.types())
	// Promoted: the first turn's reply, then ours.
	mine := w.message(3, "user", text("second"))
	mine.Message.RequestID = &rid
	require.NoError(t, r.apply([]sdk.ChatStreamEvent{w.message(2, "assistant", text("not ours")), mine, w.queue()}))
	require.NoError(t, r.apply([]sdk.ChatStreamEvent{part(text("ours"))}))
	require.NoError(t, r.apply([]sdk.ChatStreamEvent{w.message(4, "assistant", text("ours")), w.status(sdk.ChatStatusWaiting)}))
	require.Equal(t, "a-3", rec.chunks[1].MessageID)
	require.Equal(t, "ours", rec.visibleText())
	require.True(t, r.done())
}

func TestRendererMessageGone(t *testing.T) {
	w := world{chat: uuid.New()}
	var rec recorded
	r := newRenderer(w.chat, Target{RequestID: uuid.NullUUID{UUID: uuid.New(), Valid: true}}, nil, rec.emit)
	require.NoError(t, r.apply([]sdk.ChatStreamEvent{w.message(1, "user", text("other")), w.queue(), w.status(sdk.ChatStatusWaiting)}))
	require.True(t, r.done())
	require.Equal(t, []string{ChunkError}, rec.types())
}

func TestRendererErrorAndToolCalls(t *testing.T) {
	w := world{chat: uuid.New()}
	var rec recorded
	r := newRenderer(w.chat, Target{MessageID: 1}, map[string]bool{"mine": true}, rec.emit)
	call := sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: "c1", ToolName: "mine", Args: json.RawMessage(`{"a":1}`)}
	srv := sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: "c2", ToolName: "server", Args: json.RawMessage(`{}`)}
	res := sdk.ChatMessagePart{Type: sdk.PartToolResult, ToolCallID: "c2", ToolName: "server", Result: json.RawMessage(`{"error":"boom"}`), IsError: true}
	failed := sdk.ChatStreamEvent{Type: sdk.StreamError, Error: &sdk.ChatError{Message: "the model is overloaded"}}
	require.NoError(t, r.apply([]sdk.ChatStreamEvent{w.message(1, "user", text("q")), w.message(2, "assistant", call, srv),
		w.message(3, "tool", res), w.queue(), w.status(sdk.ChatStatusError), failed}))
	require.Equal(t, []string{"start", "start-step", "tool-input-start", "tool-input-available", "tool-input-start", "tool-input-available",
		"tool-output-error", "finish-step", "error", "finish"}, rec.types())
	require.False(t, rec.chunks[3].Dynamic, "the app's own tool is static")
	require.True(t, rec.chunks[5].Dynamic, "a server tool is dynamic")
	require.Equal(t, "boom", rec.chunks[6].ErrorText)
	require.Equal(t, "the model is overloaded", rec.chunks[8].ErrorText)
	require.Equal(t, FinishError, rec.chunks[9].FinishReason)
}

// The stream shows the chat's latest state: a quick interruption can go
// from running to waiting with no "interrupting" between two events. The
// request's durable outcome still says how the turn ended.
func TestRendererInterruptionPassedOverByTheStream(t *testing.T) {
	for _, outcome := range []bool{true, false} {
		w := world{chat: uuid.New()}
		rid := uuid.New()
		var rec recorded
		r := newRenderer(w.chat, Target{RequestID: uuid.NullUUID{UUID: rid, Valid: true}}, nil, rec.emit)
		var asked uuid.UUID
		r.interrupted = func(id uuid.UUID) bool { asked = id; return outcome }
		user := w.message(1, "user", text("hi"))
		user.Message.RequestID = &rid
		require.NoError(t, r.apply([]sdk.ChatStreamEvent{user, w.queue(), w.status(sdk.ChatStatusRunning)}))
		require.NoError(t, r.apply([]sdk.ChatStreamEvent{part(text("Hel"))}))
		require.NoError(t, r.apply([]sdk.ChatStreamEvent{w.message(2, "assistant", text("Hel")), w.status(sdk.ChatStatusWaiting)}))
		require.True(t, r.done())
		require.Equal(t, rid, asked)
		want := FinishStop
		if outcome {
			want = FinishInterrupted
			require.Contains(t, rec.types(), ChunkAbort)
		}
		require.Equal(t, want, rec.chunks[len(rec.chunks)-1].FinishReason)
	}
}
