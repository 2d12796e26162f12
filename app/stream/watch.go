package stream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/wire"
	"github.com/chatd/chatd/store"
)

// WatchCoalesce bounds the chats a watch remembers as changed but not yet
// sent; beyond it the oldest hints are dropped (hints: the client's
// periodic list refresh converges anyway).
const WatchCoalesce = 4096

// HandleWatch is GET /chats/watch after authentication: one WebSocket per
// user, one JSON object per message (sdk.ChatWatchEvent) for every change
// of the user's chats' title, status or archived flag, their creation and
// deletion. It is driven by the owner's chat:watch channel: each hint is
// re-read from the store and compared with what this watch last sent for
// the chat, so repeated or reordered hints send nothing twice.
func (s *Server) HandleWatch(w http.ResponseWriter, r *http.Request, userID uuid.UUID) {
	// Subscribe before the upgrade: once the client's handshake is done,
	// nothing that happens to its chats can be missed.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	box := newWatchBox()
	unsubscribe, err := s.pubsub.Subscribe(ctx, pubsub.ChannelWatch(userID.String()), box.hint)
	if err != nil {
		s.log.Warn("watch: subscribe failed", "user_id", userID, "err", err)
		http.Error(w, `{"message":"The chat-list watch is unavailable.","code":"UNAVAILABLE"}`, http.StatusServiceUnavailable)
		return
	}
	defer unsubscribe()
	opened := s.clock.Now()
	rw := &refusal{ResponseWriter: w}
	conn, err := websocket.Accept(rw, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		rw.answer()
		return
	}
	defer conn.CloseNow()
	s.serveTracked(ctx, conn, func(ctx context.Context) {
		ctx, stop := peerContext(ctx, conn)
		defer stop()
		err := s.watch(ctx, conn, userID, box, opened)
		if err == nil || errClosed(err) || ctx.Err() != nil {
			s.closeEnded(ctx, conn)
			return
		}
		s.log.Info("watch ended", "user_id", userID, "err", err)
		conn.Close(websocket.StatusInternalError, "watch error")
	})
}

// watched is what a watch last sent about one chat.
type watched struct {
	chat sdk.Chat
}

// watchBox collects the ids of changed chats until the loop takes them.
type watchBox struct {
	mu      sync.Mutex
	order   []uuid.UUID
	pending map[uuid.UUID]chatstate.UpdatePayload
	wake    chan struct{}
}

func newWatchBox() *watchBox {
	return &watchBox{pending: map[uuid.UUID]chatstate.UpdatePayload{}, wake: make(chan struct{}, 1)}
}

// hint is the pubsub callback: a chat:watch payload.
func (b *watchBox) hint(payload []byte) {
	var p chatstate.UpdatePayload
	if json.Unmarshal(payload, &p) == nil && p.ChatID != uuid.Nil {
		b.put(p)
	}
}

func (b *watchBox) put(p chatstate.UpdatePayload) {
	b.mu.Lock()
	if _, ok := b.pending[p.ChatID]; !ok {
		if len(b.order) >= WatchCoalesce {
			delete(b.pending, b.order[0])
			b.order = b.order[1:]
		}
		b.order = append(b.order, p.ChatID)
	}
	if old, ok := b.pending[p.ChatID]; !ok || !old.Deleted {
		b.pending[p.ChatID] = p
	}
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *watchBox) take() []chatstate.UpdatePayload {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]chatstate.UpdatePayload, 0, len(b.order))
	for _, id := range b.order {
		out = append(out, b.pending[id])
	}
	b.order, b.pending = b.order[:0], map[uuid.UUID]chatstate.UpdatePayload{}
	return out
}

// watch runs one user's chat watch on an accepted WebSocket, fed by box
// (subscribed before the upgrade), until the client leaves or a write
// fails.
func (s *Server) watch(ctx context.Context, conn *websocket.Conn, userID uuid.UUID, box *watchBox, opened time.Time) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		if s.ka.run(ctx, conn) != nil {
			cancel()
		}
	})
	seen := map[uuid.UUID]watched{}
	deadline := newWriteDeadline(ctx, conn, WriteTimeout)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-box.wake:
		}
		for _, p := range box.take() {
			events, err := s.watchEvents(ctx, userID, p, seen, opened)
			if err != nil {
				return err
			}
			for _, e := range events {
				frame, err := json.Marshal(e)
				if err != nil {
					return err
				}
				if err := deadline.write(frame); err != nil {
					return err
				}
			}
		}
	}
}

// watchEvents turns one hint into the events it means for this watch.
func (s *Server) watchEvents(ctx context.Context, userID uuid.UUID, p chatstate.UpdatePayload, seen map[uuid.UUID]watched, opened time.Time) ([]sdk.ChatWatchEvent, error) {
	last, known := seen[p.ChatID]
	if p.Deleted {
		delete(seen, p.ChatID)
		chat := last.chat
		if !known {
			chat = sdk.Chat{ID: p.ChatID, OwnerID: userID, Status: sdk.ChatStatus(p.Status), Archived: p.Archived}
		}
		return []sdk.ChatWatchEvent{{Kind: sdk.ChatWatchEventKindDeleted, Chat: chat}}, nil
	}
	var row store.Chat
	err := s.store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		row, err = tx.ChatGet(ctx, p.ChatID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil // deleted since: its own hint says so
	}
	if err != nil {
		return nil, err
	}
	if row.OwnerID != userID {
		return nil, nil
	}
	chat := wire.ToChat(row)
	seen[p.ChatID] = watched{chat: chat}
	var events []sdk.ChatWatchEvent
	add := func(k sdk.ChatWatchEventKind) { events = append(events, sdk.ChatWatchEvent{Kind: k, Chat: chat}) }
	if !known {
		// A chat this watch has not seen: created since the watch opened,
		// or an older one whose previous state is unknown here.
		// Hints coalesce, so a new chat may already wait for an action.
		created := !row.CreatedAt.Before(opened.Add(-time.Second))
		if created {
			add(sdk.ChatWatchEventKindCreated)
		}
		switch {
		case chat.Status == sdk.ChatStatusRequiresAction:
			add(sdk.ChatWatchEventKindActionRequired)
		case !created:
			add(sdk.ChatWatchEventKindStatusChange)
		}
		return events, nil
	}
	if chat.Title != last.chat.Title {
		add(sdk.ChatWatchEventKindTitleChange)
	}
	if chat.Status != last.chat.Status || chat.Archived != last.chat.Archived || chat.PinOrder != last.chat.PinOrder {
		if chat.Status == sdk.ChatStatusRequiresAction && last.chat.Status != sdk.ChatStatusRequiresAction {
			add(sdk.ChatWatchEventKindActionRequired)
		} else {
			add(sdk.ChatWatchEventKindStatusChange)
		}
	}
	return events, nil
}
