package stream

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/store"
)

// StoreSource reads snapshots from the database, all reads of one Sync in
// one read transaction.
type StoreSource struct {
	Store store.ReadStore
}

// Fetch implements Source.
func (s StoreSource) Fetch(ctx context.Context, chatID uuid.UUID, c Cursors) (Snapshot, error) {
	var snap Snapshot
	err := s.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		if snap.Chat, err = tx.ChatGet(ctx, chatID); err != nil {
			return err
		}
		if snap.Chat.HistoryVersion > c.HistoryVersion {
			if c.HistoryVersion > 0 {
				snap.Changed, err = tx.MessageList(ctx, chatID, store.MessageListParams{
					RevisionAfter: c.HistoryVersion, IncludeDeleted: true,
				})
				if err != nil {
					return err
				}
			}
			// Nothing known yet, or a row was soft-deleted: send it all.
			if c.HistoryVersion == 0 || slices.ContainsFunc(snap.Changed, func(m store.Message) bool { return m.Deleted }) {
				snap.Full = true
				if snap.All, err = tx.MessageList(ctx, chatID, store.MessageListParams{PeopleOnly: true}); err != nil {
					return err
				}
			}
		}
		if snap.Chat.QueueVersion > c.QueueVersion || c.Bootstrap {
			if snap.Queue, err = tx.QueueList(ctx, chatID); err != nil {
				return err
			}
		}
		if snap.Chat.Status == store.ChatStatusRequiresAction {
			if snap.Pending, err = chatstate.OutstandingToolCalls(ctx, tx, chatID); err != nil {
				return err
			}
		}
		return nil
	})
	return snap, err
}
