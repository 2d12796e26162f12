package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// NewAnthropic starts a fake Anthropic Messages API (POST /v1/messages,
// streaming only) answering with replies in order. Its URL is the server
// root, like https://api.anthropic.com. It is closed on t.Cleanup.
func NewAnthropic(t testing.TB, replies ...Reply) *Server {
	return newServer(t, anthropicProtocol{}, "", replies)
}

type anthropicProtocol struct{}

func (anthropicProtocol) path() string { return "/v1/messages" }

func (anthropicProtocol) check(body map[string]any) (int, string) {
	if _, ok := body["model"].(string); !ok {
		return http.StatusBadRequest, "model: Field required"
	}
	if _, ok := body["max_tokens"].(float64); !ok {
		return http.StatusBadRequest, "max_tokens: Field required"
	}
	msgs, ok := body["messages"].([]any)
	if !ok || len(msgs) == 0 {
		return http.StatusBadRequest, "messages: at least one message is required"
	}
	if status, msg := checkAnthropicMessages(msgs); status != 0 {
		return status, msg
	}
	if body["stream"] != true {
		return http.StatusBadRequest, "llmtest: only streaming requests are supported (stream: true)"
	}
	return 0, ""
}

// anthropicErrorType is the error.type the real API sends with status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// writeError writes the real error shape:
// {"type":"error","error":{"type":...,"message":...},"request_id":...}.
func (anthropicProtocol) writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_llmtest")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type":       "error",
		"error":      map[string]any{"type": anthropicErrorType(status), "message": message},
		"request_id": "req_llmtest",
	})
}

// anthropicStopReason maps a neutral finish reason to stop_reason.
func anthropicStopReason(finish string) string {
	switch finish {
	case "stop":
		return "end_turn"
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	case "content_filter":
		return "refusal"
	}
	return finish
}

func (anthropicProtocol) stream(s *streamer, body map[string]any, r Reply) {
	model, _ := body["model"].(string)
	u := r.usageOrDefault()
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_llmtest", "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens": u.InputTokens, "output_tokens": 1,
			"cache_creation_input_tokens": u.CacheCreationTokens, "cache_read_input_tokens": u.CacheReadTokens,
		},
	}})
	s.event("ping", map[string]any{"type": "ping"})

	index, open := -1, ""
	closeBlock := func() {
		if open == "" {
			return
		}
		if open == "thinking" {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "signature_delta", "signature": "c2lnLWxsbXRlc3Q="}})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		open = ""
	}
	startBlock := func(kind string, block map[string]any) {
		closeBlock()
		index++
		open = kind
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": block})
	}
	delta := func(d map[string]any) {
		s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": d})
	}
	calls := 0
	for _, st := range r.steps {
		switch st.kind {
		case stepText:
			if open != "text" {
				startBlock("text", map[string]any{"type": "text", "text": ""})
			}
			delta(map[string]any{"type": "text_delta", "text": st.text})
		case stepReasoning:
			if open != "thinking" {
				startBlock("thinking", map[string]any{"type": "thinking", "thinking": "", "signature": ""})
			}
			delta(map[string]any{"type": "thinking_delta", "thinking": st.text})
		case stepToolCall:
			id := st.id
			if id == "" {
				id = fmt.Sprintf("toolu_llmtest_%02d", calls)
			}
			calls++
			startBlock("tool_use", map[string]any{"type": "tool_use", "id": id, "name": st.name, "input": map[string]any{}})
			for _, piece := range st.args {
				delta(map[string]any{"type": "input_json_delta", "partial_json": piece})
			}
			closeBlock()
		case stepStreamError:
			s.event("error", map[string]any{"type": "error",
				"error": map[string]any{"type": anthropicErrorType(st.status), "message": st.message}})
			return
		case stepHang:
			if !s.hang(st.hang) {
				return
			}
		}
	}
	closeBlock()
	usage := map[string]any{"output_tokens": u.OutputTokens}
	if u.ReasoningTokens > 0 {
		usage["output_tokens_details"] = map[string]any{"thinking_tokens": u.ReasoningTokens}
	}
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": anthropicStopReason(r.finishReason()), "stop_sequence": nil},
		"usage": usage})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}
