// Package providertest is the conformance suite every streaming provider
// adapter passes against its llmtest fake server: text and reasoning
// deltas, tool calls, usage, finish reasons, error classification,
// cancellation, deadlines and cut streams. Each adapter's test calls Run
// once and keeps only the tests of its own wire mapping:
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, providertest.Adapter{
//			Name: "openai", Model: "gpt-test", NewServer: llmtest.NewOpenAI,
//			New: func(url string) llm.Provider { return openai.New(openai.Config{BaseURL: url}) },
//			...
//		})
//	}
package providertest

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
)

// Adapter describes one provider adapter and the fake server of its wire
// protocol, with the few facts in which protocols honestly differ.
type Adapter struct {
	// Name is what the provider's Name() and every *llm.Error report.
	Name string
	// Model is the model requests name.
	Model string
	// NewServer starts the adapter's fake wire server (llmtest.NewOpenAI,
	// llmtest.NewAnthropic).
	NewServer func(t testing.TB, replies ...llmtest.Reply) *llmtest.Server
	// New returns the adapter pointed at a fake server's URL.
	New func(baseURL string) llm.Provider
	// GeneratedCallID is the id the fake server gives the n-th tool call
	// (from 0) of a reply when the script names none.
	GeneratedCallID func(n int) string
	// CacheCreation: the protocol reports cache-creation tokens.
	CacheCreation bool
	// StreamError is the in-stream error the protocol sends most, with the
	// kind it must be classified as.
	StreamError StreamError
}

// StreamError is an error a server sends after the stream has started.
type StreamError struct {
	Status  int // the HTTP status the error stands for
	Message string
	Kind    sdk.ChatErrorKind
}

// Run runs every scenario of the suite against a, each as a parallel
// subtest with its own fake server.
func Run(t *testing.T, a Adapter) {
	t.Helper()
	require.NotEmpty(t, a.Name, "Adapter.Name")
	require.NotNil(t, a.NewServer, "Adapter.NewServer")
	require.NotNil(t, a.New, "Adapter.New")
	require.NotNil(t, a.GeneratedCallID, "Adapter.GeneratedCallID")
	scenarios := []struct {
		name string
		fn   func(t *testing.T, a Adapter)
	}{
		{"StreamText", streamText},
		{"StreamNilOnPart", streamNilOnPart},
		{"StreamToolCall", streamToolCall},
		{"StreamParallelToolCalls", streamParallelToolCalls},
		{"StreamReasoning", streamReasoning},
		{"StreamUsage", streamUsage},
		{"StreamLength", streamLength},
		{"StreamContentFilter", streamContentFilter},
		{"StreamErrors", streamErrors},
		{"StreamErrorMidStream", streamErrorMidStream},
		{"StreamHangCancelled", streamHangCancelled},
		{"StreamTruncated", streamTruncated},
		{"StreamHangDeadline", streamHangDeadline},
		{"StreamConnectionRefused", streamConnectionRefused},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.fn(t, a)
		})
	}
}

// fixture is what one scenario needs: the adapter over a fresh fake server
// and a recorder of the deltas it streams.
type fixture struct {
	p   llm.Provider
	srv *llmtest.Server
	rec *Recorder
}

func setup(t *testing.T, a Adapter, replies ...llmtest.Reply) fixture {
	t.Helper()
	srv := a.NewServer(t, replies...)
	return fixture{p: a.New(srv.URL), srv: srv, rec: &Recorder{}}
}

// Recorder collects the deltas a provider streams; its Add is an onPart.
type Recorder struct {
	mu    sync.Mutex
	parts []sdk.ChatMessagePart
}

// Add records one delta.
func (r *Recorder) Add(p sdk.ChatMessagePart) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.parts = append(r.parts, p)
}

// All returns the deltas recorded so far.
func (r *Recorder) All() []sdk.ChatMessagePart {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sdk.ChatMessagePart(nil), r.parts...)
}

// UserRequest is a request to model with one user message.
func UserRequest(model, text string) llm.Request {
	return llm.Request{Model: model, Messages: []llm.Message{
		{Role: llm.RoleUser, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: text}}},
	}}
}

func streamText(t *testing.T, a Adapter) {
	b := setup(t, a, llmtest.TextChunks("Hel", "lo", " world"))
	resp, err := b.p.Stream(context.Background(), UserRequest(a.Model, "hi"), b.rec.Add)
	require.NoError(t, err)
	require.Equal(t, []sdk.ChatMessagePart{
		{Type: sdk.PartText, Text: "Hel"},
		{Type: sdk.PartText, Text: "lo"},
		{Type: sdk.PartText, Text: " world"},
	}, b.rec.All())
	require.Equal(t, []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "Hello world"}}, resp.Parts)
	require.Equal(t, "stop", resp.FinishReason)
	require.Equal(t, llm.Usage{InputTokens: 10, OutputTokens: 5}, resp.Usage)
	require.Equal(t, a.Name, b.p.Name())
}

func streamNilOnPart(t *testing.T, a Adapter) {
	b := setup(t, a, llmtest.TextChunks("a", "b"))
	resp, err := b.p.Stream(context.Background(), UserRequest(a.Model, "hi"), nil)
	require.NoError(t, err)
	require.Equal(t, []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "ab"}}, resp.Parts)
}

func streamToolCall(t *testing.T, a Adapter) {
	b := setup(t, a, llmtest.Join(
		llmtest.TextChunks("Checking."),
		llmtest.ToolCallChunks("call_abc", "get_weather", `{"city":`, `"Paris"}`),
	))
	resp, err := b.p.Stream(context.Background(), UserRequest(a.Model, "weather?"), b.rec.Add)
	require.NoError(t, err)
	require.Equal(t, []sdk.ChatMessagePart{
		{Type: sdk.PartText, Text: "Checking."},
		{Type: sdk.PartToolCall, ToolCallID: "call_abc", ToolName: "get_weather"},
		{Type: sdk.PartToolCall, ToolCallID: "call_abc", ArgsDelta: `{"city":`},
		{Type: sdk.PartToolCall, ToolCallID: "call_abc", ArgsDelta: `"Paris"}`},
	}, b.rec.All())
	require.Equal(t, "tool_calls", resp.FinishReason)
	require.Len(t, resp.Parts, 2)
	require.Equal(t, sdk.ChatMessagePart{Type: sdk.PartText, Text: "Checking."}, resp.Parts[0])
	calls := resp.ToolCalls()
	require.Len(t, calls, 1)
	require.Equal(t, "call_abc", calls[0].ToolCallID)
	require.Equal(t, "get_weather", calls[0].ToolName)
	require.JSONEq(t, `{"city":"Paris"}`, string(calls[0].Args))
}

func streamParallelToolCalls(t *testing.T, a Adapter) {
	b := setup(t, a, llmtest.Join(
		llmtest.TextChunks("Reading both."),
		llmtest.ToolCall("call_1", "read_file", `{"path":"a.go"}`),
		llmtest.ToolCall("call_2", "read_file", `{"path":"b.go","note":"héllo ✓"}`),
		llmtest.ToolCall("", "list", ``),
	))
	resp, err := b.p.Stream(context.Background(), UserRequest(a.Model, "read both"), b.rec.Add)
	require.NoError(t, err)
	require.Equal(t, sdk.ChatMessagePart{Type: sdk.PartText, Text: "Reading both."}, resp.Parts[0])
	calls := resp.ToolCalls()
	require.Len(t, calls, 3)
	require.Equal(t, "call_1", calls[0].ToolCallID)
	require.JSONEq(t, `{"path":"a.go"}`, string(calls[0].Args))
	require.Equal(t, "call_2", calls[1].ToolCallID)
	require.JSONEq(t, `{"path":"b.go","note":"héllo ✓"}`, string(calls[1].Args))
	require.Equal(t, a.GeneratedCallID(2), calls[2].ToolCallID) // generated by the server
	require.Equal(t, "list", calls[2].ToolName)
	require.JSONEq(t, `{}`, string(calls[2].Args))

	// Every tool-call delta names its call, so they can be routed while
	// streaming.
	deltas := b.rec.All()
	require.Equal(t, sdk.ChatMessagePart{Type: sdk.PartText, Text: "Reading both."}, deltas[0])
	for _, p := range deltas[1:] {
		require.Equal(t, sdk.PartToolCall, p.Type)
		require.NotEmpty(t, p.ToolCallID)
	}
}

func streamReasoning(t *testing.T, a Adapter) {
	b := setup(t, a, llmtest.Join(llmtest.Reasoning("Let me ", "think."), llmtest.TextChunks("42")))
	resp, err := b.p.Stream(context.Background(), UserRequest(a.Model, "meaning?"), b.rec.Add)
	require.NoError(t, err)
	require.Equal(t, []sdk.ChatMessagePart{
		{Type: sdk.PartReasoning, Text: "Let me think."},
		{Type: sdk.PartText, Text: "42"},
	}, resp.Parts)
	require.Equal(t, sdk.ChatMessagePart{Type: sdk.PartReasoning, Text: "Let me "}, b.rec.All()[0])
}

func streamUsage(t *testing.T, a Adapter) {
	u := llmtest.Usage{InputTokens: 120, OutputTokens: 30, ReasoningTokens: 7, CacheReadTokens: 100}
	want := llm.Usage{InputTokens: 120, OutputTokens: 30, ReasoningTokens: 7, CacheReadTokens: 100}
	if a.CacheCreation {
		u.CacheCreationTokens, want.CacheCreationTokens = 20, 20
	}
	b := setup(t, a, llmtest.TextChunks("ok").WithUsage(u))
	resp, err := b.p.Stream(context.Background(), UserRequest(a.Model, "hi"), nil)
	require.NoError(t, err)
	require.Equal(t, want, resp.Usage)
}

func streamLength(t *testing.T, a Adapter) {
	b := setup(t, a, llmtest.TextChunks("cut").WithFinish("length"))
	resp, err := b.p.Stream(context.Background(), UserRequest(a.Model, "long"), nil)
	require.NoError(t, err)
	require.Equal(t, "length", resp.FinishReason)
}

func streamContentFilter(t *testing.T, a Adapter) {
	b := setup(t, a, llmtest.TextChunks("I can").WithFinish("content_filter"))
	resp, err := b.p.Stream(context.Background(), UserRequest(a.Model, "bad"), nil)
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, sdk.ChatErrorContentFilter, e.Kind)
	require.False(t, e.Retryable)
	require.Equal(t, "content_filter", resp.FinishReason)
}

// streamErrors: an HTTP error answer is classified by status, carries the
// server's message and is never retried by the adapter (chatd retries).
func streamErrors(t *testing.T, a Adapter) {
	cases := []struct {
		name      string
		status    int
		kind      sdk.ChatErrorKind
		retryable bool
	}{
		{"auth", http.StatusUnauthorized, sdk.ChatErrorAuth, false},
		{"forbidden", http.StatusForbidden, sdk.ChatErrorAuth, false},
		{"rate limit", http.StatusTooManyRequests, sdk.ChatErrorRateLimit, true},
		{"unavailable", http.StatusServiceUnavailable, sdk.ChatErrorOverloaded, true},
		{"overloaded", 529, sdk.ChatErrorOverloaded, true},
		{"server error", http.StatusInternalServerError, sdk.ChatErrorGeneric, true},
		{"timeout", http.StatusGatewayTimeout, sdk.ChatErrorTimeout, true},
		{"bad request", http.StatusBadRequest, sdk.ChatErrorConfig, false},
		{"unknown model", http.StatusNotFound, sdk.ChatErrorConfig, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, a, llmtest.HTTPError(tc.status, "scripted failure"))
			_, err := b.p.Stream(context.Background(), UserRequest(a.Model, "hi"), b.rec.Add)
			var e *llm.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.kind, e.Kind)
			require.Equal(t, tc.retryable, e.Retryable)
			require.Equal(t, tc.status, e.StatusCode)
			require.Equal(t, a.Name, e.Provider)
			require.Equal(t, "scripted failure", e.Message)
			require.Len(t, b.srv.Requests(), 1, "the SDK must not retry; chatd does")
			require.Empty(t, b.rec.All())
		})
	}
}

func streamErrorMidStream(t *testing.T, a Adapter) {
	se := a.StreamError
	require.NotZero(t, se.Status, "Adapter.StreamError")
	b := setup(t, a, llmtest.Join(llmtest.TextChunks("partial"), llmtest.StreamError(se.Status, se.Message)))
	resp, err := b.p.Stream(context.Background(), UserRequest(a.Model, "hi"), b.rec.Add)
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, se.Kind, e.Kind)
	require.True(t, e.Retryable)
	require.Equal(t, se.Message, e.Message)
	require.Equal(t, []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "partial"}}, resp.Parts)
}

// streamHangCancelled: cancelling the context ends a stream that hangs
// before its headers or in its middle with context.Canceled, which is not
// a provider failure.
func streamHangCancelled(t *testing.T, a Adapter) {
	for name, reply := range map[string]llmtest.Reply{
		"before headers": llmtest.Hang(),
		"mid stream":     llmtest.Join(llmtest.TextChunks("par"), llmtest.Hang()),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, a, reply)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				<-reply.Started()
				cancel()
			}()
			_, err := b.p.Stream(ctx, UserRequest(a.Model, "hi"), b.rec.Add)
			require.ErrorIs(t, err, context.Canceled)
			var e *llm.Error
			require.False(t, errors.As(err, &e), "cancellation is not a provider failure")
		})
	}
}

func streamTruncated(t *testing.T, a Adapter) {
	reply := llmtest.Join(llmtest.TextChunks("par"), llmtest.Hang())
	b := setup(t, a, reply)
	go func() {
		<-reply.Started()
		b.srv.Close() // the connection ends without a finish
	}()
	resp, err := b.p.Stream(context.Background(), UserRequest(a.Model, "hi"), nil)
	var e *llm.Error
	require.ErrorAs(t, err, &e, "a cut stream is never a complete answer")
	require.True(t, e.Retryable)
	require.Equal(t, []sdk.ChatMessagePart{{Type: sdk.PartText, Text: "par"}}, resp.Parts)
}

// streamHangDeadline: a deadline that passes while the server hangs is a
// retryable timeout. The server hangs until the client goes away, so the
// short deadline is what ends the call, not a sleep.
func streamHangDeadline(t *testing.T, a Adapter) {
	b := setup(t, a, llmtest.Hang())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := b.p.Stream(ctx, UserRequest(a.Model, "hi"), nil)
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, sdk.ChatErrorTimeout, e.Kind)
	require.True(t, e.Retryable)
}

func streamConnectionRefused(t *testing.T, a Adapter) {
	srv := a.NewServer(t)
	url := srv.URL
	srv.Close()
	_, err := a.New(url).Stream(context.Background(), UserRequest(a.Model, "hi"), nil)
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, sdk.ChatErrorGeneric, e.Kind)
	require.True(t, e.Retryable)
}
