package stream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/partbuf"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// encodeParts are parts whose JSON exercises the encoder: escapes, HTML
// characters, raw arguments with spaces, pointers.
func encodeParts() []sdk.ChatMessagePart {
	id := uuid.New()
	at := time.Date(2026, 12, 1, 18, 0, 0, 123456789, time.FixedZone("x", 3600))
	return []sdk.ChatMessagePart{
		{Type: sdk.PartText, Text: "plain"},
		{Type: sdk.PartText, Text: "<b>&\"quoted\"</b>\n\t\u2028 é 🙂"},
		{Type: sdk.PartText},
		{Type: "tool-call", ToolCallID: "c1", ToolName: "run", Args: json.RawMessage(`{ "a" : [1, 2] , "b":"<x>" }`), ArgsDelta: "{\"a"},
		{Type: "tool-result", ToolCallID: "c1", Result: json.RawMessage(`"ok"`), IsError: true, ProviderExecuted: true, CreatedAt: &at, CompletedAt: &at},
		{Type: "file", FileID: &id, MediaType: "image/png", Name: "a b.png", URL: "https://x/?a=1&b=2", Title: "t"},
	}
}

// The message_part events the stream builds from the buffer's JSON are
// byte for byte what json.Marshal makes of the events, and the parts
// endpoint's frames what it makes of sdk.PartFrame: encoding once changes
// nothing on the wire.
func TestPartEncodingIsTheMarshalledEvent(t *testing.T) {
	t.Parallel()
	chatID := uuid.New()
	buf := partbuf.New(partbuf.Config{})
	defer buf.Stop()
	ep := partbuf.Episode{ChatID: chatID, HistoryVersion: 12, GenerationAttempt: 3}
	require.NoError(t, buf.CreateEpisode(ep))
	f := buf.Follow(ep)
	defer f.Close()
	for _, part := range encodeParts() {
		require.NoError(t, buf.AddPart(ep, part))
	}
	parts, _, _ := f.Next()
	require.Len(t, parts, len(encodeParts()))
	prefix := partEventPrefix(chatID)
	for i, p := range parts {
		want, err := json.Marshal(sdk.ChatStreamEvent{Type: sdk.StreamMessagePart, ChatID: chatID, MessagePart: &sdk.ChatStreamMessagePart{
			Role: store.RoleAssistant, Part: p.Content, HistoryVersion: 12, GenerationAttempt: 3, Seq: p.Seq,
		}})
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendPartEvent(nil, prefix, relayPart{12, 3, p.Seq, p.JSON})), "part %d", i)

		want, err = json.Marshal(sdk.PartFrame{HistoryVersion: 12, GenerationAttempt: 3, Seq: p.Seq, Part: p.Content})
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendPartFrame(nil, ep, p)), "part %d", i)
	}
	// A relayed frame without a part reads as the zero part, as it did
	// when parts were decoded.
	want, err := json.Marshal(sdk.ChatStreamEvent{Type: sdk.StreamMessagePart, ChatID: chatID, MessagePart: &sdk.ChatStreamMessagePart{
		Role: store.RoleAssistant, HistoryVersion: 1, GenerationAttempt: 1, Seq: 1,
	}})
	require.NoError(t, err)
	require.Equal(t, string(want), string(appendPartEvent(nil, prefix, relayPart{1, 1, 1, nil})))
}

// The writer cuts its batch into frames within the limits whose events,
// in order, are the marshalled events.
func TestWriterFrames(t *testing.T) {
	t.Parallel()
	chatID := uuid.New()
	big := strings.Repeat("x", MaxFrameBytes/3)
	var events []sdk.ChatStreamEvent
	for i := range 700 {
		e := sdk.ChatStreamEvent{Type: sdk.StreamStatus, ChatID: chatID, Status: &sdk.ChatStreamStatus{Status: sdk.ChatStatusRunning}}
		if i%100 == 7 {
			e = sdk.ChatStreamEvent{Type: sdk.StreamError, ChatID: chatID, Error: &sdk.ChatError{Message: big}}
		}
		events = append(events, e)
	}
	frames := writeCapture(t, chatID, func(ctx context.Context, w *writer) error { return w.write(ctx, events) })
	var got []json.RawMessage
	for _, data := range frames {
		require.LessOrEqual(t, len(data), MaxFrameBytes)
		var frame []json.RawMessage
		require.NoError(t, json.Unmarshal(data, &frame))
		require.NotEmpty(t, frame)
		require.LessOrEqual(t, len(frame), MaxEventsPerFrame)
		got = append(got, frame...)
	}
	require.Len(t, got, len(events))
	require.Greater(t, len(frames), 3, "split by count and by size")
	for i, e := range events {
		want, err := json.Marshal(e)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got[i]), "event %d", i)
	}
}

// A viewer of a local worker, or of no worker, gets no relay channel: it
// is made by the first remote connection.
func TestRelayChannelOnlyForRemote(t *testing.T) {
	t.Parallel()
	chatID := uuid.New()
	local := uuid.New()
	b := newPeer(t, chatID)
	wb := uuid.New()
	buf := partbuf.New(partbuf.Config{})
	defer buf.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRelay(ctx, chatID, buf, locator{local: local, peers: map[uuid.UUID]*peer{wb: b}}, clock.Real{}, quiet())
	defer r.stop()

	r.configure(Target{})
	require.Nil(t, r.out)
	r.configure(remoteTarget(local, 1, 1))
	require.Nil(t, r.out, "a local episode is followed without a channel")
	require.NotNil(t, r.localWake())
	r.configure(remoteTarget(wb, 1, 1))
	require.NotNil(t, r.out)
	require.Nil(t, r.localWake(), "the local follower is released")
}

// A message event whose content is held raw (wire.ToMessageRaw) encodes to
// the JSON of the same event with the content decoded, with the raw bytes
// in place; events without raw content encode as json.Marshal does.
func TestAppendEventSplicesRawContent(t *testing.T) {
	parts := encodeParts()
	content, err := json.Marshal(parts)
	require.NoError(t, err)
	uid := uuid.New()
	decoded := sdk.ChatMessage{
		ID: 3, ChatID: uuid.New(), CreatedBy: &uid, Role: "assistant", Content: parts,
		CreatedAt: time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC), RequestID: &uid,
	}
	raw := decoded
	raw.Content, raw.RawContent = nil, json.RawMessage(" \n"+string(content)+"\n")
	ev := func(m *sdk.ChatMessage) sdk.ChatStreamEvent {
		return sdk.ChatStreamEvent{Type: sdk.StreamMessage, ChatID: decoded.ChatID, Message: m}
	}

	prefix := []byte(`xx`)
	got, err := appendEvent(prefix, new(ev(&raw)))
	require.NoError(t, err)
	require.Equal(t, "xx", string(got[:2]), "appends")
	want, err := json.Marshal(ev(&decoded))
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got[2:]))
	require.True(t, json.Valid(got[2:]))
	require.Equal(t, json.RawMessage(" \n"+string(content)+"\n"), raw.RawContent, "the event is left as it was")

	// The same bytes through encoding/json (sdk.ChatMessage.MarshalJSON).
	viaJSON, err := json.Marshal(ev(&raw))
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(viaJSON))

	for _, e := range []sdk.ChatStreamEvent{ev(&decoded), {Type: sdk.StreamStatus, ChatID: decoded.ChatID, Status: &sdk.ChatStreamStatus{Status: sdk.ChatStatusWaiting}}} {
		got, err := appendEvent(nil, &e)
		require.NoError(t, err)
		want, err := json.Marshal(&e)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
}

// writeCapture runs fn with a writer whose peer records every frame, and
// returns the frames; the connection closes normally only when fn
// returns nil (the test fails otherwise).
func writeCapture(t *testing.T, chatID uuid.UUID, fn func(ctx context.Context, w *writer) error) [][]byte {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		if fn(r.Context(), &writer{conn: conn, partPrefix: partEventPrefix(chatID)}) == nil {
			conn.Close(websocket.StatusNormalClosure, "")
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), relayWait)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	defer conn.CloseNow()
	conn.SetReadLimit(4 << 20)
	var frames [][]byte
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			require.Equal(t, websocket.StatusNormalClosure, websocket.CloseStatus(err), "%v", err)
			return frames
		}
		frames = append(frames, data)
	}
}
