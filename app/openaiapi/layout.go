package openaiapi

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
)

// turn is everything a response is computed from: the chat, the anchor
// message, the stored messages after it up to the next message a person
// wrote (the boundary), the live parts of the step running now, and the
// outcome of the durable request that started the turn.
type turn struct {
	chat     sdk.Chat
	anchor   sdk.ChatMessage
	out      []sdk.ChatMessage
	boundary *sdk.ChatMessage
	// results are the server-side tool results among out, by call id.
	results map[string]sdk.ChatMessagePart
	// live are the assembled parts of the running step (nil: none).
	live    []sdk.ChatMessagePart
	outcome *sdk.RequestOutcome
	model   string
	// request holds what only the creating request knows (instructions,
	// background, ...); zero on a later read.
	request requestEcho
}

// requestEcho is the part of a Response that echoes its request.
type requestEcho struct {
	Instructions       *string
	Background         bool
	MaxOutputTokens    *int64
	PreviousResponseID string
	Tools              []json.RawMessage
	ToolChoice         json.RawMessage
	Conversation       bool
	Effort             string
}

// personal reports whether a person wrote m: a prompt, or the results of
// client (function) tools. Such a message starts a new response.
func personal(m sdk.ChatMessage) bool {
	return m.CreatedBy != nil && (m.Role == "user" || m.Role == "tool")
}

// newTurn splits a chat's people-visible history at the anchor.
func newTurn(chat sdk.Chat, msgs []sdk.ChatMessage, anchor int64) (turn, bool) {
	t := turn{chat: chat, results: map[string]sdk.ChatMessagePart{}}
	found := false
	for i, m := range msgs {
		if !found {
			if m.ID == anchor && personal(m) {
				t.anchor, found = m, true
			}
			continue
		}
		if personal(m) {
			t.boundary = &msgs[i]
			break
		}
		if m.Compressed {
			continue
		}
		t.out = append(t.out, m)
		if m.Role == "tool" {
			for _, p := range m.Content {
				if p.Type == sdk.PartToolResult {
					t.results[p.ToolCallID] = p
				}
			}
		}
	}
	return t, found
}

// requestID is the durable request of the turn this response belongs to:
// the anchor's, or for a continuation the nearest prompt's before it.
func requestOf(msgs []sdk.ChatMessage, anchor int64) *uuid.UUID {
	var id *uuid.UUID
	for _, m := range msgs {
		if m.ID > anchor {
			break
		}
		if m.Role == "user" && personal(m) {
			id = m.RequestID
		}
	}
	return id
}

// Response statuses (openai-go responses.ResponseStatus).
const (
	statusQueued     = "queued"
	statusInProgress = "in_progress"
	statusCompleted  = "completed"
	statusFailed     = "failed"
	statusCancelled  = "cancelled"
	statusIncomplete = "incomplete"
)

// status is the response's status and, when it failed, why.
func (t turn) status() (string, *sdk.ChatError) {
	if t.boundary != nil && t.boundary.Role == "tool" {
		return statusCompleted, nil // it ended with function calls, now answered
	}
	if t.boundary == nil {
		switch t.chat.Status {
		case sdk.ChatStatusRequiresAction:
			return statusCompleted, nil
		case sdk.ChatStatusRunning, sdk.ChatStatusInterrupting:
			return statusInProgress, nil
		}
	}
	if o := t.outcome; o != nil {
		switch o.Status {
		case "interrupted", "cancelled", "superseded":
			return statusCancelled, nil
		case "error":
			return statusFailed, o.LastError
		}
		return statusCompleted, nil
	}
	if t.boundary == nil && t.chat.Status == sdk.ChatStatusError {
		return statusFailed, t.chat.LastError
	}
	return statusCompleted, nil
}

func terminal(status string) bool {
	return status != statusInProgress && status != statusQueued
}

// item is one output item of a response.
type item struct {
	kind    string // message, reasoning, function_call, mcp_call
	id      string
	text    string // message and reasoning
	callID  string
	name    string
	args    string
	output  string
	isError bool
	done    bool
}

// items are the response's output items in order. Stored parts become
// done items; while the response runs, the live parts follow them (all
// but the last one done) and a tool call without its result yet ends the
// list, so nothing after it is shown before it.
func (t turn) items(status string) []item {
	var out []item
	next := func(prefix string) string { return itemID(prefix, t.anchor.ID, len(out)) }
	add := func(p sdk.ChatMessagePart, done bool) bool {
		switch p.Type {
		case sdk.PartText:
			if p.Text != "" {
				out = append(out, item{kind: "message", id: next("msg"), text: p.Text, done: done})
			}
		case sdk.PartReasoning:
			if p.Text != "" {
				out = append(out, item{kind: "reasoning", id: next("rs"), text: p.Text, done: done})
			}
		case sdk.PartToolCall:
			args := string(p.Args)
			if args == "" {
				args = "{}"
			}
			if r, ok := t.results[p.ToolCallID]; ok {
				out = append(out, item{kind: "mcp_call", id: next("mcp"), callID: p.ToolCallID, name: p.ToolName,
					args: args, output: resultText(r.Result), isError: r.IsError, done: true})
				return true
			}
			if !done || !terminal(status) && t.chat.Status != sdk.ChatStatusRequiresAction && t.boundary == nil {
				return false // its result (or the step) is still to come
			}
			out = append(out, item{kind: "function_call", id: next("fc"), callID: p.ToolCallID, name: p.ToolName, args: args, done: true})
		}
		return true
	}
	for _, m := range t.out {
		if m.Role != "assistant" {
			continue
		}
		for _, p := range m.Content {
			if !add(p, true) {
				return out
			}
		}
	}
	if terminal(status) {
		return out
	}
	for i, p := range t.live {
		if !add(p, i < len(t.live)-1) {
			break
		}
	}
	return out
}

// resultText is a tool result as the string an output carries.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// event is one server-sent event of a response's stream.
type event struct {
	seq  int64
	typ  string
	data map[string]any
}

// Sequence numbers. A response's events are a pure function of its
// stored messages (and, while it runs, its live parts), so any replica
// derives the same numbers at any time, before or after a restart. The
// numbers are positions, not counts: response.created is 0,
// response.in_progress 1, then each item's events take one position each,
// except a text (or arguments) delta, which ends at the position of its
// last byte: the text of an item occupies one position per byte. A delta
// carries the bytes after the client's starting_after, so a stream cut
// anywhere resumes with no gap and no duplicate, however the text was cut
// into deltas the first time. Numbers strictly increase; they are not
// contiguous.

// events returns the response's events with sequence numbers above
// after, and the position of its last one.
func (t turn) events(after int64) []event {
	status, _ := t.status()
	snapshot := t.response
	items := t.items(status)
	var evs []event
	pos := int64(-1)
	emit := func(typ string, data map[string]any) {
		pos++
		if pos > after {
			data["type"], data["sequence_number"] = typ, pos
			evs = append(evs, event{seq: pos, typ: typ, data: data})
		}
	}
	// span lays out text as one position per byte and emits what is past
	// after as one delta.
	span := func(typ, text string, base map[string]any) {
		start := pos
		pos += int64(len(text))
		if pos <= after {
			return
		}
		from := max(after-start, 0)
		for from > 0 && from < int64(len(text)) && !utf8.RuneStart(text[from]) {
			from++
		}
		d := clone(base)
		d["delta"], d["type"], d["sequence_number"] = text[from:], typ, pos
		evs = append(evs, event{seq: pos, typ: typ, data: d})
	}
	first := statusInProgress
	emit("response.created", map[string]any{"response": snapshot(first, nil)})
	emit("response.in_progress", map[string]any{"response": snapshot(first, nil)})
	for i, it := range items {
		base := map[string]any{"item_id": it.id, "output_index": i}
		emit("response.output_item.added", map[string]any{"output_index": i, "item": it.json(false)})
		switch it.kind {
		case "message", "reasoning":
			partType, deltaType, doneType := "output_text", "response.output_text.delta", "response.output_text.done"
			if it.kind == "reasoning" {
				partType, deltaType, doneType = "reasoning_text", "response.reasoning_text.delta", "response.reasoning_text.done"
			}
			cbase := clone(base)
			cbase["content_index"] = 0
			if it.kind == "message" {
				cbase["logprobs"] = []any{}
			}
			added := clone(base)
			added["content_index"], added["part"] = 0, contentPart(partType, "")
			emit("response.content_part.added", added)
			span(deltaType, it.text, cbase)
			if !it.done {
				return evs
			}
			d := clone(cbase)
			d["text"] = it.text
			emit(doneType, d)
			pd := clone(base)
			pd["content_index"], pd["part"] = 0, contentPart(partType, it.text)
			emit("response.content_part.done", pd)
		case "function_call":
			span("response.function_call_arguments.delta", it.args, base)
			d := clone(base)
			d["arguments"], d["name"] = it.args, it.name
			emit("response.function_call_arguments.done", d)
		case "mcp_call":
			d := clone(base)
			d["arguments"] = it.args
			emit("response.mcp_call_arguments.done", d)
			if it.isError {
				emit("response.mcp_call.failed", clone(base))
			} else {
				emit("response.mcp_call.completed", clone(base))
			}
		}
		emit("response.output_item.done", map[string]any{"output_index": i, "item": it.json(true)})
	}
	if !terminal(status) {
		return evs
	}
	typ := "response.completed"
	switch status {
	case statusFailed:
		typ = "response.failed"
	case statusCancelled, statusIncomplete:
		// The SDKs' stream unions have no response.cancelled event: a
		// cancelled response ends with response.incomplete carrying
		// status "cancelled" (docs/API.md).
		typ = "response.incomplete"
	}
	emit(typ, map[string]any{"response": snapshot(status, items)})
	return evs
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+4)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func contentPart(typ, text string) map[string]any {
	p := map[string]any{"type": typ, "text": text}
	if typ == "output_text" {
		p["annotations"] = []any{}
		p["logprobs"] = []any{}
	}
	return p
}

// json is the item in the Responses shape, done or as first added.
func (it item) json(done bool) map[string]any {
	status := "in_progress"
	if done {
		status = "completed"
	}
	switch it.kind {
	case "message":
		content := []any{}
		if done {
			content = append(content, contentPart("output_text", it.text))
		}
		return map[string]any{"id": it.id, "type": "message", "role": "assistant", "status": status, "content": content}
	case "reasoning":
		content := []any{}
		if done {
			content = append(content, contentPart("reasoning_text", it.text))
		}
		return map[string]any{"id": it.id, "type": "reasoning", "summary": []any{}, "content": content, "status": status}
	case "function_call":
		args := ""
		if done {
			args = it.args
		}
		return map[string]any{"id": it.id, "type": "function_call", "call_id": it.callID, "name": it.name, "arguments": args, "status": status}
	}
	m := map[string]any{"id": it.id, "type": "mcp_call", "server_label": "chatd", "name": it.name, "arguments": it.args,
		"status": status, "output": nil, "error": nil}
	if done {
		if it.isError {
			m["status"], m["error"] = "failed", it.output
		} else {
			m["output"] = it.output
		}
	}
	return m
}

// usage sums the usage of the response's assistant messages (nil when
// the provider reported none).
func (t turn) usage() map[string]any {
	var in, out, reasoning, cached int64
	seen := false
	for _, m := range t.out {
		if u := m.Usage; u != nil && m.Role == "assistant" {
			seen = true
			in += u.InputTokens
			out += u.OutputTokens
			reasoning += u.ReasoningTokens
			cached += u.CacheReadTokens
		}
	}
	if !seen {
		return nil
	}
	return map[string]any{
		"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": cached},
		"output_tokens": out, "output_tokens_details": map[string]any{"reasoning_tokens": reasoning},
		"total_tokens": in + out,
	}
}

// response is the Response object (openai-go responses.Response).
func (t turn) response(status string, items []item) map[string]any {
	_, failure := t.status()
	output := make([]any, 0, len(items))
	for _, it := range items {
		output = append(output, it.json(it.done))
	}
	metadata := map[string]string{}
	for k, v := range t.chat.Labels {
		metadata[k] = v
	}
	r := map[string]any{
		"id": responseID(t.chat.ID, t.anchor.ID), "object": "response",
		"created_at": t.anchor.CreatedAt.Unix(), "status": status, "model": t.model,
		"output": output, "metadata": metadata, "error": nil, "incomplete_details": nil,
		"instructions": nil, "max_output_tokens": nil, "previous_response_id": nil,
		"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"temperature": nil, "top_p": nil, "truncation": "disabled", "store": true,
		"background": t.request.Background, "text": map[string]any{"format": map[string]any{"type": "text"}},
		"reasoning": map[string]any{"effort": nil, "summary": nil}, "usage": nil, "user": nil,
		"conversation": map[string]any{"id": conversationID(t.chat.ID)}, "completed_at": nil,
	}
	if u := t.usage(); u != nil && terminal(status) {
		r["usage"] = u
	}
	if status == statusFailed {
		e := map[string]any{"code": "server_error", "message": "the turn failed"}
		if failure != nil {
			e["message"] = failure.Message
			if failure.Kind == sdk.ChatErrorRateLimit {
				e["code"] = "rate_limit_exceeded"
			}
		}
		r["error"] = e
	}
	if terminal(status) && len(t.out) > 0 {
		r["completed_at"] = t.out[len(t.out)-1].CreatedAt.Unix()
	}
	echo := t.request
	if echo.Instructions != nil {
		r["instructions"] = *echo.Instructions
	}
	if echo.MaxOutputTokens != nil {
		r["max_output_tokens"] = *echo.MaxOutputTokens
	}
	if echo.PreviousResponseID != "" {
		r["previous_response_id"] = echo.PreviousResponseID
	}
	if len(echo.Tools) > 0 {
		r["tools"] = echo.Tools
	}
	if len(echo.ToolChoice) > 0 {
		r["tool_choice"] = echo.ToolChoice
	}
	effort := echo.Effort
	if effort == "" && t.anchor.ReasoningEffort != nil {
		effort = *t.anchor.ReasoningEffort
	}
	if effort != "" {
		r["reasoning"] = map[string]any{"effort": effort, "summary": nil}
	}
	return r
}

// inputItems are the anchor's content as Responses input items.
func (t turn) inputItems() []map[string]any {
	return inputItemsOf(t.anchor)
}

func inputItemsOf(m sdk.ChatMessage) []map[string]any {
	var out []map[string]any
	if m.Role == "tool" {
		for i, p := range m.Content {
			if p.Type == sdk.PartToolResult {
				out = append(out, map[string]any{"id": inputItemID("fco", m.ID, i), "type": "function_call_output",
					"call_id": p.ToolCallID, "output": resultText(p.Result), "status": "completed"})
			}
		}
		return out
	}
	var content []any
	for _, p := range m.Content {
		if p.Type == sdk.PartText {
			content = append(content, map[string]any{"type": "input_text", "text": p.Text})
		}
	}
	if content == nil {
		content = []any{}
	}
	return append(out, map[string]any{"id": inputItemID("msg", m.ID, 0), "type": "message", "role": "user",
		"status": "completed", "content": content})
}

func inputItemID(prefix string, msg int64, n int) string {
	return prefix + "_" + strconv.FormatInt(msg, 10) + "_in" + strconv.Itoa(n)
}
