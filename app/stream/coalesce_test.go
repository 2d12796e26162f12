package stream

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

func TestDelta(t *testing.T) {
	t.Parallel()
	for part, want := range map[string]bool{
		`{"type":"text","text":"a"}`:              true,
		`{"type":"reasoning","text":"a b"}`:       true,
		`{"type":"text","text":""}`:               true,
		`{"type":"text","text":"a\""}`:            true, // an escaped quote ends nothing
		`{"type":"text","text":"a\\"}`:            true, // an escaped backslash
		`{"type":"text","text":"\u003c\u2028🙂"}`:  true,
		`{"type":"text","text":"a\"}`:             false, // not JSON: the close is escaped
		`{"type":"text"}`:                         false, // no text
		`{"type":"text","text":"a","name":"b"}`:   false, // another field after the text
		`{"type":"text","text":"a\","name":"b"}`:  false, // a quote inside the body: not one string
		`{"type":"tool-call","tool_call_id":"c"}`: false,
		`{"type":"text","text":"`:                 false,
		`{"type":"text","text":"}`:                false,
		`{"type":"file","text":"a"}`:              false,
		` {"type":"text","text":"a"}`:             false,
	} {
		_, ok := delta([]byte(part))
		require.Equal(t, want, ok, "%s", part)
	}
}

// preview is what a client builds from message_part events, as
// web/static/js/state.js does: text and reasoning deltas append to a
// trailing part of their type, other parts are kept as they are; it
// checks that seq only increases and returns the last.
func preview(t *testing.T, frames [][]byte) (parts []sdk.ChatMessagePart, events int, last int64) {
	t.Helper()
	for _, data := range frames {
		var frame []sdk.ChatStreamEvent
		require.NoError(t, json.Unmarshal(data, &frame), "%s", data)
		for _, e := range frame {
			require.Equal(t, sdk.StreamMessagePart, e.Type)
			require.Equal(t, store.RoleAssistant, e.MessagePart.Role)
			require.Greater(t, e.MessagePart.Seq, last)
			last = e.MessagePart.Seq
			events++
			p := e.MessagePart.Part
			if n := len(parts); n > 0 && (p.Type == sdk.PartText || p.Type == sdk.PartReasoning) && parts[n-1].Type == p.Type {
				parts[n-1].Text += p.Text
				continue
			}
			parts = append(parts, p)
		}
	}
	return parts, events, last
}

// relayed encodes parts as the buffer does, numbered from seq 1 of
// episode (0, 0), the one a new loop accepts.
func relayed(t *testing.T, parts []sdk.ChatMessagePart) []relayPart {
	t.Helper()
	out := make([]relayPart, len(parts))
	for i, p := range parts {
		b, err := json.Marshal(p)
		require.NoError(t, err)
		out[i] = relayPart{Seq: int64(i + 1), Part: b}
	}
	return out
}

// Parts that waited for a viewer go out with each run of text deltas and
// of reasoning deltas merged into one event carrying the last seq; the
// preview a client builds from them is the one it builds from the parts
// one by one, and a part that is not a bare delta is never merged.
func TestWriterMergesPendingDeltas(t *testing.T) {
	t.Parallel()
	parts := []sdk.ChatMessagePart{
		{Type: sdk.PartReasoning, Text: "Let me "},
		{Type: sdk.PartReasoning, Text: "think."},
		{Type: sdk.PartText, Text: "<b>\"Hi\"</b> "},
		{Type: sdk.PartText, Text: "back\\slash \u2028 é 🙂"},
		{Type: sdk.PartText},
		{Type: sdk.PartText, Text: "and "},
		{Type: "tool-call", ToolCallID: "c1", ToolName: "run", ArgsDelta: `{"a"`},
		{Type: "tool-call", ToolCallID: "c1", ArgsDelta: `:1}`},
		{Type: sdk.PartText, Text: "after"},
		{Type: sdk.PartText, Text: " the call", Name: "not a bare delta"},
		{Type: sdk.PartText, Text: "."},
	}
	chatID := uuid.New()
	frames := writeCapture(t, chatID, func(ctx context.Context, w *writer) error {
		return w.writeParts(ctx, NewLoop(chatID, nil), relayed(t, parts))
	})
	require.Len(t, frames, 1)
	got, events, last := preview(t, frames)
	want, n, _ := preview(t, oneByOne(t, chatID, parts))
	require.Equal(t, want, got)
	require.Equal(t, int64(len(parts)), last, "the last event carries the last seq")
	require.Equal(t, len(parts), n)
	// reasoning, text (2 deltas), the part without text, text, 2 tool
	// calls, text, the part with a name, text.
	require.Equal(t, 9, events)
}

// oneByOne writes each part alone, as to a viewer that keeps up.
func oneByOne(t *testing.T, chatID uuid.UUID, parts []sdk.ChatMessagePart) [][]byte {
	t.Helper()
	frames := writeCapture(t, chatID, func(ctx context.Context, w *writer) error {
		loop := NewLoop(chatID, nil)
		for _, p := range relayed(t, parts) {
			if err := w.writeParts(ctx, loop, []relayPart{p}); err != nil {
				return err
			}
		}
		return nil
	})
	require.Len(t, frames, len(parts), "a frame per part")
	for i, p := range relayed(t, parts) {
		want := append(append([]byte{'['}, appendPartEvent(nil, partEventPrefix(chatID), p)...), ']')
		require.Equal(t, string(want), string(frames[i]), "each part goes out as it is")
	}
	return frames
}

// A merged event's text stays within maxMergedText; a long backlog is cut
// into several events, every byte of text in order.
func TestWriterMergeIsBounded(t *testing.T) {
	t.Parallel()
	var parts []sdk.ChatMessagePart
	var text strings.Builder
	for i := range 3000 {
		s := strings.Repeat(string(rune('a'+i%26)), 40)
		parts = append(parts, sdk.ChatMessagePart{Type: sdk.PartText, Text: s})
		text.WriteString(s)
	}
	chatID := uuid.New()
	frames := writeCapture(t, chatID, func(ctx context.Context, w *writer) error {
		return w.writeParts(ctx, NewLoop(chatID, nil), relayed(t, parts))
	})
	got, events, last := preview(t, frames)
	require.Equal(t, []sdk.ChatMessagePart{{Type: sdk.PartText, Text: text.String()}}, got)
	require.Equal(t, int64(3000), last)
	require.Equal(t, (3000*40+maxMergedText-1)/maxMergedText, events)
	for _, data := range frames {
		var frame []sdk.ChatStreamEvent
		require.NoError(t, json.Unmarshal(data, &frame))
		for _, e := range frame {
			require.LessOrEqual(t, len(e.MessagePart.Part.Text), maxMergedText)
		}
	}
}

// Parts the loop does not accept (a duplicate, another episode) are left
// out of a merge; the merged text is that of the accepted parts.
func TestWriterMergeSkipsRejected(t *testing.T) {
	t.Parallel()
	chatID := uuid.New()
	frames := writeCapture(t, chatID, func(ctx context.Context, w *writer) error {
		loop := NewLoop(chatID, nil)
		text := func(seq int64, s string) relayPart {
			b, _ := json.Marshal(sdk.ChatMessagePart{Type: sdk.PartText, Text: s})
			return relayPart{Seq: seq, Part: b}
		}
		if err := w.writeParts(ctx, loop, []relayPart{text(1, "a")}); err != nil {
			return err
		}
		other := text(1, "X")
		other.HistoryVersion = 9
		return w.writeParts(ctx, loop, []relayPart{text(1, "dup"), text(2, "b"), other, text(2, "dup"), text(3, "c")})
	})
	got, events, last := preview(t, frames)
	require.Equal(t, []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "abc"}}, got)
	require.Equal(t, 2, events)
	require.Equal(t, int64(3), last)
}
