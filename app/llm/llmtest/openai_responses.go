package llmtest

import (
	"fmt"
	"net/http"
	"testing"
)

// NewOpenAIResponses starts a fake OpenAI Responses API (POST
// /v1/responses, streaming only) answering with replies in order. It
// streams the real server-sent events: response.created and
// response.in_progress, then per output item response.output_item.added,
// its deltas (response.output_text.delta, response.reasoning_summary_text.delta,
// response.function_call_arguments.delta) and their done events, then
// response.output_item.done, and last response.completed (or
// response.incomplete for "length" and "content_filter"). Errors are the
// real JSON error body, or an error event mid-stream. Its URL ends in /v1.
// It is closed on t.Cleanup.
func NewOpenAIResponses(t testing.TB, replies ...Reply) *Server {
	return newServer(t, openAIResponsesProtocol{}, "/v1", replies)
}

type openAIResponsesProtocol struct{}

func (openAIResponsesProtocol) path() string { return "/v1/responses" }

func (openAIResponsesProtocol) check(body map[string]any) (int, string) {
	if _, ok := body["model"].(string); !ok {
		return http.StatusBadRequest, "Missing required parameter: 'model'."
	}
	if _, ok := body["input"]; !ok {
		return http.StatusBadRequest, "Missing required parameter: 'input'."
	}
	if status, msg := checkResponsesInput(body["input"]); status != 0 {
		return status, msg
	}
	if body["stream"] != true {
		return http.StatusBadRequest, "llmtest: only streaming requests are supported (stream: true)"
	}
	return 0, ""
}

func (openAIResponsesProtocol) writeError(w http.ResponseWriter, status int, message string) {
	openAIProtocol{}.writeError(w, status, message)
}

// responsesStream renders one Reply as Responses API events.
type responsesStream struct {
	s      *streamer
	model  string
	seq    int
	output []any // the completed output items, for the final response
}

func (rs *responsesStream) send(typ string, fields map[string]any) {
	fields["type"] = typ
	fields["sequence_number"] = rs.seq
	rs.seq++
	rs.s.event(typ, fields)
}

func (rs *responsesStream) response(status string, usage *Usage, incomplete string) map[string]any {
	r := map[string]any{
		"id": "resp_llmtest", "object": "response", "created_at": 1700000000, "status": status,
		"model": rs.model, "output": rs.output, "error": nil, "incomplete_details": nil,
		"parallel_tool_calls": true, "tools": []any{}, "store": false,
	}
	if rs.output == nil {
		r["output"] = []any{}
	}
	if incomplete != "" {
		r["incomplete_details"] = map[string]any{"reason": incomplete}
	}
	if usage != nil {
		r["usage"] = map[string]any{
			"input_tokens":          usage.InputTokens,
			"input_tokens_details":  map[string]any{"cached_tokens": usage.CacheReadTokens},
			"output_tokens":         usage.OutputTokens,
			"output_tokens_details": map[string]any{"reasoning_tokens": usage.ReasoningTokens},
			"total_tokens":          usage.InputTokens + usage.OutputTokens,
		}
	}
	return r
}

func (openAIResponsesProtocol) stream(s *streamer, body map[string]any, r Reply) {
	model, _ := body["model"].(string)
	rs := &responsesStream{s: s, model: model}
	if len(r.steps) > 0 && r.steps[0].kind == stepHang {
		if !s.hang(r.steps[0].hang) { // before any response header
			return
		}
	}
	rs.send("response.created", map[string]any{"response": rs.response("in_progress", nil, "")})
	rs.send("response.in_progress", map[string]any{"response": rs.response("in_progress", nil, "")})

	calls := 0
	steps := r.steps
	for i := 0; i < len(steps); {
		st := steps[i]
		idx := len(rs.output)
		switch st.kind {
		case stepText, stepReasoning:
			// Consecutive deltas of one kind are one output item.
			j := i
			var pieces []string
			for j < len(steps) && steps[j].kind == st.kind {
				pieces = append(pieces, steps[j].text)
				j++
			}
			if st.kind == stepText {
				rs.message(idx, pieces)
			} else {
				rs.reasoning(idx, pieces)
			}
			i = j
			continue
		case stepToolCall:
			id := st.id
			if id == "" {
				id = fmt.Sprintf("call_llmtest_%d", calls)
			}
			rs.functionCall(idx, fmt.Sprintf("fc_llmtest_%d", calls), id, st.name, st.args)
			calls++
		case stepStreamError:
			_, code := openAIErrorType(st.status)
			if code == "" {
				code = "server_error"
			}
			rs.send("error", map[string]any{"code": code, "message": st.message, "param": nil})
			return
		case stepHang:
			if !s.hang(st.hang) {
				return
			}
		}
		i++
	}
	u := r.usageOrDefault()
	switch r.finishReason() {
	case "length":
		rs.send("response.incomplete", map[string]any{"response": rs.response("incomplete", &u, "max_output_tokens")})
	case "content_filter":
		rs.send("response.incomplete", map[string]any{"response": rs.response("incomplete", &u, "content_filter")})
	default:
		rs.send("response.completed", map[string]any{"response": rs.response("completed", &u, "")})
	}
}

func (rs *responsesStream) message(idx int, pieces []string) {
	id := fmt.Sprintf("msg_llmtest_%d", idx)
	rs.send("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{
		"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{},
	}})
	empty := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
	rs.send("response.content_part.added", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "part": empty})
	text := ""
	for _, p := range pieces {
		text += p
		rs.send("response.output_text.delta", map[string]any{
			"item_id": id, "output_index": idx, "content_index": 0, "delta": p, "logprobs": []any{},
		})
	}
	rs.send("response.output_text.done", map[string]any{
		"item_id": id, "output_index": idx, "content_index": 0, "text": text, "logprobs": []any{},
	})
	part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
	rs.send("response.content_part.done", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "part": part})
	item := map[string]any{"id": id, "type": "message", "status": "completed", "role": "assistant", "content": []any{part}}
	rs.send("response.output_item.done", map[string]any{"output_index": idx, "item": item})
	rs.output = append(rs.output, item)
}

func (rs *responsesStream) reasoning(idx int, pieces []string) {
	id := fmt.Sprintf("rs_llmtest_%d", idx)
	rs.send("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{
		"id": id, "type": "reasoning", "summary": []any{},
	}})
	rs.send("response.reasoning_summary_part.added", map[string]any{
		"item_id": id, "output_index": idx, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""},
	})
	text := ""
	for _, p := range pieces {
		text += p
		rs.send("response.reasoning_summary_text.delta", map[string]any{
			"item_id": id, "output_index": idx, "summary_index": 0, "delta": p,
		})
	}
	rs.send("response.reasoning_summary_text.done", map[string]any{
		"item_id": id, "output_index": idx, "summary_index": 0, "text": text,
	})
	part := map[string]any{"type": "summary_text", "text": text}
	rs.send("response.reasoning_summary_part.done", map[string]any{
		"item_id": id, "output_index": idx, "summary_index": 0, "part": part,
	})
	item := map[string]any{"id": id, "type": "reasoning", "summary": []any{part}}
	rs.send("response.output_item.done", map[string]any{"output_index": idx, "item": item})
	rs.output = append(rs.output, item)
}

func (rs *responsesStream) functionCall(idx int, itemID, callID, name string, args []string) {
	rs.send("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{
		"id": itemID, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": callID, "name": name,
	}})
	all := ""
	for _, a := range args {
		all += a
		rs.send("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": idx, "delta": a})
	}
	rs.send("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": idx, "arguments": all})
	item := map[string]any{
		"id": itemID, "type": "function_call", "status": "completed", "arguments": all, "call_id": callID, "name": name,
	}
	rs.send("response.output_item.done", map[string]any{"output_index": idx, "item": item})
	rs.output = append(rs.output, item)
}
