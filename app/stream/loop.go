// Package stream serves GET /chats/{chat}/stream (spec: "Stream loop"):
// committed state from the database and live parts relayed from whichever
// replica runs the chat, as one ordered, gap-free event stream per viewer.
// The Loop itself is a pure state machine over database snapshots and
// parts, so it can be tested with synthetic inputs.
package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/wire"
	"github.com/chatd/chatd/store"
)

// Hints are a Sync's optional inputs (from pubsub or the poller). They only
// decide whether to read the database; only the database decides what to
// emit. WorkerID is tri-state: nil = absent.
type Hints struct {
	SnapshotVersion   *int64
	HistoryVersion    *int64
	QueueVersion      *int64
	RetryStateVersion *int64
	Status            *store.ChatStatus
	WorkerID          *uuid.NullUUID
	GenerationAttempt *int64
	// Gone: the poller did not find the chat (deleted); fetch to confirm.
	Gone bool
}

// HintsFromChat makes full hints from a chat row (the sync poller).
func HintsFromChat(c store.Chat) Hints {
	return Hints{
		SnapshotVersion: &c.SnapshotVersion, HistoryVersion: &c.HistoryVersion, QueueVersion: &c.QueueVersion,
		RetryStateVersion: &c.RetryStateVersion, Status: &c.Status, WorkerID: &c.WorkerID,
		GenerationAttempt: &c.GenerationAttempt,
	}
}

// HintsFromPayload makes hints from a chat:update notification.
func HintsFromPayload(p chatstate.UpdatePayload) Hints {
	w := uuid.NullUUID{}
	if p.WorkerID != nil {
		w = uuid.NullUUID{UUID: *p.WorkerID, Valid: true}
	}
	return Hints{
		SnapshotVersion: &p.SnapshotVersion, HistoryVersion: &p.HistoryVersion, QueueVersion: &p.QueueVersion,
		RetryStateVersion: &p.RetryStateVersion, Status: &p.Status, WorkerID: &w,
		GenerationAttempt: &p.GenerationAttempt,
	}
}

// Cursors are the local versions a fetch needs to know what changed.
type Cursors struct {
	HistoryVersion int64
	QueueVersion   int64
	// Bootstrap: the first fetch, against the null state.
	Bootstrap bool
}

// Snapshot is one Sync's database read, all from one read transaction.
type Snapshot struct {
	Chat store.Chat
	// Changed holds rows with revision > the local history version
	// (deleted ones included), when history moved.
	Changed []store.Message
	// All is the whole active history, when a full refresh is needed
	// (bootstrap, or a soft-deleted row among Changed).
	All  []store.Message
	Full bool
	// Floor is the oldest message id of a bounded All (0 when All is the
	// whole history): changes to older rows are not sent.
	Floor int64
	Queue []store.QueuedMessage
	// Pending are the dynamic tool calls waiting for results.
	Pending []chatstate.ToolCall
}

// Source reads snapshots.
type Source interface {
	Fetch(ctx context.Context, chatID uuid.UUID, c Cursors) (Snapshot, error)
}

// Target is what the relay forwarder should forward.
type Target struct {
	WorkerID          uuid.NullUUID
	HistoryVersion    int64
	GenerationAttempt int64
}

// Loop is the per-viewer stream state (spec: "Local stream state").
type Loop struct {
	chatID uuid.UUID
	relay  func(Target)

	snapshot, history, queue, retry int64
	known                           map[int64]int64 // message id -> revision sent
	status                          store.ChatStatus
	statusSet                       bool
	errorHistory                    int64
	actionHistory                   int64
	// approvals is the last approval_required sent: the history version
	// and the calls it listed, so each change of the pending set is sent
	// once.
	approvals string
	// questions is the last elicitation_update sent: the pending
	// questions' ids (elicitations.go).
	questions string
	worker    uuid.NullUUID
	attempt   int64
	lastSeq   int64
	retired   bool
	booted    bool
	// floor: messages older than this id are outside a bounded history.
	floor int64
}

// NewLoop returns a loop in the null state. relay is called whenever the
// forwarder's target changes.
func NewLoop(chatID uuid.UUID, relay func(Target)) *Loop {
	return &Loop{chatID: chatID, relay: relay, known: map[int64]int64{}}
}

// stale reports whether the hints say local state may be out of date.
func (l *Loop) stale(h Hints) bool {
	if h.Gone {
		return true
	}
	if h.SnapshotVersion != nil && *h.SnapshotVersion <= l.snapshot {
		return false
	}
	return h.HistoryVersion != nil && *h.HistoryVersion > l.history ||
		h.QueueVersion != nil && *h.QueueVersion > l.queue ||
		h.RetryStateVersion != nil && *h.RetryStateVersion > l.retry ||
		h.Status != nil && (!l.statusSet || *h.Status != l.status) ||
		h.WorkerID != nil && *h.WorkerID != l.worker ||
		h.GenerationAttempt != nil && *h.GenerationAttempt != l.attempt ||
		// A partial approval answer moves nothing but snapshot_version.
		h.Status != nil && *h.Status == store.ChatStatusRequiresAction
}

// Sync maybe fetches and applies the database state (spec: "Sync
// operation"). The first Sync is the bootstrap: it fetches unconditionally.
func (l *Loop) Sync(ctx context.Context, src Source, h Hints) ([]sdk.ChatStreamEvent, error) {
	bootstrap := !l.booted
	if !bootstrap && !l.stale(h) {
		return nil, nil
	}
	snap, err := src.Fetch(ctx, l.chatID, Cursors{HistoryVersion: l.history, QueueVersion: l.queue, Bootstrap: bootstrap})
	if err != nil {
		return nil, err
	}
	if !bootstrap && snap.Chat.SnapshotVersion <= l.snapshot {
		return nil, nil
	}
	l.booted = true
	return l.apply(snap, bootstrap)
}

func (l *Loop) event(typ string) sdk.ChatStreamEvent {
	return sdk.ChatStreamEvent{Type: typ, ChatID: l.chatID}
}

// visible: people see this row.
func visible(m store.Message) bool { return !m.Deleted && m.Visibility != store.VisibilityModel }

// apply emits events in the spec's deterministic order and saves cursors.
func (l *Loop) apply(s Snapshot, bootstrap bool) ([]sdk.ChatStreamEvent, error) {
	db := s.Chat
	var out []sdk.ChatStreamEvent
	// 1. Messages.
	if db.HistoryVersion > l.history {
		if s.Full {
			if !bootstrap {
				out = append(out, l.event(sdk.StreamHistoryReset))
			}
			l.known = map[int64]int64{}
			l.floor = s.Floor
			for _, m := range s.All {
				if visible(m) {
					msg := wire.ToMessageRaw(m)
					e := l.event(sdk.StreamMessage)
					e.Message = &msg
					out = append(out, e)
					l.known[m.ID] = m.Revision
				}
			}
		} else {
			for _, m := range s.Changed {
				if !visible(m) || m.Revision <= l.known[m.ID] || m.ID < l.floor {
					continue
				}
				msg := wire.ToMessageRaw(m)
				e := l.event(sdk.StreamMessage)
				e.Message = &msg
				out = append(out, e)
				l.known[m.ID] = m.Revision
			}
		}
	}
	// 2. Queue (always at bootstrap: the first frames carry the full state).
	if db.QueueVersion > l.queue || bootstrap {
		e := l.event(sdk.StreamQueueUpdate)
		e.QueuedMessages = wire.ToQueue(s.Queue)
		out = append(out, e)
	}
	// 3. Status.
	if !l.statusSet || db.Status != l.status {
		e := l.event(sdk.StreamStatus)
		e.Status = &sdk.ChatStreamStatus{Status: sdk.ChatStatus(db.Status)}
		out = append(out, e)
	}
	// 4. Error.
	if db.Status == store.ChatStatusError && db.HistoryVersion > l.errorHistory {
		var ce sdk.ChatError
		if len(db.LastError) > 0 {
			if err := json.Unmarshal(db.LastError, &ce); err != nil {
				return nil, fmt.Errorf("decode last_error: %w", err)
			}
		}
		e := l.event(sdk.StreamError)
		e.Error = &ce
		out = append(out, e)
		l.errorHistory = db.HistoryVersion
	}
	// 5. Action required: the calls awaiting a person's approval
	// (approval_required, again whenever that set shrinks), else the
	// dynamic calls awaiting a client (action_required). Approval-pending
	// calls are never listed in action_required: Coder's clients execute
	// whatever it lists.
	var approvals []sdk.ToolApproval
	if db.Status == store.ChatStatusRequiresAction {
		var err error
		if approvals, err = chatstate.PendingApprovals(db); err != nil {
			return nil, err
		}
	}
	if len(approvals) > 0 {
		key := fmt.Sprint(db.HistoryVersion)
		for _, a := range approvals {
			key += " " + a.ToolCallID
		}
		if key != l.approvals {
			e := l.event(sdk.StreamApprovalRequired)
			e.ApprovalRequired = &sdk.ChatStreamApprovalRequired{ToolCalls: approvals}
			out = append(out, e)
			l.approvals = key
		}
	} else if db.Status == store.ChatStatusRequiresAction && db.HistoryVersion > l.actionHistory {
		ar := &sdk.ChatStreamActionRequired{ToolCalls: []sdk.ChatStreamToolCall{}}
		for _, c := range s.Pending {
			args := string(c.Args)
			if args == "" {
				args = "{}"
			}
			ar.ToolCalls = append(ar.ToolCalls, sdk.ChatStreamToolCall{ToolCallID: c.ID, ToolName: c.Name, Args: args})
		}
		e := l.event(sdk.StreamActionRequired)
		e.ActionRequired = ar
		out = append(out, e)
		l.actionHistory = db.HistoryVersion
	}
	// 6. Retry.
	retryMoved := db.RetryStateVersion > l.retry
	if retryMoved && db.RetryState != nil && db.Status == store.ChatStatusRunning {
		var r sdk.ChatRetry
		if err := json.Unmarshal(db.RetryState, &r); err != nil {
			return nil, fmt.Errorf("decode retry_state: %w", err)
		}
		e := l.event(sdk.StreamRetry)
		e.Retry = &r
		out = append(out, e)
	}
	// 7. attempt_retired.
	sameEpisode := db.HistoryVersion == l.history && db.GenerationAttempt == l.attempt
	if !sameEpisode {
		l.retired = false
	}
	if db.RetryState != nil || db.Status == store.ChatStatusError || retryMoved && sameEpisode {
		l.retired = true
	}
	// 8. preview_reset.
	if db.HistoryVersion != l.history || db.GenerationAttempt != l.attempt && db.GenerationAttempt != 0 {
		l.lastSeq = 0
		out = append(out, l.event(sdk.StreamPreviewReset))
	}
	// 9. Relay.
	if !db.WorkerID.Valid {
		l.relay(Target{})
	} else if db.GenerationAttempt > 0 {
		l.relay(Target{WorkerID: db.WorkerID, HistoryVersion: db.HistoryVersion, GenerationAttempt: db.GenerationAttempt})
	}
	// 10. Save.
	l.snapshot, l.history, l.queue, l.retry = db.SnapshotVersion, db.HistoryVersion, db.QueueVersion, db.RetryStateVersion
	l.status, l.statusSet, l.worker, l.attempt = db.Status, true, db.WorkerID, db.GenerationAttempt
	return out, nil
}

// ErrSeqGap is the invariant violation of a part that skips a seq.
var ErrSeqGap = fmt.Errorf("stream: part sequence gap")

// Part emits one live part if it belongs to the current, unretired
// episode and is the next in sequence (spec: "Part operation"). A part of
// another episode or a retired attempt is dropped (nil, nil); a gap within
// the current episode is an invariant violation.
func (l *Loop) Part(historyVersion, attempt, seq int64, part sdk.ChatMessagePart) (*sdk.ChatStreamEvent, error) {
	if ok, err := l.accept(historyVersion, attempt, seq); !ok {
		return nil, err
	}
	e := l.event(sdk.StreamMessagePart)
	e.MessagePart = &sdk.ChatStreamMessagePart{
		Role: store.RoleAssistant, Part: part, HistoryVersion: historyVersion, GenerationAttempt: attempt, Seq: seq,
	}
	return &e, nil
}

// accept is Part's rule: whether the part is emitted, or the gap error.
// The endpoint applies it to parts it encodes itself (appendPartEvent).
func (l *Loop) accept(historyVersion, attempt, seq int64) (bool, error) {
	if historyVersion != l.history || attempt != l.attempt || l.retired {
		return false, nil
	}
	if seq <= l.lastSeq {
		return false, nil // a duplicate (e.g. after a relay reconnect)
	}
	if seq != l.lastSeq+1 {
		return false, fmt.Errorf("%w: got seq %d after %d in episode (%d, %d)", ErrSeqGap, seq, l.lastSeq, historyVersion, attempt)
	}
	l.lastSeq = seq
	return true, nil
}

// emptyPart is the JSON of a zero sdk.ChatMessagePart, for a relayed
// frame without a part.
const emptyPart = `{"type":""}`

// partEventPrefix is what every message_part event of the chat starts
// with, up to its part.
func partEventPrefix(chatID uuid.UUID) []byte {
	return []byte(`{"type":"` + sdk.StreamMessagePart + `","chat_id":"` + chatID.String() +
		`","message_part":{"role":"` + store.RoleAssistant + `","part":`)
}

// appendPartEvent appends the message_part event of p (prefix from
// partEventPrefix), byte for byte what json.Marshal makes of the
// sdk.ChatStreamEvent Part returns, with the part's JSON as encoded once
// by the part buffer: no viewer encodes a part.
func appendPartEvent(b, prefix []byte, p relayPart) []byte {
	b = append(b, prefix...)
	if len(p.Part) == 0 {
		b = append(b, emptyPart...)
	} else {
		b = append(b, p.Part...)
	}
	return appendPartTail(b, p)
}

// appendPartTail appends what follows the part in p's message_part event:
// its place in the episode.
func appendPartTail(b []byte, p relayPart) []byte {
	b = append(b, `,"history_version":`...)
	b = strconv.AppendInt(b, p.HistoryVersion, 10)
	b = append(b, `,"generation_attempt":`...)
	b = strconv.AppendInt(b, p.GenerationAttempt, 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, p.Seq, 10)
	return append(b, "}}"...)
}
