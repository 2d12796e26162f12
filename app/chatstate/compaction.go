package chatstate

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// RequestCompaction records a manual compaction request and lands in
// running without inserting history; it still moves history_version so the
// compaction turn gets a fresh retry budget and episode keys.
func (t *Tx) RequestCompaction(chatID uuid.UUID) (Result, error) {
	s, err := t.begin(chatID, RequestCompaction)
	if err != nil {
		return Result{}, err
	}
	ok, err := t.HasSomethingToCompact(chatID)
	if err != nil {
		return Result{}, err
	}
	if !ok {
		return Result{}, ErrNothingToCompact
	}
	p := running()
	now := t.now
	p.CompactionRequestedAt = store.Some(&now)
	if err := t.update(chatID, p); err != nil {
		return Result{}, err
	}
	if _, err := t.tx.ChatTouchHistory(t.ctx, chatID); err != nil {
		return Result{}, err
	}
	return s.end()
}

// ClearContext commits a clear boundary triplet synchronously and lands in
// waiting; the transcript stays, future prompts start after the boundary.
func (t *Tx) ClearContext(chatID uuid.UUID, createdBy uuid.NullUUID) (Result, error) {
	s, err := t.begin(chatID, ClearContext)
	if err != nil {
		return Result{}, err
	}
	ok, err := t.hasSomethingToClear(chatID)
	if err != nil {
		return Result{}, err
	}
	if !ok {
		return Result{}, ErrNothingToClear
	}
	// The anchor is a user row: answer outstanding calls first.
	if err := t.answerOutstanding(chatID, reasonNewMessage); err != nil {
		return Result{}, err
	}
	triplet, err := BoundaryTriplet(chatID,
		"The user cleared the conversation context. Earlier messages are not available; continue from here.",
		ToolChatCleared, json.RawMessage(`{}`), json.RawMessage(`{"cleared":true}`))
	if err != nil {
		return Result{}, err
	}
	for _, m := range triplet {
		m.Now, m.CreatedBy = t.now, createdBy
		if _, err := t.insertMessage(m); err != nil {
			return Result{}, fmt.Errorf("insert clear boundary: %w", err)
		}
	}
	if err := t.update(chatID, store.ChatPatch{
		Status:                store.Some(store.ChatStatusWaiting),
		LastError:             store.Some[json.RawMessage](nil),
		CompactionRequestedAt: store.Some[*time.Time](nil),
	}); err != nil {
		return Result{}, err
	}
	return s.end()
}

// SomethingToCompact is the rule both manual and automatic compaction go
// by: among the active messages from the latest boundary on (as
// FromBoundary returns them), an uncompressed assistant message is what a
// compaction would summarise. Without one there is nothing to compact.
func SomethingToCompact(fromBoundary []store.Message) bool {
	return slices.ContainsFunc(fromBoundary, func(m store.Message) bool {
		return m.Role == store.RoleAssistant && !m.Compressed && !m.Deleted
	})
}
