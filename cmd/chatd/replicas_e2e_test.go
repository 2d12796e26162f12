package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store/dbtest"
)

// takeoverDefaults runs TestReplicasKillTakeover with the worker's default
// lease settings instead of the fast ones, to measure the takeover time an
// operator gets out of the box (about 30-40 s; not run in CI):
//
//	go test ./cmd/chatd -run TestReplicasKillTakeover -v -chatd.takeover-defaults
var takeoverDefaults = flag.Bool("chatd.takeover-defaults", false,
	"TestReplicasKillTakeover: use the default heartbeat, lease and acquire settings (slow)")

// leaseSettings are the worker timings the replicas run with.
type leaseSettings struct {
	heartbeat, lease, acquire time.Duration
}

// defaultLeases are the worker's defaults, which chatd gets by setting
// nothing.
var defaultLeases = leaseSettings{worker.DefaultHeartbeatInterval, worker.DefaultLeaseTimeout, worker.DefaultAcquireInterval}

// env is the settings as chatd's environment.
func (s leaseSettings) env() []string {
	if s == defaultLeases {
		return nil
	}
	return []string{
		"CHATD_HEARTBEAT_INTERVAL=" + s.heartbeat.String(),
		"CHATD_LEASE_TIMEOUT=" + s.lease.String(),
		"CHATD_ACQUIRE_INTERVAL=" + s.acquire.String(),
	}
}

// TestReplicasKillTakeover runs three `chatd serve` processes on one
// Postgres schema. Each gets a chat through its own API and runs it (the
// placement is made certain with CHATD_MAX_ROOT_CHATS, see below); each
// chat is viewed on another replica, whose stream relays the live tokens
// from the owner. Mid-turn, the owner of chat A, which also has a durable
// message queued, is killed with SIGKILL. Another replica takes A over
// once the lease is stale and finishes both turns: every user message is
// there once, each has exactly one reply, the durable requests are not run
// again, and every viewer sees its chat finish (the one whose replica died
// reconnects elsewhere). The takeover times are logged.
func TestReplicasKillTakeover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three chatd processes")
	}
	t.Parallel()
	settings := leaseSettings{heartbeat: 200 * time.Millisecond, lease: time.Second, acquire: time.Second}
	wait := 20 * time.Second // any one step
	if *takeoverDefaults {
		settings = defaultLeases
		wait = 2 * (settings.lease + settings.heartbeat)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dsn, schema := dbtest.PostgresSchema(t)
	db := dsn + " search_path=" + schema
	bin := chatdBinary(t)

	llm := newKeyedLLM(t, wait)
	const token = "replicas-e2e-token"
	var replicas []*e2eReplica
	start := func() *e2eReplica {
		addr := freeAddr(t)
		n := len(replicas)
		env := append([]string{
			"CHATD_DB=" + db, "CHATD_ADDR=" + addr, "CHATD_BOOTSTRAP_TOKEN=" + token,
			"CHATD_SECRET_KEY=replicas e2e secret key",
			"OPENAI_BASE_URL=" + llm.URL, "OPENAI_API_KEY=test", "CHATD_DEFAULT_MODEL=openai/test-model",
			// The concurrent agent limit counts the chats every live
			// replica runs, against the limit of the replica that
			// acquires. Replica n may take a chat while fewer than n+1 run,
			// so with the chats started one at a time, replica 0 takes A,
			// 1 takes B and 2 takes C, and once 0 dies only 2 has room
			// for A.
			"CHATD_MAX_ROOT_CHATS=" + strconv.Itoa(n+1),
		}, settings.env()...)
		r := &e2eReplica{addr: addr, srv: startServer(t, bin, env, addr), client: sdk.New("http://"+addr, token)}
		replicas = append(replicas, r)
		return r
	}

	conn, err := pgx.Connect(ctx, db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	// owner is the replica whose worker holds the chat, from the chat's
	// worker id and the replica records.
	owner := func(chatID uuid.UUID) *e2eReplica {
		t.Helper()
		var address string
		require.NoError(t, conn.QueryRow(ctx, `SELECT r.address FROM chats c JOIN chat_replicas r ON r.worker_id = c.worker_id
			WHERE c.id = $1`, chatID).Scan(&address))
		for _, r := range replicas {
			if address == "http://"+r.addr {
				return r
			}
		}
		t.Fatalf("chat %s is owned by %s, none of the replicas", chatID, address)
		return nil
	}

	// One chat per replica, each started through that replica's API and
	// seen running there (its model request is open) before the next
	// replica starts.
	type chatRun struct {
		name   string
		chat   sdk.Chat
		first  uuid.UUID // the durable request id of the first message
		call   *llmCall  // its open model request
		viewer *e2eViewer
	}
	var chats []*chatRun
	for _, name := range []string{"A", "B", "C"} {
		r := start()
		chat, err := r.client.CreateChat(ctx, sdk.CreateChatRequest{Title: "chat " + name})
		require.NoError(t, err)
		c := &chatRun{name: name, chat: chat, first: uuid.New()}
		resp, err := r.client.SendWithID(ctx, chat.ID, c.first, sdk.CreateChatMessageRequest{Content: sdk.Text(name + "1")}, sdk.RetryPolicy{})
		require.NoError(t, err)
		require.False(t, resp.Queued)
		c.call = llm.next(t, name+"1")
		require.Same(t, r, owner(chat.ID), "chat %s runs on the replica it was sent to", name)
		chats = append(chats, c)
	}
	for i, c := range chats {
		// Viewed on the next replica: the tokens come through the relay.
		on := replicas[(i+1)%len(replicas)]
		c.viewer = dialViewer(t, on.addr, token, c.chat.ID, wait)
		tok := strings.ToLower(c.name) + "1-live "
		c.call.send(t, tok)
		c.viewer.untilPart(tok)
	}
	a, b, c := chats[0], chats[1], chats[2]
	killed, survivor, heir := replicas[0], replicas[1], replicas[2]

	// A second durable message for A waits in its queue on the database.
	second := uuid.New()
	resp, err := survivor.client.SendWithID(ctx, a.chat.ID, second, sdk.CreateChatMessageRequest{Content: sdk.Text("A2")}, sdk.RetryPolicy{})
	require.NoError(t, err)
	require.True(t, resp.Queued, "A is mid-turn")
	a.viewer.untilView("A2 queued", func(v e2eView) bool { return len(v.queue) == 1 })

	killedAt := time.Now()
	require.NoError(t, killed.srv.cmd.Process.Signal(syscall.SIGKILL))
	<-killed.srv.done
	a.call.ended(t)
	// C's viewer was on the killed replica: its stream ends, and it
	// reconnects to a survivor, which relays from C's owner.
	c.viewer.ended()
	c.viewer = dialViewer(t, survivor.addr, token, c.chat.ID, wait)

	retry := llm.next(t, "A1")
	firstRequest := retry.at.Sub(killedAt)
	require.Same(t, heir, owner(a.chat.ID), "the replica with room took A over")
	retry.send(t, "a1-done")
	retry.finish(t)
	a.viewer.untilView("A1 answered", func(v e2eView) bool { return v.replyTo("A1") == "a1-done" })
	finished := time.Since(killedAt)
	t.Logf("takeover after kill -9 (heartbeat %s, lease timeout %s, acquire interval %s): the heir's model request after %s, the turn finished after %s",
		settings.heartbeat, settings.lease, settings.acquire, firstRequest.Round(time.Millisecond), finished.Round(time.Millisecond))

	queued := llm.next(t, "A2")
	require.Same(t, heir, owner(a.chat.ID))
	queued.send(t, "a2-done")
	queued.finish(t)
	for _, r := range []*chatRun{b, c} {
		tok := strings.ToLower(r.name) + "1-done"
		r.call.send(t, tok)
		r.call.finish(t)
	}

	want := map[*chatRun][][2]string{
		a: {{"A1", "a1-done"}, {"A2", "a2-done"}},
		b: {{"B1", "b1-live b1-done"}},
		c: {{"C1", "c1-live c1-done"}},
	}
	for r, turns := range want {
		r.viewer.untilView("chat "+r.name+" finished", func(v e2eView) bool {
			return v.status == sdk.ChatStatusWaiting && len(v.queue) == 0 && v.replyTo(turns[len(turns)-1][0]) != ""
		})
		v := viewOfEvents(r.viewer.seen)
		require.Equal(t, turns, v.turns(), "chat %s on its viewer", r.name)
		page, err := heir.client.ChatMessages(ctx, r.chat.ID, sdk.MessagesOptions{})
		require.NoError(t, err)
		require.Empty(t, page.QueuedMessages)
		require.Equal(t, turns, e2eView{history: page.Messages}.turns(), "chat %s in the database", r.name)
	}

	// The durable requests sent before the kill are answered from what was
	// saved, on any replica, and run nothing again.
	for _, id := range []uuid.UUID{a.first, second} {
		content := "A1"
		if id == second {
			content = "A2"
		}
		resp, err := survivor.client.SendWithID(ctx, a.chat.ID, id, sdk.CreateChatMessageRequest{Content: sdk.Text(content)}, sdk.RetryPolicy{})
		require.NoError(t, err, content)
		require.NotNil(t, resp.Replayed, content)
		require.True(t, *resp.Replayed, content)
		require.NotNil(t, resp.Outcome, content)
		require.Equal(t, "completed", resp.Outcome.Status, content)
	}
	page, err := survivor.client.ChatMessages(ctx, a.chat.ID, sdk.MessagesOptions{})
	require.NoError(t, err)
	require.Equal(t, want[a], e2eView{history: page.Messages}.turns(), "no message from the replays")
	require.Equal(t, map[string]int{"A1": 2, "A2": 1, "B1": 1, "C1": 1}, llm.counts(),
		"model requests: A1 once before the kill and once after, everything else once")
}

// e2eReplica is one chatd serve process of the test.
type e2eReplica struct {
	addr   string
	srv    *server
	client *sdk.Client
}

// keyedLLM is an OpenAI-compatible fake whose replies the test paces. It
// files each request under the text of its last user message, so a test
// running several chats awaits the request of the one it means; the reply
// streams the chunks the test sends and ends when the test finishes it.
type keyedLLM struct {
	URL  string
	wait time.Duration

	mu    sync.Mutex
	calls map[string]chan *llmCall
	seen  map[string]int
}

// llmCall is one request to the keyed model.
type llmCall struct {
	wait   time.Duration
	at     time.Time // when the request arrived
	chunks chan string
	end    chan struct{} // closed by the test: end the reply
	done   chan struct{} // closed when the handler returns
}

func newKeyedLLM(t *testing.T, wait time.Duration) *keyedLLM {
	l := &keyedLLM{wait: wait, calls: map[string]chan *llmCall{}, seen: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(l.serve))
	t.Cleanup(srv.Close)
	l.URL = srv.URL + "/v1"
	return l
}

// queue is the channel of key's requests.
func (l *keyedLLM) queue(key string) chan *llmCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	q, ok := l.calls[key]
	if !ok {
		q = make(chan *llmCall, 16)
		l.calls[key] = q
	}
	return q
}

// counts reports how many requests arrived per key.
func (l *keyedLLM) counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.seen))
	for k, n := range l.seen {
		out[k] = n
	}
	return out
}

// next waits for the next request whose last user message is key.
func (l *keyedLLM) next(t *testing.T, key string) *llmCall {
	t.Helper()
	select {
	case c := <-l.queue(key):
		return c
	case <-time.After(l.wait):
		t.Fatalf("no model request for %q", key)
		return nil
	}
}

func (l *keyedLLM) serve(w http.ResponseWriter, r *http.Request) {
	call := &llmCall{wait: l.wait, at: time.Now(), chunks: make(chan string), end: make(chan struct{}), done: make(chan struct{})}
	defer close(call.done)
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "keyedLLM: want a chat completion", http.StatusBadRequest)
		return
	}
	key := ""
	for _, m := range body.Messages {
		if m.Role == "user" {
			key = messageText(m.Content)
		}
	}
	l.mu.Lock()
	l.seen[key]++
	l.mu.Unlock()
	l.queue(key) <- call
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	chunk := func(v map[string]any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	delta := func(d map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "created": 1700000000, "model": "test-model",
			"choices": []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}},
		}
	}
	chunk(delta(map[string]any{"role": "assistant", "content": ""}, nil))
	for {
		select {
		case <-r.Context().Done():
			return
		case text := <-call.chunks:
			chunk(delta(map[string]any{"content": text}, nil))
		case <-call.end:
			chunk(delta(map[string]any{}, "stop"))
			chunk(map[string]any{
				"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "created": 1700000000, "model": "test-model",
				"choices": []any{}, "usage": map[string]any{"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
			})
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
	}
}

// messageText is the text of an OpenAI message content: a string or an
// array of text parts.
func messageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// send streams text deltas of the reply.
func (c *llmCall) send(t *testing.T, texts ...string) {
	t.Helper()
	for _, text := range texts {
		select {
		case c.chunks <- text:
		case <-c.done:
			t.Fatalf("the model request ended before %q", text)
		case <-time.After(c.wait):
			t.Fatalf("the model request took no chunk %q", text)
		}
	}
}

// finish ends the reply and waits for the handler to return.
func (c *llmCall) finish(t *testing.T) {
	t.Helper()
	close(c.end)
	c.ended(t)
}

// ended waits for the request to end (finished, or its client gone).
func (c *llmCall) ended(t *testing.T) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(c.wait):
		t.Fatal("the model request did not end")
	}
}

// e2eViewer is one client of a chat's WebSocket stream. A goroutine it
// owns reads the frames and queues their events.
type e2eViewer struct {
	t      *testing.T
	wait   time.Duration
	conn   *websocket.Conn
	events chan sdk.ChatStreamEvent
	quit   chan struct{}
	once   sync.Once
	done   chan struct{}
	err    error // why reading stopped; valid once done is closed
	seen   []sdk.ChatStreamEvent
}

func dialViewer(t *testing.T, addr, token string, chatID uuid.UUID, wait time.Duration) *e2eViewer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws://"+addr+"/api/v2/chats/"+chatID.String()+"/stream", &websocket.DialOptions{
		HTTPHeader: http.Header{"Coder-Session-Token": {token}},
	})
	require.NoError(t, err)
	conn.SetReadLimit(8 << 20)
	v := &e2eViewer{t: t, wait: wait, conn: conn, events: make(chan sdk.ChatStreamEvent, 1<<12),
		quit: make(chan struct{}), done: make(chan struct{})}
	go v.read()
	t.Cleanup(v.close)
	return v
}

func (v *e2eViewer) read() {
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
func (v *e2eViewer) close() {
	v.once.Do(func() { close(v.quit) })
	v.conn.Close(websocket.StatusNormalClosure, "")
	<-v.done
}

// until takes events until match holds for the view they build.
func (v *e2eViewer) until(what string, match func(e sdk.ChatStreamEvent) bool) {
	v.t.Helper()
	timeout := time.After(v.wait)
	for {
		select {
		case e, ok := <-v.events:
			if !ok {
				v.t.Fatalf("stream ended waiting for %s: %v", what, v.err)
			}
			v.seen = append(v.seen, e)
			if match(e) {
				return
			}
		case <-timeout:
			v.t.Fatalf("timed out waiting for %s; saw %d events", what, len(v.seen))
		}
	}
}

// untilPart waits for a live part with exactly this text.
func (v *e2eViewer) untilPart(text string) {
	v.t.Helper()
	v.until(fmt.Sprintf("part %q", text), func(e sdk.ChatStreamEvent) bool {
		return e.Type == sdk.StreamMessagePart && e.MessagePart.Part.Text == text
	})
}

// untilView waits until the events seen build a matching view.
func (v *e2eViewer) untilView(what string, match func(e2eView) bool) {
	v.t.Helper()
	v.until(what, func(sdk.ChatStreamEvent) bool { return match(viewOfEvents(v.seen)) })
}

// ended waits for the server side of the stream to go away.
func (v *e2eViewer) ended() {
	v.t.Helper()
	timeout := time.After(v.wait)
	for {
		select {
		case _, ok := <-v.events:
			if !ok {
				var ce websocket.CloseError
				if errors.As(v.err, &ce) && ce.Code == websocket.StatusNormalClosure {
					v.t.Fatalf("the stream closed normally, not with its replica: %v", v.err)
				}
				return
			}
		case <-timeout:
			v.t.Fatal("the stream of a killed replica did not end")
		}
	}
}

// e2eView is what a client shows after applying stream events.
type e2eView struct {
	history []sdk.ChatMessage
	status  sdk.ChatStatus
	queue   []sdk.ChatQueuedMessage
}

func viewOfEvents(events []sdk.ChatStreamEvent) e2eView {
	var v e2eView
	for _, e := range events {
		switch e.Type {
		case sdk.StreamHistoryReset:
			v.history = nil
		case sdk.StreamMessage:
			replaced := false
			for i := range v.history {
				if v.history[i].ID == e.Message.ID {
					v.history[i], replaced = *e.Message, true
				}
			}
			if !replaced {
				v.history = append(v.history, *e.Message)
			}
		case sdk.StreamStatus:
			v.status = e.Status.Status
		case sdk.StreamQueueUpdate:
			v.queue = e.QueuedMessages
		}
	}
	return v
}

// turns pairs each user message's text with the text of the assistant
// messages up to the next user message; two replies to one message show
// as their texts joined with "|".
func (v e2eView) turns() [][2]string {
	var out [][2]string
	for _, m := range v.history {
		var text strings.Builder
		for _, p := range m.Content {
			text.WriteString(p.Text)
		}
		switch m.Role {
		case "user":
			out = append(out, [2]string{text.String(), ""})
		case "assistant":
			if len(out) == 0 {
				out = append(out, [2]string{"", ""})
			}
			if last := &out[len(out)-1]; last[1] == "" {
				last[1] = text.String()
			} else {
				last[1] += "|" + text.String()
			}
		}
	}
	return out
}

// replyTo is the reply to the user message with this text ("" while none).
func (v e2eView) replyTo(user string) string {
	for _, turn := range v.turns() {
		if turn[0] == user {
			return turn[1]
		}
	}
	return ""
}
