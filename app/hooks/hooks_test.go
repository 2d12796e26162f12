package hooks_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/redact"
)

var secret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("a test secret of some length"))

// received is one request the consumer got.
type received struct {
	header http.Header
	body   []byte
}

// consumer is an httptest hook consumer that records each request and
// answers with answer (status and body).
type consumer struct {
	srv  *httptest.Server
	got  chan received
	mu   sync.Mutex
	code int
	body string
	// hold, when set, blocks each request until it is closed.
	hold chan struct{}
}

func newConsumer(t *testing.T) *consumer {
	c := &consumer{got: make(chan received, 64), code: http.StatusOK}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.got <- received{header: r.Header.Clone(), body: body}
		c.mu.Lock()
		code, answer, hold := c.code, c.body, c.hold
		c.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *consumer) answer(code int, body string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.code, c.body = code, body
}

func (c *consumer) next(t *testing.T) received {
	t.Helper()
	select {
	case r := <-c.got:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the consumer got no request")
		return received{}
	}
}

func dispatcher(t *testing.T, c *consumer, mod ...func(*hooks.Config)) *hooks.Dispatcher {
	t.Helper()
	cfg := hooks.Config{URL: c.srv.URL, Secret: secret, Client: c.srv.Client()}
	for _, m := range mod {
		m(&cfg)
	}
	d, err := hooks.New(cfg)
	require.NoError(t, err)
	return d
}

func TestEventID(t *testing.T) {
	t.Parallel()
	chat := uuid.MustParse("0e7c2a8e-2f0c-4d7a-9d3c-1d2e3f4a5b6c")
	require.Equal(t, "0e7c2a8e-2f0c-4d7a-9d3c-1d2e3f4a5b6c:7:stop", hooks.EventID(chat, 7, hooks.Stop, ""))
	require.Equal(t, "0e7c2a8e-2f0c-4d7a-9d3c-1d2e3f4a5b6c:7:pre_tool_use:call_1", hooks.EventID(chat, 7, hooks.PreToolUse, "call_1"))
}

// TestDispatchIsSigned: the consumer can verify every request with the
// Standard Webhooks reference verifier and the shared secret; the id
// header is the stable event id.
func TestDispatchIsSigned(t *testing.T) {
	t.Parallel()
	c := newConsumer(t)
	d := dispatcher(t, c)
	chat := uuid.New()
	req := hooks.Request{
		Event: hooks.PreToolUse, ChatID: chat, Turn: 3, ToolCallID: "call_1", ToolName: "echo",
		ToolInput: json.RawMessage(`{"text":"hi"}`),
	}
	_, err := d.Dispatch(context.Background(), hooks.Admitted, req)
	require.NoError(t, err)
	got := c.next(t)

	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	require.NoError(t, wh.Verify(got.body, got.header))
	id := hooks.EventID(chat, 3, hooks.PreToolUse, "call_1")
	require.Equal(t, id, got.header.Get("webhook-id"))
	require.Regexp(t, `^v1,[A-Za-z0-9+/]+=*$`, got.header.Get("webhook-signature"))
	require.Equal(t, "application/json", got.header.Get("Content-Type"))

	var body map[string]any
	require.NoError(t, json.Unmarshal(got.body, &body))
	require.Equal(t, id, body["id"])
	require.Equal(t, "pre_tool_use", body["event"])
	require.Equal(t, chat.String(), body["chat_id"])
	require.Equal(t, map[string]any{"text": "hi"}, body["tool_input"])

	// A tampered body or another secret does not verify.
	require.Error(t, wh.Verify(append(got.body, ' '), got.header))
	other, err := standardwebhooks.NewWebhook(base64.StdEncoding.EncodeToString([]byte("another secret")))
	require.NoError(t, err)
	require.Error(t, other.Verify(got.body, got.header))
}

// TestResponses: what each event may answer; anything else is invalid.
func TestResponses(t *testing.T) {
	t.Parallel()
	c := newConsumer(t)
	d := dispatcher(t, c)
	valid := []struct {
		event hooks.Event
		body  string
		want  hooks.Response
	}{
		{hooks.Stop, ``, hooks.Response{}},
		{hooks.Stop, `{}`, hooks.Response{}},
		{hooks.PostToolUse, `{"model_context":"m","user_context":"u"}`, hooks.Response{ModelContext: "m", UserContext: "u"}},
		{hooks.PreToolUse, `{"decision":"deny","reason":"no"}`, hooks.Response{Decision: "deny", Reason: "no"}},
		{hooks.PreToolUse, `{"decision":"allow","updated_input":{"a":1}}`, hooks.Response{Decision: "allow", UpdatedInput: json.RawMessage(`{"a":1}`)}},
		{hooks.UserPromptSubmit, `{"updated_prompt":"better"}`, hooks.Response{UpdatedPrompt: new("better")}},
		{hooks.UserPromptSubmit, `{"decision":"deny"}`, hooks.Response{Decision: "deny"}},
	}
	for _, tc := range valid {
		c.answer(http.StatusOK, tc.body)
		got, err := d.Dispatch(context.Background(), hooks.Admitted, hooks.Request{Event: tc.event, ChatID: uuid.New()})
		require.NoError(t, err, "%s %s", tc.event, tc.body)
		require.Equal(t, tc.want, got, "%s %s", tc.event, tc.body)
		c.next(t)
	}

	invalid := []struct {
		event hooks.Event
		body  string
	}{
		{hooks.Stop, `garbage`},
		{hooks.Stop, `[]`},
		{hooks.Stop, `{"unknown":1}`},
		{hooks.Stop, `{} {}`},
		{hooks.Stop, `{"decision":"allow"}`},
		{hooks.PostToolUse, `{"decision":"deny"}`},
		{hooks.PostToolUse, `{"reason":"x"}`},
		{hooks.SessionStart, `{"updated_prompt":"x"}`},
		{hooks.PreCompact, `{"updated_input":{}}`},
		{hooks.UserPromptSubmit, `{"updated_input":{"a":1}}`},
		{hooks.PreToolUse, `{"updated_prompt":"x"}`},
		{hooks.PreToolUse, `{"updated_input":[1]}`},
		{hooks.PreToolUse, `{"updated_input":"x"}`},
		{hooks.PreToolUse, `{"decision":"maybe"}`},
		{hooks.PreToolUse, `{"decision":"deny","updated_input":{"a":1}}`},
	}
	for _, tc := range invalid {
		c.answer(http.StatusOK, tc.body)
		_, err := d.Dispatch(context.Background(), hooks.Admitted, hooks.Request{Event: tc.event, ChatID: uuid.New()})
		require.ErrorIs(t, err, hooks.ErrInvalidResponse, "%s %s", tc.event, tc.body)
		var herr *hooks.Error
		require.ErrorAs(t, err, &herr)
		require.Equal(t, tc.event, herr.Event)
		require.Contains(t, err.Error(), "lifecycle hook "+string(tc.event), "the error names the hook")
		c.next(t)
	}
}

// TestFailClosed: a consumer that is down, fails or is too slow is an
// error, never an empty (allowing) response.
func TestFailClosed(t *testing.T) {
	t.Parallel()
	t.Run("down", func(t *testing.T) {
		c := newConsumer(t)
		d := dispatcher(t, c)
		c.srv.Close()
		_, err := d.Dispatch(context.Background(), hooks.Admitted, hooks.Request{Event: hooks.PreToolUse, ChatID: uuid.New()})
		require.ErrorIs(t, err, hooks.ErrUnreachable)
		require.Contains(t, err.Error(), "lifecycle hook pre_tool_use")
	})
	t.Run("status", func(t *testing.T) {
		c := newConsumer(t)
		d := dispatcher(t, c)
		for _, code := range []int{http.StatusInternalServerError, http.StatusNotFound, http.StatusFound} {
			c.answer(code, `{}`)
			_, err := d.Dispatch(context.Background(), hooks.Admitted, hooks.Request{Event: hooks.Stop, ChatID: uuid.New()})
			require.ErrorIs(t, err, hooks.ErrUnreachable, "%d", code)
			c.next(t)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		c := newConsumer(t)
		c.hold = make(chan struct{})
		defer close(c.hold)
		d := dispatcher(t, c, func(cfg *hooks.Config) { cfg.Timeout = 20 * time.Millisecond })
		_, err := d.Dispatch(context.Background(), hooks.Admitted, hooks.Request{Event: hooks.Stop, ChatID: uuid.New()})
		require.ErrorIs(t, err, hooks.ErrUnreachable)
	})
	t.Run("too long", func(t *testing.T) {
		c := newConsumer(t)
		d := dispatcher(t, c)
		long := make([]byte, hooks.MaxResponseBytes)
		for i := range long {
			long[i] = ' '
		}
		c.answer(http.StatusOK, string(long)+`{}`)
		_, err := d.Dispatch(context.Background(), hooks.Admitted, hooks.Request{Event: hooks.Stop, ChatID: uuid.New()})
		require.ErrorIs(t, err, hooks.ErrInvalidResponse)
	})
}

// TestCapReservesAdmittedWork: admission dispatches hold at most the cap
// minus the reserved share; admitted work still gets through while they
// wait, and everything completes once the consumer answers.
func TestCapReservesAdmittedWork(t *testing.T) {
	t.Parallel()
	c := newConsumer(t)
	c.hold = make(chan struct{})
	d := dispatcher(t, c, func(cfg *hooks.Config) { cfg.MaxConcurrent, cfg.Reserved = 3, 1 })
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	dispatch := func(class hooks.Class) {
		wg.Go(func() {
			_, err := d.Dispatch(ctx, class, hooks.Request{Event: hooks.SessionStart, ChatID: uuid.New()})
			errs <- err
		})
	}
	for range 3 {
		dispatch(hooks.Admission)
	}
	c.next(t)
	c.next(t)
	require.Eventually(t, func() bool { return d.Waiting() == 1 }, 10*time.Second, time.Millisecond,
		"the third admission waits: two of the three slots are the admission share")
	require.Empty(t, c.got, "the consumer saw only two")

	dispatch(hooks.Admitted)
	c.next(t) // the reserved slot
	dispatch(hooks.Admitted)
	require.Eventually(t, func() bool { return d.Waiting() == 2 }, 10*time.Second, time.Millisecond,
		"the cap is full")

	close(c.hold)
	c.next(t)
	c.next(t)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Zero(t, d.Waiting())
}

// TestWaitingForASlotEndsWithTheContext: a dispatch waiting for the cap
// gives up with its context, and releases nothing it did not take.
func TestWaitingForASlotEndsWithTheContext(t *testing.T) {
	t.Parallel()
	c := newConsumer(t)
	c.hold = make(chan struct{})
	d := dispatcher(t, c, func(cfg *hooks.Config) { cfg.MaxConcurrent, cfg.Reserved = 2, 1 })
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = d.Dispatch(context.Background(), hooks.Admission, hooks.Request{Event: hooks.SessionStart, ChatID: uuid.New()})
	})
	c.next(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := d.Dispatch(ctx, hooks.Admission, hooks.Request{Event: hooks.UserPromptSubmit, ChatID: uuid.New()})
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), "lifecycle hook user_prompt_submit")
	close(c.hold)
	wg.Wait()
	// The share is free again.
	_, err = d.Dispatch(context.Background(), hooks.Admission, hooks.Request{Event: hooks.SessionStart, ChatID: uuid.New()})
	require.NoError(t, err)
}

func TestNilDispatcherIsOff(t *testing.T) {
	t.Parallel()
	var d *hooks.Dispatcher
	require.False(t, d.Enabled())
	r, err := d.Dispatch(context.Background(), hooks.Admitted, hooks.Request{Event: hooks.PreToolUse})
	require.NoError(t, err)
	require.Equal(t, hooks.Response{}, r)
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]hooks.Config{
		"no url":            {Secret: secret},
		"no secret":         {URL: "http://x"},
		"secret not base64": {URL: "http://x", Secret: "not base64!"},
		"reserved too big":  {URL: "http://x", Secret: secret, MaxConcurrent: 4, Reserved: 4},
		"cap too small":     {URL: "http://x", Secret: secret, MaxConcurrent: 1, Reserved: 1},
	} {
		_, err := hooks.New(cfg)
		require.Error(t, err, name)
	}
}

// A consumer that quotes the signing secret (or another secret chatd
// knows) in a reason or in an invalid answer gets it masked: the reason
// and the error are shown to users and logged.
func TestSecretsMasked(t *testing.T) {
	t.Parallel()
	c := newConsumer(t)
	secrets := redact.New()
	secrets.Set("provider:p", redact.LabelAPIKey, "sk-provider-key-0123")
	d := dispatcher(t, c, func(cfg *hooks.Config) { cfg.Secrets = secrets })

	c.answer(http.StatusOK, `{"decision":"deny","reason":"secret `+secret+` and key sk-provider-key-0123"}`)
	got, err := d.Dispatch(context.Background(), hooks.Admitted, hooks.Request{Event: hooks.PreToolUse, ChatID: uuid.New()})
	require.NoError(t, err)
	require.Equal(t, "secret [secret] and key [api key]", got.Reason)
	c.next(t)

	c.answer(http.StatusOK, `{"decision":"`+secret+`"}`)
	_, err = d.Dispatch(context.Background(), hooks.Admitted, hooks.Request{Event: hooks.PreToolUse, ChatID: uuid.New()})
	require.ErrorIs(t, err, hooks.ErrInvalidResponse)
	require.NotContains(t, err.Error(), secret)
	require.Contains(t, err.Error(), "[secret]")
	c.next(t)
}
