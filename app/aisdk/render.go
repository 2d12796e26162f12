package aisdk

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
)

// Target says which turn a stream renders: the turn of one user message,
// named by the durable request that admitted it or by its id.
type Target struct {
	// RequestID: the user message admitted with this request id (it may
	// still wait in the queue).
	RequestID uuid.NullUUID
	// MessageID: this user message (an edit's or a regeneration's new one).
	MessageID int64
	// After, when set, makes the stream a continuation: the steps up to
	// and including this assistant message are already on the client (it
	// answered their tool calls), so only what follows them is sent.
	After int64
	// Approved names the calls the client answered with an approval
	// decision (a denial's result is then tool-output-denied).
	Approved map[string]bool
}

// renderer turns the chat stream's events (stream.Server.Watch: the same
// bootstrap, messages and live parts every WebSocket viewer gets) into the
// UI message stream of one turn: one assistant UIMessage whose steps are
// the turn's stored assistant messages (each a start-step ... finish-step,
// the results of its tool calls inside it), the live parts of the running
// step streamed as deltas and reconciled with the stored message once it
// commits. It is pure: events in, chunks out, save one question it may
// ask the store (interrupted).
type renderer struct {
	target      Target
	chatID      uuid.UUID
	clientTools map[string]bool
	emit        func(Chunk)
	// interrupted, when set, answers whether the turn of a request ended
	// by an interruption: the stream shows the chat's latest state, so a
	// short-lived "interrupting" can be passed over between two events;
	// the request's durable outcome cannot.
	interrupted func(requestID uuid.UUID) bool

	msgs      map[int64]sdk.ChatMessage // the visible history, by id
	status    sdk.ChatStatus
	statusSet bool
	queued    map[uuid.UUID]bool // request ids waiting in the queue
	lastErr   *sdk.ChatError
	approvals []sdk.ToolApproval // pending approvals, from approval_required
	stopping  bool               // the turn was interrupted

	anchor   int64 // the turn's user message, once found
	over     bool  // a later user message ended the turn
	started  bool
	finished bool
	rendered map[int64]bool
	replies  []int64

	stepOpen, stepCommitted bool
	preview                 []*block // the running step's parts so far
	open                    *block   // its open text or reasoning part
	calls                   map[string]bool
	approvalSent            map[string]bool
	seq                     int
}

// block is one part of the running step, as streamed so far.
type block struct {
	kind  string // sdk.PartText, sdk.PartReasoning or sdk.PartToolCall
	id    string // the chunk id of a text or reasoning part
	text  string
	call  string
	ended bool
}

func newRenderer(chatID uuid.UUID, t Target, clientTools map[string]bool, emit func(Chunk)) *renderer {
	return &renderer{
		target: t, chatID: chatID, clientTools: clientTools, emit: emit,
		msgs: map[int64]sdk.ChatMessage{}, queued: map[uuid.UUID]bool{}, rendered: map[int64]bool{},
		calls: map[string]bool{}, approvalSent: map[string]bool{},
	}
}

// AssistantID is the UIMessage id of the reply to user message id.
func AssistantID(userMessageID int64) string { return "a-" + strconv.FormatInt(userMessageID, 10) }

// UserID is the UIMessage id chatd gives a stored user message.
func UserID(messageID int64) string { return "u-" + strconv.FormatInt(messageID, 10) }

// parseID reads a chatd UIMessage id of the prefix ("a-" or "u-").
func parseID(id, prefix string) (int64, bool) {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil && n > 0
}

// done reports whether the turn's stream has ended.
func (r *renderer) done() bool { return r.finished }

// apply takes one batch of stream events and emits what they add.
func (r *renderer) apply(events []sdk.ChatStreamEvent) error {
	for _, e := range events {
		if r.finished {
			return nil
		}
		if err := r.event(e); err != nil {
			return err
		}
	}
	if !r.finished {
		r.advance()
	}
	return nil
}

func (r *renderer) event(e sdk.ChatStreamEvent) error {
	switch e.Type {
	case sdk.StreamHistoryReset:
		r.msgs = map[int64]sdk.ChatMessage{}
	case sdk.StreamMessage:
		if e.Message != nil {
			r.msgs[e.Message.ID] = *e.Message
		}
		// Messages are rendered in order, before the events after them
		// (a preview_reset must not drop a step they just committed); the
		// turn's end is decided once the whole batch is in.
		r.render()
	case sdk.StreamStatus:
		if e.Status != nil {
			if r.statusSet && e.Status.Status != r.status && r.started {
				r.emit(Chunk{Type: ChunkDataStatus, Data: map[string]any{"status": e.Status.Status}, Transient: true})
			}
			r.status, r.statusSet = e.Status.Status, true
			if r.status == sdk.ChatStatusInterrupting && r.started {
				r.stopping = true
			}
		}
	case sdk.StreamError:
		r.lastErr = e.Error
	case sdk.StreamQueueUpdate:
		r.queued = map[uuid.UUID]bool{}
		for _, q := range e.QueuedMessages {
			if q.RequestID != nil {
				r.queued[*q.RequestID] = true
			}
		}
		if r.target.RequestID.Valid && r.queued[r.target.RequestID.UUID] {
			r.emit(Chunk{Type: ChunkDataQueue, Data: map[string]any{"queued": true, "queue_length": len(e.QueuedMessages)}, Transient: true})
		}
	case sdk.StreamRetry:
		if r.started && e.Retry != nil {
			r.emit(Chunk{Type: ChunkDataRetry, Data: e.Retry, Transient: true})
		}
	case sdk.StreamApprovalRequired:
		if e.ApprovalRequired != nil {
			r.approvals = e.ApprovalRequired.ToolCalls
		}
	case sdk.StreamPreviewReset:
		r.resetPreview()
	case sdk.StreamMessagePart:
		if e.MessagePart != nil {
			r.live(e.MessagePart.Part)
		}
	}
	return nil
}

// ordered is the visible history's ids in order.
func (r *renderer) ordered() []int64 {
	ids := make([]int64, 0, len(r.msgs))
	for id := range r.msgs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// findAnchor looks for the target's user message.
func (r *renderer) findAnchor() (int64, bool) {
	if r.target.MessageID > 0 {
		m, ok := r.msgs[r.target.MessageID]
		return m.ID, ok && m.Role == "user"
	}
	for id, m := range r.msgs {
		if m.Role == "user" && m.RequestID != nil && *m.RequestID == r.target.RequestID.UUID {
			return id, true
		}
	}
	return 0, false
}

// turn returns the messages of the anchor's turn after it, and whether a
// later user message ended it.
func (r *renderer) turn() (replies []sdk.ChatMessage, over bool) {
	for _, id := range r.ordered() {
		if id <= r.anchor {
			continue
		}
		m := r.msgs[id]
		if m.Role == "user" {
			return replies, true
		}
		replies = append(replies, m)
	}
	return replies, false
}

// render starts the message once the anchor is in the history and
// renders the turn's stored messages not rendered yet; it reports whether
// the stream has started.
func (r *renderer) render() bool {
	if r.finished {
		return false
	}
	if !r.started {
		id, ok := r.findAnchor()
		if !ok {
			return false
		}
		r.anchor, r.started = id, true
		r.emit(Chunk{Type: ChunkStart, MessageID: AssistantID(id), MessageMetadata: map[string]any{"chatd": r.meta()}})
	}
	if _, ok := r.msgs[r.anchor]; !ok {
		return true
	}
	replies, over := r.turn()
	r.over = over
	for _, m := range replies {
		if r.rendered[m.ID] {
			continue
		}
		r.rendered[m.ID] = true
		r.replies = append(r.replies, m.ID)
		parts, err := m.Parts()
		if err != nil {
			r.fail("a stored message does not decode: " + err.Error())
			return false
		}
		switch {
		case m.Role == "assistant" && m.ID <= r.target.After:
			for _, p := range parts {
				if p.Type == sdk.PartToolCall {
					r.calls[p.ToolCallID] = true
				}
			}
		case m.Role == "assistant":
			r.commitStep(parts)
		case m.Role == "tool":
			r.toolResults(parts)
		}
	}
	return true
}

// advance renders what the history now holds and ends the turn when it
// is over.
func (r *renderer) advance() {
	if r.finished || !r.statusSet {
		return
	}
	if !r.started {
		if _, ok := r.findAnchor(); !ok {
			if !r.target.RequestID.Valid || !r.queued[r.target.RequestID.UUID] {
				r.fail("the message is no longer in the chat's history (it was edited or the chat was cleared)")
			}
			return
		}
	}
	if !r.render() {
		return
	}
	if _, ok := r.msgs[r.anchor]; !ok {
		r.closeStep()
		r.emit(Chunk{Type: ChunkAbort, Reason: "the message was edited"})
		r.end(FinishInterrupted)
		return
	}
	if r.over {
		r.end(FinishStop)
		return
	}
	if r.status == sdk.ChatStatusRequiresAction {
		for _, a := range r.approvals {
			if a.State == sdk.ApprovalPending && r.calls[a.ToolCallID] && !r.approvalSent[a.ToolCallID] {
				r.approvalSent[a.ToolCallID] = true
				r.emit(Chunk{Type: ChunkToolApproval, ApprovalID: a.ToolCallID, ToolCallID: a.ToolCallID})
			}
		}
	}
	switch r.status {
	case sdk.ChatStatusWaiting:
		if !r.stopping && r.interrupted != nil && r.target.RequestID.Valid {
			r.stopping = r.interrupted(r.target.RequestID.UUID)
		}
		if r.stopping {
			r.closeStep()
			r.emit(Chunk{Type: ChunkAbort, Reason: "interrupted"})
			r.end(FinishInterrupted)
			return
		}
		r.end(FinishStop)
	case sdk.ChatStatusRequiresAction:
		r.end(FinishToolCalls)
	case sdk.ChatStatusError:
		text := "the turn failed"
		if r.lastErr != nil && r.lastErr.Message != "" {
			text = r.lastErr.Message
		}
		r.closeStep()
		r.emit(Chunk{Type: ChunkError, ErrorText: text})
		r.end(FinishError)
	}
}

// meta is the message metadata: chatd's ids of the turn.
func (r *renderer) meta() map[string]any {
	m := map[string]any{"chat_id": r.chatID, "message_id": r.anchor}
	if um, ok := r.msgs[r.anchor]; ok && um.RequestID != nil {
		m["request_id"] = *um.RequestID
	}
	return m
}

// fail ends a stream that cannot render its turn.
func (r *renderer) fail(text string) {
	r.closeStep()
	r.emit(Chunk{Type: ChunkError, ErrorText: text})
	r.finished = true
}

// end closes the turn's message.
func (r *renderer) end(reason string) {
	r.closeStep()
	meta := r.meta()
	meta["status"] = r.status
	meta["reply_message_ids"] = append([]int64{}, r.replies...)
	r.emit(Chunk{Type: ChunkFinish, FinishReason: reason, MessageMetadata: map[string]any{"chatd": meta}})
	r.finished = true
}

func (r *renderer) nextID(kind string) string {
	r.seq++
	return fmt.Sprintf("%s-%d-%d", kind, r.anchor, r.seq)
}

func (r *renderer) openStep() {
	if r.stepOpen && r.stepCommitted {
		r.closeStep()
	}
	if !r.stepOpen {
		r.emit(Chunk{Type: ChunkStartStep})
		r.stepOpen, r.stepCommitted = true, false
	}
}

func (r *renderer) closeStep() {
	r.closeOpen()
	if r.stepOpen {
		r.emit(Chunk{Type: ChunkFinishStep})
	}
	r.stepOpen, r.stepCommitted, r.preview = false, false, nil
}

// closeOpen ends the open text or reasoning part.
func (r *renderer) closeOpen() {
	if r.open == nil {
		return
	}
	r.endBlock(r.open)
	r.open = nil
}

func (r *renderer) endBlock(b *block) {
	if b.ended || b.kind == sdk.PartToolCall {
		return
	}
	b.ended = true
	typ := ChunkTextEnd
	if b.kind == sdk.PartReasoning {
		typ = ChunkReasoningEnd
	}
	r.emit(Chunk{Type: typ, ID: b.id})
}

// startText opens a text or reasoning part with its first text.
func (r *renderer) startText(kind, text string) *block {
	r.closeOpen()
	b := &block{kind: kind, id: r.nextID(kind)}
	start, delta := ChunkTextStart, ChunkTextDelta
	if kind == sdk.PartReasoning {
		start, delta = ChunkReasoningStart, ChunkReasoningDelta
	}
	r.emit(Chunk{Type: start, ID: b.id})
	if text != "" {
		r.emit(Chunk{Type: delta, ID: b.id, Delta: text})
		b.text = text
	}
	return b
}

func (r *renderer) addText(b *block, text string) {
	if text == "" {
		return
	}
	typ := ChunkTextDelta
	if b.kind == sdk.PartReasoning {
		typ = ChunkReasoningDelta
	}
	r.emit(Chunk{Type: typ, ID: b.id, Delta: text})
	b.text += text
}

// live streams one part of the running step.
func (r *renderer) live(p sdk.ChatMessagePart) {
	if !r.started || r.finished || r.over {
		return
	}
	r.openStep()
	switch p.Type {
	case sdk.PartText, sdk.PartReasoning:
		if r.open != nil && r.open.kind == p.Type {
			r.addText(r.open, p.Text)
			return
		}
		b := r.startText(p.Type, p.Text)
		r.preview = append(r.preview, b)
		r.open = b
	case sdk.PartToolCall:
		i := slices.IndexFunc(r.preview, func(b *block) bool { return b.kind == sdk.PartToolCall && b.call == p.ToolCallID })
		if i < 0 {
			r.closeOpen()
			r.preview = append(r.preview, &block{kind: sdk.PartToolCall, call: p.ToolCallID})
			r.emit(Chunk{Type: ChunkToolInputStart, ToolCallID: p.ToolCallID, ToolName: p.ToolName, Dynamic: !r.clientTools[p.ToolName]})
		}
		if p.ArgsDelta != "" {
			r.emit(Chunk{Type: ChunkToolInputDelta, ToolCallID: p.ToolCallID, InputTextDelta: p.ArgsDelta})
		}
	}
}

// resetPreview drops the running step's parts when its attempt is retired
// (a retry starts the step over).
func (r *renderer) resetPreview() {
	if r.stepCommitted || len(r.preview) == 0 {
		return
	}
	r.open, r.preview = nil, nil
	r.emit(Chunk{Type: ChunkResetStep})
}

// commitStep renders a stored assistant message: the rest of what its
// live parts began, or all of it; a message that does not continue them
// (they were another attempt's) replaces them.
func (r *renderer) commitStep(parts []sdk.ChatMessagePart) {
	if r.stepCommitted || !r.stepOpen {
		r.openStep()
	}
	var main []sdk.ChatMessagePart
	for _, p := range parts {
		if (p.Type == sdk.PartText || p.Type == sdk.PartReasoning) && p.Text == "" {
			continue
		}
		if p.Type == sdk.PartText || p.Type == sdk.PartReasoning || p.Type == sdk.PartToolCall {
			main = append(main, p)
		}
	}
	if !r.continues(main) {
		r.open, r.preview = nil, nil
		r.emit(Chunk{Type: ChunkResetStep})
	}
	for i, p := range main {
		var b *block
		if i < len(r.preview) {
			b = r.preview[i]
		}
		switch p.Type {
		case sdk.PartText, sdk.PartReasoning:
			if b == nil {
				b = r.startText(p.Type, p.Text)
			} else {
				r.addText(b, p.Text[len(b.text):])
			}
			r.endBlock(b)
		case sdk.PartToolCall:
			if b == nil {
				r.emit(Chunk{Type: ChunkToolInputStart, ToolCallID: p.ToolCallID, ToolName: p.ToolName, Dynamic: !r.clientTools[p.ToolName]})
			}
			input := p.Args
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			r.calls[p.ToolCallID] = true
			r.emit(Chunk{Type: ChunkToolInputAvailable, ToolCallID: p.ToolCallID, ToolName: p.ToolName, Input: input,
				Dynamic: !r.clientTools[p.ToolName], ProviderExecuted: p.ProviderExecuted})
		}
	}
	r.open, r.preview = nil, nil
	for _, p := range parts {
		switch p.Type {
		case sdk.PartSource:
			r.emit(Chunk{Type: ChunkSourceURL, SourceID: r.nextID("source"), URL: p.URL, Title: p.Title})
		case sdk.PartFile:
			if p.URL != "" {
				r.emit(Chunk{Type: ChunkFile, URL: p.URL, MediaType: p.MediaType})
			}
		case sdk.PartToolResult:
			if p.ProviderExecuted && r.calls[p.ToolCallID] {
				r.output(p)
			}
		}
	}
	r.stepCommitted = true
}

// continues reports whether the stored parts continue the live preview:
// each streamed part a prefix of the stored one at its place.
func (r *renderer) continues(main []sdk.ChatMessagePart) bool {
	if len(r.preview) > len(main) {
		return false
	}
	for i, b := range r.preview {
		p := main[i]
		switch {
		case p.Type != b.kind:
			return false
		case b.kind == sdk.PartToolCall:
			if p.ToolCallID != b.call {
				return false
			}
		case !strings.HasPrefix(p.Text, b.text):
			return false
		case b.ended && len(p.Text) > len(b.text):
			return false
		}
	}
	return true
}

// toolResults renders a tool message's results inside their step, which
// they end.
func (r *renderer) toolResults(parts []sdk.ChatMessagePart) {
	for _, p := range parts {
		if p.Type == sdk.PartToolResult && r.calls[p.ToolCallID] {
			r.output(p)
		}
	}
	r.closeStep()
}

func (r *renderer) output(p sdk.ChatMessagePart) {
	result := p.Result
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	if !p.IsError {
		r.emit(Chunk{Type: ChunkToolOutputAvailable, ToolCallID: p.ToolCallID, Output: result, ProviderExecuted: p.ProviderExecuted,
			Dynamic: !r.clientTools[p.ToolName]})
		return
	}
	text := errorText(result)
	if (r.approvalSent[p.ToolCallID] || r.target.Approved[p.ToolCallID]) && strings.HasPrefix(text, "denied") {
		r.emit(Chunk{Type: ChunkToolOutputDenied, ToolCallID: p.ToolCallID})
		return
	}
	r.emit(Chunk{Type: ChunkToolOutputError, ToolCallID: p.ToolCallID, ErrorText: text, ProviderExecuted: p.ProviderExecuted,
		Dynamic: !r.clientTools[p.ToolName]})
}

// errorText is the text of an error result: its "error" field, else the
// result's JSON.
func errorText(result json.RawMessage) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(result, &e) == nil && e.Error != "" {
		return e.Error
	}
	var s string
	if json.Unmarshal(result, &s) == nil && s != "" {
		return s
	}
	if t := strings.TrimSpace(string(result)); t != "" && t != "null" {
		return t
	}
	return "the tool call failed"
}
