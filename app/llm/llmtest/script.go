// Package llmtest holds fake LLM servers that speak the real wire protocols
// (OpenAI Chat Completions SSE, OpenAI Responses SSE, Anthropic Messages
// SSE), so tests run the real provider code over real HTTP. A test scripts one Reply per request:
//
//	srv := llmtest.NewOpenAI(t,
//		llmtest.Join(llmtest.TextChunks("Let me look."), llmtest.ToolCall("call_1", "search", `{"q":"go"}`)),
//		llmtest.TextChunks("Found ", "it."),
//	)
//	p := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "test"})
//	...
//	require.Equal(t, "gpt-test", srv.Requests()[0].JSON(t)["model"])
//
// Replies are written in neutral terms (text, reasoning, tool calls, usage,
// finish reason "stop", "tool_calls", "length" or "content_filter"); each
// server renders them in its own protocol.
package llmtest

import (
	"sync"
	"unicode/utf8"
)

// Usage is the token accounting a Reply reports.
type Usage struct {
	InputTokens         int64
	OutputTokens        int64
	ReasoningTokens     int64
	CacheReadTokens     int64
	CacheCreationTokens int64
}

// DefaultUsage is reported by replies that set none.
var DefaultUsage = Usage{InputTokens: 10, OutputTokens: 5}

// DefaultReply answers requests when the script is empty.
func DefaultReply() Reply { return TextChunks("Hello", " from", " llmtest.") }

type stepKind int

const (
	stepText stepKind = iota
	stepReasoning
	stepToolCall
	stepStreamError
	stepHang
)

type step struct {
	kind    stepKind
	text    string   // text or reasoning delta
	id      string   // tool call id
	name    string   // tool name
	args    []string // tool call argument pieces
	status  int      // stream error: the HTTP status it stands for
	message string   // stream error message
	hang    *hangSignal
}

// Reply is the scripted answer to one request. Build it with TextChunks,
// Reasoning, ToolCall, HTTPError, Hang and Join; the zero Reply streams an
// empty answer.
type Reply struct {
	steps   []step
	status  int    // HTTP error status; 0 = stream
	message string // HTTP error message
	echo    bool   // the message quotes the request's headers
	usage   *Usage
	finish  string
	raw     []string // Raw: the whole stream, verbatim
}

// TextChunks streams each chunk as one text delta.
func TextChunks(chunks ...string) Reply {
	r := Reply{}
	for _, c := range chunks {
		r.steps = append(r.steps, step{kind: stepText, text: c})
	}
	return r
}

// Reasoning streams each chunk as one reasoning delta (OpenAI-compatible
// servers: delta.reasoning_content; Anthropic: a thinking block).
func Reasoning(chunks ...string) Reply {
	r := Reply{}
	for _, c := range chunks {
		r.steps = append(r.steps, step{kind: stepReasoning, text: c})
	}
	return r
}

// ToolCall streams one tool call whose JSON arguments arrive in three
// pieces, so clients must assemble them. An empty id gets a generated one
// (call_llmtest_N on OpenAI, toolu_llmtest_NN on Anthropic).
func ToolCall(id, name, argsJSON string) Reply {
	return ToolCallChunks(id, name, splitRunes(argsJSON, 3)...)
}

// ToolCallChunks streams one tool call with the given argument pieces.
func ToolCallChunks(id, name string, argPieces ...string) Reply {
	return Reply{steps: []step{{kind: stepToolCall, id: id, name: name, args: argPieces}}}
}

// Raw streams exactly these JSON event payloads and nothing else, each as
// one server-sent event named by its "type" field (data-only when it has
// none). It scripts wire events the neutral steps do not cover.
func Raw(events ...string) Reply {
	return Reply{raw: events}
}

// HTTPError answers with status and the provider's real JSON error body.
func HTTPError(status int, message string) Reply {
	return Reply{status: status, message: message}
}

// EchoHeaders answers with status and an error message that quotes every
// request header, credentials included ("...; request headers:
// Authorization: Bearer sk-...; ..."), as some OpenAI-compatible gateways
// do: the shape of a provider error that carries the API key.
func EchoHeaders(status int, message string) Reply {
	return Reply{status: status, message: message, echo: true}
}

// StreamError ends an open stream with the provider's in-stream error
// (OpenAI: a data line with an error object; Anthropic: an error event of
// the type that status stands for, e.g. 529 overloaded_error).
func StreamError(status int, message string) Reply {
	return Reply{steps: []step{{kind: stepStreamError, status: status, message: message}}}
}

// Hang blocks until the request's context ends (or the server closes).
// Alone it blocks before any response header; after other steps (Join) it
// blocks mid-stream. Started is closed when the hang begins.
func Hang() Reply {
	return Reply{steps: []step{{kind: stepHang, hang: &hangSignal{ch: make(chan struct{})}}}}
}

// Pause blocks mid-stream like Hang until release is closed, then the
// stream goes on with the steps after it (Join): a slow answer whose end
// the test decides. Started is closed when the pause begins.
func Pause(release <-chan struct{}) Reply {
	return Reply{steps: []step{{kind: stepHang, hang: &hangSignal{ch: make(chan struct{}), release: release}}}}
}

// Started is closed when the first Hang (or Pause) step of r begins
// blocking; it is nil when r has neither.
func (r Reply) Started() <-chan struct{} {
	for _, s := range r.steps {
		if s.kind == stepHang {
			return s.hang.ch
		}
	}
	return nil
}

// Join concatenates the steps of replies into one stream, e.g. text then
// tool calls. The last usage and finish reason set win; an HTTP error in
// any of them makes the whole reply that error.
func Join(replies ...Reply) Reply {
	var out Reply
	for _, r := range replies {
		out.steps = append(out.steps, r.steps...)
		if r.usage != nil {
			out.usage = r.usage
		}
		if r.finish != "" {
			out.finish = r.finish
		}
		if r.status != 0 {
			out.status, out.message = r.status, r.message
		}
	}
	return out
}

// WithUsage returns r reporting u.
func (r Reply) WithUsage(u Usage) Reply {
	r.usage = &u
	return r
}

// WithFinish returns r ending with a neutral finish reason: "stop",
// "tool_calls", "length" or "content_filter". Without it a reply with tool
// calls finishes with "tool_calls" and any other with "stop".
func (r Reply) WithFinish(reason string) Reply {
	r.finish = reason
	return r
}

func (r Reply) finishReason() string {
	if r.finish != "" {
		return r.finish
	}
	for _, s := range r.steps {
		if s.kind == stepToolCall {
			return "tool_calls"
		}
	}
	return "stop"
}

func (r Reply) usageOrDefault() Usage {
	if r.usage != nil {
		return *r.usage
	}
	return DefaultUsage
}

type hangSignal struct {
	once    sync.Once
	ch      chan struct{}
	release <-chan struct{} // Pause: closed by the test; nil for Hang
}

func (h *hangSignal) start() { h.once.Do(func() { close(h.ch) }) }

// splitRunes cuts s into at most n pieces on rune boundaries (splitting a
// multi-byte rune would corrupt it once JSON-encoded).
func splitRunes(s string, n int) []string {
	count := utf8.RuneCountInString(s)
	if count == 0 {
		return nil
	}
	if n > count {
		n = count
	}
	size := (count + n - 1) / n
	var out []string
	var cur []rune
	for _, r := range s {
		cur = append(cur, r)
		if len(cur) == size {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	if len(cur) > 0 {
		out = append(out, string(cur))
	}
	return out
}
