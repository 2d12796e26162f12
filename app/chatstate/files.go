package chatstate

import (
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// fileIDs lists the distinct files a user turn's content references, in
// order of first use.
func fileIDs(content []sdk.ChatMessagePart) []uuid.UUID {
	var ids []uuid.UUID
	seen := map[uuid.UUID]bool{}
	for _, p := range content {
		if p.Type != sdk.PartFile || p.FileID == nil || seen[*p.FileID] {
			continue
		}
		seen[*p.FileID] = true
		ids = append(ids, *p.FileID)
	}
	return ids
}

// linkFiles records the file links of a user turn in the transition's
// transaction (spec: file links). A file belongs to at most one chat: one
// that another chat holds, another user's, or one that is gone is refused
// alike. When the turn's files would push the chat over in.FileCap, the
// chat's earliest-uploaded files (never the turn's own) are deleted to
// make room; a turn with more files than the cap is refused, and a cap
// below 1 fails the write (the caller passes the deployment's cap).
func (t *Tx) linkFiles(chatID uuid.UUID, in UserInput) error {
	ids := fileIDs(in.Content)
	if len(ids) == 0 {
		return nil
	}
	if in.FileCap < 1 {
		return fmt.Errorf("link files to chat %s: attachment cap %d is below 1", chatID, in.FileCap)
	}
	if len(ids) > in.FileCap {
		return invalid("content", "the message has %d attachments; a chat holds at most %d", len(ids), in.FileCap)
	}
	chat, err := t.tx.ChatGet(t.ctx, chatID)
	if err != nil {
		return fmt.Errorf("link files: %w", err)
	}
	mine := map[uuid.UUID]bool{}
	fresh := 0
	for _, id := range ids {
		mine[id] = true
		f, err := t.tx.FileGet(t.ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return invalid("content", "file %s does not exist or is not available to this chat", id)
		case err != nil:
			return fmt.Errorf("link files: %w", err)
		case f.OwnerID != chat.OwnerID, f.ChatID.Valid && f.ChatID.UUID != chatID:
			return invalid("content", "file %s does not exist or is not available to this chat", id)
		case !f.ChatID.Valid:
			fresh++
		}
	}
	held, err := t.tx.FileListByChat(t.ctx, chatID)
	if err != nil {
		return fmt.Errorf("link files: %w", err)
	}
	// Evict the earliest-uploaded files that this turn does not use.
	over := len(held) + fresh - in.FileCap
	for _, f := range held {
		if over <= 0 {
			break
		}
		if mine[f.ID] {
			continue
		}
		if _, err := t.tx.FileDelete(t.ctx, f.ID); err != nil {
			return fmt.Errorf("evict file %s: %w", f.ID, err)
		}
		over--
	}
	for _, id := range ids {
		if err := t.tx.FileLink(t.ctx, id, chatID, t.now); err != nil {
			return fmt.Errorf("link files: %w", err)
		}
	}
	return nil
}
