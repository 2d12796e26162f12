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
	// HistoryLimit, when positive, bounds a full history read (bootstrap,
	// history reset) to the last HistoryLimit messages people see, plus
	// the assistant message whose tool calls the oldest of them answer
	// (historyWindow). Older pages come from GET /messages.
	HistoryLimit int
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
				if snap.All, err = s.history(ctx, tx, chatID); err != nil {
					return err
				}
				if s.HistoryLimit > 0 && len(snap.All) > 0 {
					snap.Floor = snap.All[0].ID
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

// history reads the messages a full refresh sends: all of them, or the
// bounded window.
func (s StoreSource) history(ctx context.Context, tx store.Reader, chatID uuid.UUID) ([]store.Message, error) {
	if s.HistoryLimit <= 0 {
		return tx.MessageList(ctx, chatID, store.MessageListParams{PeopleOnly: true})
	}
	newest, err := tx.MessageList(ctx, chatID, store.MessageListParams{PeopleOnly: true, Descending: true, Limit: s.HistoryLimit})
	if err != nil {
		return nil, err
	}
	slices.Reverse(newest)
	return historyWindow(ctx, tx, chatID, newest)
}

// maxBoundaryExtension bounds how far historyWindow looks back for the
// start of a tool round.
const maxBoundaryExtension = 256

// historyWindow is the boundary rule of a bounded history: a window must
// not open on tool results whose calls it leaves out, so while its oldest
// message is a tool message, the window reaches back one page at a time
// to the message before it (the assistant message that made the calls).
func historyWindow(ctx context.Context, tx store.Reader, chatID uuid.UUID, window []store.Message) ([]store.Message, error) {
	for len(window) > 0 && window[0].Role == store.RoleTool {
		older, err := tx.MessageList(ctx, chatID, store.MessageListParams{
			PeopleOnly: true, Descending: true, BeforeID: window[0].ID, Limit: maxBoundaryExtension,
		})
		if err != nil {
			return nil, err
		}
		if len(older) == 0 {
			break
		}
		n := slices.IndexFunc(older, func(m store.Message) bool { return m.Role != store.RoleTool })
		if n < 0 {
			n = len(older) - 1
		}
		ext := slices.Clone(older[:n+1])
		slices.Reverse(ext)
		window = append(ext, window...)
	}
	return window, nil
}
