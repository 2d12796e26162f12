package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// NewOpenAI starts a fake OpenAI Chat Completions API (POST
// /v1/chat/completions, streaming only) answering with replies in order.
// Its URL ends in /v1, like https://api.openai.com/v1. It is closed on
// t.Cleanup.
func NewOpenAI(t testing.TB, replies ...Reply) *Server {
	return newServer(t, openAIProtocol{}, "/v1", replies)
}

type openAIProtocol struct{}

func (openAIProtocol) path() string { return "/v1/chat/completions" }

func (openAIProtocol) check(body map[string]any) (int, string) {
	if _, ok := body["model"].(string); !ok {
		return http.StatusBadRequest, "you must provide a model parameter"
	}
	msgs, ok := body["messages"].([]any)
	if !ok || len(msgs) == 0 {
		return http.StatusBadRequest, "'messages' must contain at least one message"
	}
	if status, msg := checkOpenAIMessages(msgs); status != 0 {
		return status, msg
	}
	if body["stream"] != true {
		return http.StatusBadRequest, "llmtest: only streaming requests are supported (stream: true)"
	}
	return 0, ""
}

// writeError writes the real error shape: {"error": {message, type, param, code}}.
func (openAIProtocol) writeError(w http.ResponseWriter, status int, message string) {
	typ, code := openAIErrorType(status)
	var c any
	if code != "" {
		c = code
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": message, "type": typ, "param": nil, "code": c},
	})
}

func openAIErrorType(status int) (typ, code string) {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_request_error", "invalid_api_key"
	case status == http.StatusForbidden:
		return "permission_error", ""
	case status == http.StatusNotFound:
		return "invalid_request_error", "model_not_found"
	case status == http.StatusTooManyRequests:
		return "requests", "rate_limit_exceeded"
	case status >= 500:
		return "server_error", ""
	}
	return "invalid_request_error", ""
}

func (openAIProtocol) stream(s *streamer, body map[string]any, r Reply) {
	model, _ := body["model"].(string)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": 1700000000,
			"model": model, "system_fingerprint": "fp_llmtest",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
	}
	s.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	calls := 0
	for _, st := range r.steps {
		switch st.kind {
		case stepText:
			s.event("", chunk(map[string]any{"content": st.text}, nil))
		case stepReasoning:
			// The field vLLM, DeepSeek and llama.cpp use for thinking.
			s.event("", chunk(map[string]any{"reasoning_content": st.text}, nil))
		case stepToolCall:
			id := st.id
			if id == "" {
				id = fmt.Sprintf("call_llmtest_%d", calls)
			}
			s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": calls, "id": id, "type": "function",
				"function": map[string]any{"name": st.name, "arguments": ""},
			}}}, nil))
			for _, piece := range st.args {
				s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{
					"index": calls, "function": map[string]any{"arguments": piece},
				}}}, nil))
			}
			calls++
		case stepStreamError:
			typ, code := openAIErrorType(st.status)
			s.event("", map[string]any{"error": map[string]any{"message": st.message, "type": typ, "code": code}})
			return
		case stepHang:
			if !s.hang(st.hang) {
				return
			}
		}
	}
	s.event("", chunk(map[string]any{}, r.finishReason()))
	if opts, _ := body["stream_options"].(map[string]any); opts["include_usage"] == true {
		u := r.usageOrDefault()
		s.event("", map[string]any{
			"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": 1700000000,
			"model": model, "system_fingerprint": "fp_llmtest", "choices": []any{},
			"usage": map[string]any{
				"prompt_tokens":             u.InputTokens,
				"completion_tokens":         u.OutputTokens,
				"total_tokens":              u.InputTokens + u.OutputTokens,
				"prompt_tokens_details":     map[string]any{"cached_tokens": u.CacheReadTokens},
				"completion_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
			},
		})
	}
	s.raw("data: [DONE]\n\n")
}
