package worker

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/store"
)

// ResumeSlot takes a slot of the concurrent agent limit back for a chat
// whose running tool call waited, without one, on a person's answer to an
// MCP server's question (chatstate.AskElicitation), and reports whether it
// did. The tool call's goroutine holds the server's request, so the chat
// cannot wait unowned for a slot like a resumed requires_action chat
// (runner.resume): the caller waits and asks again when a slot frees
// (chat:ownership) instead. A question that no longer releases the chat's
// slot (it was taken over since, or the release already ended) is resumed
// without a check: the chat counts already.
func (w *Worker) ResumeSlot(ctx context.Context, chatID, elicitationID uuid.UUID) (bool, error) {
	resumed := false
	err := w.deps.Machine.Do(ctx, func(t *chatstate.Tx) error {
		// The admission lock first, then the reads, as tryAcquire takes them.
		if err := t.LockAdmission(); err != nil {
			return err
		}
		tx := t.Reader()
		e, err := tx.ElicitationGet(ctx, elicitationID)
		if errors.Is(err, store.ErrNotFound) {
			resumed = true // the chat is gone
			return nil
		}
		if err != nil {
			return err
		}
		c, err := tx.ChatGet(ctx, chatID)
		if errors.Is(err, store.ErrNotFound) {
			resumed = true
			return nil
		}
		if err != nil {
			return err
		}
		if e.SlotRunnerID.Valid && e.SlotRunnerID == c.RunnerID && c.WorkerID.Valid {
			roots, subagents, err := tx.ChatCountOwned(ctx, w.acquireParams())
			if err != nil {
				return err
			}
			if !w.hasRoom(c, roots, subagents) {
				return nil
			}
		}
		resumed = true
		return t.ResumeElicitation(elicitationID)
	})
	return resumed, err
}
