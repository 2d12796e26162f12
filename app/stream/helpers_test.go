package stream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/demo"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/stream"
	"github.com/chatd/chatd/store"
)

// waitTimeout bounds every wait of the end-to-end tests.
const waitTimeout = 20 * time.Second

// testPollInterval makes the sync poller converge quickly.
const testPollInterval = 200 * time.Millisecond

// replica is one running app behind its own HTTP server.
type replica struct {
	app    *app.App
	srv    *httptest.Server
	client *sdk.Client
}

// startApp builds an app over s, serves it and starts it; everything stops
// when the test ends, and the app's pubsub and s are closed (closing a
// store twice is harmless, so dbtest stores may close again).
func startApp(t testing.TB, s store.Store, cfg config.Config) *replica {
	t.Helper()
	cfg.BootstrapToken = token
	if cfg.StreamPollInterval == 0 {
		cfg.StreamPollInterval = testPollInterval
	}
	h := apptest.Start(t, apptest.Options{Config: cfg, Store: func(testing.TB) store.Store { return s }})
	return &replica{app: h.App, srv: h.Server, client: h.Admin}
}

// demoConfig streams the offline demo model without pauses.
func demoConfig() config.Config { return config.Config{DemoTokenDelay: demo.NoDelay} }

// pacedConfig uses llm as the default model.
func pacedConfig(llm *pacedLLM) config.Config {
	return config.Config{
		// Replicas share one key for the API keys sealed in the database.
		SecretKey:    "stream test secret key",
		OpenAIAPIKey: "test", OpenAIBaseURL: llm.URL,
		Models: []string{"openai/gpt-test"}, DefaultModel: "openai/gpt-test",
	}
}

// createChat creates a chat with a user title, so no background title
// generation calls the model.
func createChat(t testing.TB, c *sdk.Client, content string, tools ...sdk.DynamicTool) sdk.Chat {
	t.Helper()
	req := sdk.CreateChatRequest{Title: "stream test", UnsafeDynamicTools: tools}
	if content != "" {
		req.Content = sdk.Text(content)
	}
	chat, err := c.CreateChat(context.Background(), req)
	require.NoError(t, err)
	return chat
}

func streamURL(base string, chatID uuid.UUID) string {
	return "ws" + strings.TrimPrefix(base, "http") + "/api/v2/chats/" + chatID.String() + "/stream"
}

// viewer is one client of the chat stream. A goroutine it owns reads
// frames, checks the frame limits and queues their events.
type viewer struct {
	t      *testing.T
	conn   *websocket.Conn
	events chan sdk.ChatStreamEvent
	quit   chan struct{} // closed by close: stop queueing
	once   sync.Once
	done   chan struct{}
	err    error // why reading stopped; valid once done is closed
	frames atomic.Int64
	// seen is every event taken from events so far.
	seen []sdk.ChatStreamEvent
}

// dial connects a viewer to chatID's stream on base.
func dial(t *testing.T, base string, chatID uuid.UUID) *viewer {
	t.Helper()
	return dialURL(t, streamURL(base, chatID))
}

// dialURL connects a viewer to a stream URL.
func dialURL(t *testing.T, u string) *viewer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{
		HTTPHeader: http.Header{"Coder-Session-Token": {token}},
	})
	require.NoError(t, err)
	conn.SetReadLimit(8 << 20)
	v := &viewer{t: t, conn: conn, events: make(chan sdk.ChatStreamEvent, 1<<12), quit: make(chan struct{}), done: make(chan struct{})}
	go v.read()
	t.Cleanup(v.close)
	return v
}

func (v *viewer) read() {
	defer close(v.done)
	defer close(v.events)
	for {
		_, data, err := v.conn.Read(context.Background())
		if err != nil {
			v.err = err
			return
		}
		var frame []sdk.ChatStreamEvent
		if err := json.Unmarshal(data, &frame); err != nil {
			v.err = fmt.Errorf("frame is not a JSON array of events: %w: %.200s", err, data)
			return
		}
		switch {
		case len(frame) == 0:
			v.err = fmt.Errorf("empty frame")
			return
		case len(frame) > stream.MaxEventsPerFrame:
			v.err = fmt.Errorf("frame of %d events", len(frame))
			return
		case len(data) > stream.MaxFrameBytes:
			v.err = fmt.Errorf("frame of %d bytes", len(data))
			return
		}
		v.frames.Add(1)
		for _, e := range frame {
			select {
			case v.events <- e:
			case <-v.quit:
				return
			}
		}
	}
}

// close disconnects and waits for the reader.
func (v *viewer) close() {
	v.once.Do(func() { close(v.quit) })
	v.conn.Close(websocket.StatusNormalClosure, "")
	<-v.done
}

// until takes events up to and including the first that matches, and
// returns them.
func (v *viewer) until(what string, match func(sdk.ChatStreamEvent) bool) []sdk.ChatStreamEvent {
	v.t.Helper()
	timeout := time.After(waitTimeout)
	start := len(v.seen)
	for {
		select {
		case e, ok := <-v.events:
			if !ok {
				v.t.Fatalf("stream ended waiting for %s: %v; saw %v", what, v.err, kinds(v.seen[start:]))
			}
			v.seen = append(v.seen, e)
			if match(e) {
				return v.seen[start:]
			}
		case <-timeout:
			v.t.Fatalf("timed out waiting for %s; saw %v", what, kinds(v.seen[start:]))
		}
	}
}

// untilStatus waits for a status event.
func (v *viewer) untilStatus(s sdk.ChatStatus) []sdk.ChatStreamEvent {
	v.t.Helper()
	return v.until("status "+string(s), func(e sdk.ChatStreamEvent) bool {
		return e.Type == sdk.StreamStatus && e.Status.Status == s
	})
}

// untilPart waits for the part with seq of any episode, or for an event
// that merged it with later ones (a viewer behind gets the parts that
// waited for it merged, with the last seq).
func (v *viewer) untilPart(seq int64) []sdk.ChatStreamEvent {
	v.t.Helper()
	return v.until(fmt.Sprintf("part %d", seq), func(e sdk.ChatStreamEvent) bool {
		return e.Type == sdk.StreamMessagePart && e.MessagePart.Seq >= seq
	})
}

// untilType waits for an event of type typ.
func (v *viewer) untilType(typ string) []sdk.ChatStreamEvent {
	v.t.Helper()
	return v.until(typ, func(e sdk.ChatStreamEvent) bool { return e.Type == typ })
}

// untilIdle waits until the viewer's client-side state is waiting with an
// assistant reply last. It looks at state, not at particular events: a
// viewer that reads after several commits sees only their sum.
func (v *viewer) untilIdle() []sdk.ChatStreamEvent {
	v.t.Helper()
	return v.untilView("waiting after a reply", func(s view) bool {
		return s.status == sdk.ChatStatusWaiting && len(s.history) > 0 && s.history[len(s.history)-1].Role == store.RoleAssistant
	})
}

// view is what a client shows after applying events.
type view struct {
	history []sdk.ChatMessage
	status  sdk.ChatStatus
	queue   []sdk.ChatQueuedMessage
}

func viewOf(events []sdk.ChatStreamEvent) view {
	s := view{history: history(events)}
	for _, e := range events {
		switch e.Type {
		case sdk.StreamStatus:
			s.status = e.Status.Status
		case sdk.StreamQueueUpdate:
			s.queue = e.QueuedMessages
		}
	}
	return s
}

// untilView takes events until the state they build matches.
func (v *viewer) untilView(what string, match func(view) bool) []sdk.ChatStreamEvent {
	v.t.Helper()
	return v.until(what, func(sdk.ChatStreamEvent) bool { return match(viewOf(v.seen)) })
}

// closed waits for the server to end the stream and returns its close
// status.
func (v *viewer) closed() websocket.StatusCode {
	v.t.Helper()
	for {
		select {
		case _, ok := <-v.events:
			if !ok {
				return websocket.CloseStatus(v.err)
			}
		case <-time.After(waitTimeout):
			v.t.Fatal("timed out waiting for the stream to end")
		}
	}
}

// history replays the viewer's events into the committed messages a client
// would show: message events upsert by id, history_reset clears.
func history(events []sdk.ChatStreamEvent) []sdk.ChatMessage {
	var out []sdk.ChatMessage
	for _, e := range events {
		switch e.Type {
		case sdk.StreamHistoryReset:
			out = nil
		case sdk.StreamMessage:
			replaced := false
			for i := range out {
				if out[i].ID == e.Message.ID {
					out[i], replaced = *e.Message, true
				}
			}
			if !replaced {
				out = append(out, *e.Message)
			}
		}
	}
	return out
}

// summary is a message as compared across viewers.
type summary struct {
	ID   int64
	Role string
	Text string
}

func summarize(ms []sdk.ChatMessage) []summary {
	out := make([]summary, 0, len(ms))
	for _, m := range ms {
		var text strings.Builder
		for _, p := range m.Content {
			text.WriteString(p.Text)
		}
		out = append(out, summary{ID: m.ID, Role: m.Role, Text: text.String()})
	}
	return out
}

// episodeKey is (history_version, generation_attempt).
type episodeKey struct{ HistoryVersion, GenerationAttempt int64 }

// partsByEpisode checks that every episode's seq only increases (from 1
// after the episode's preview_reset, without gaps but where parts were
// merged), and returns each episode's text.
func partsByEpisode(t *testing.T, events []sdk.ChatStreamEvent) map[episodeKey]string {
	t.Helper()
	last := map[episodeKey]int64{}
	text := map[episodeKey]string{}
	for _, e := range events {
		if e.Type != sdk.StreamMessagePart {
			continue
		}
		p := e.MessagePart
		k := episodeKey{p.HistoryVersion, p.GenerationAttempt}
		require.Greater(t, p.Seq, last[k], "episode %v: seq increases", k)
		require.Equal(t, store.RoleAssistant, p.Role)
		last[k] = p.Seq
		text[k] += p.Part.Text
	}
	return text
}

// pacedLLM is an OpenAI-compatible fake whose replies the test paces: each
// request streams the chunks the test sends on its turn, and ends when the
// test finishes the turn.
type pacedLLM struct {
	URL   string
	turns chan *turn
}

// turn is one request to the paced model.
type turn struct {
	chunks chan string
	done   chan struct{} // closed when the request ends
	Body   map[string]any
}

func newPacedLLM(t *testing.T) *pacedLLM {
	p := &pacedLLM{turns: make(chan *turn)}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL + "/v1"
	return p
}

func (p *pacedLLM) serve(w http.ResponseWriter, r *http.Request) {
	tr := &turn{chunks: make(chan string), done: make(chan struct{})}
	defer close(tr.done)
	if err := json.NewDecoder(r.Body).Decode(&tr.Body); err != nil || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	select {
	case p.turns <- tr:
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-paced", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-test",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for {
		select {
		case <-r.Context().Done():
			return
		case c, ok := <-tr.chunks:
			if !ok {
				chunk(map[string]any{}, "stop")
				b, _ := json.Marshal(map[string]any{
					"id": "chatcmpl-paced", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-test",
					"choices": []any{}, "usage": map[string]any{"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
				})
				fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
				return
			}
			chunk(map[string]any{"content": c}, nil)
		}
	}
}

// next waits for the model's next request.
func (p *pacedLLM) next(t *testing.T) *turn {
	t.Helper()
	select {
	case tr := <-p.turns:
		return tr
	case <-time.After(waitTimeout):
		t.Fatal("timed out waiting for a model request")
		return nil
	}
}

// send streams chunks, one text delta each.
func (tr *turn) send(t *testing.T, chunks ...string) {
	t.Helper()
	for _, c := range chunks {
		select {
		case tr.chunks <- c:
		case <-tr.done:
			t.Fatal("the model request ended before the chunk was sent")
		case <-time.After(waitTimeout):
			t.Fatal("timed out sending a chunk")
		}
	}
}

// finish ends the reply and waits for the response to be written.
func (tr *turn) finish(t *testing.T) {
	t.Helper()
	close(tr.chunks)
	select {
	case <-tr.done:
	case <-time.After(waitTimeout):
		t.Fatal("timed out finishing the reply")
	}
}

// ended waits for the request to end (the worker cancelled it).
func (tr *turn) ended(t *testing.T) {
	t.Helper()
	select {
	case <-tr.done:
	case <-time.After(waitTimeout):
		t.Fatal("timed out waiting for the model request to be cancelled")
	}
}

// bootedFrames dials a chat's stream as a viewer that reads only when
// the test says, reads its bootstrap (up to preview_reset) and returns
// the reader of its next frame.
func bootedFrames(t *testing.T, ctx context.Context, baseURL string, chatID uuid.UUID) func() []sdk.ChatStreamEvent {
	t.Helper()
	conn, _, err := websocket.Dial(ctx, streamURL(baseURL, chatID), &websocket.DialOptions{
		HTTPHeader: http.Header{"Coder-Session-Token": {token}},
	})
	require.NoError(t, err)
	t.Cleanup(func() { conn.CloseNow() })
	conn.SetReadLimit(8 << 20)
	readFrame := func() []sdk.ChatStreamEvent {
		t.Helper()
		_, data, err := conn.Read(ctx)
		require.NoError(t, err)
		var frame []sdk.ChatStreamEvent
		require.NoError(t, json.Unmarshal(data, &frame))
		return frame
	}
	for booted := false; !booted; {
		for _, e := range readFrame() {
			booted = booted || e.Type == sdk.StreamPreviewReset
		}
	}
	return readFrame
}
