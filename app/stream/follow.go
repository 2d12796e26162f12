package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// Follow runs a viewer's stream of chatID without a WebSocket: the same
// loop, sources, relay and ordering as ServeWith, with every batch of
// events handed to fn instead of written as a frame. Protocol surfaces
// (app/openaiapi) translate these events into their own streams. It
// returns when ctx ends, fn fails, or the chat is deleted
// (store.ErrNotFound).
func (s *Server) Follow(ctx context.Context, chatID uuid.UUID, fn func([]sdk.ChatStreamEvent) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !s.track(&cancel) {
		return fmt.Errorf("stream: %s", RestartReason)
	}
	defer s.untrack(&cancel)
	box := newMailbox()
	unsubscribe, err := s.pubsub.Subscribe(ctx, pubsub.ChannelUpdate(chatID.String()), func(payload []byte) {
		var p chatstate.UpdatePayload
		if json.Unmarshal(payload, &p) == nil {
			box.put(HintsFromPayload(p))
		}
	})
	if err != nil {
		s.log.Warn("stream: subscribe failed; the poller still syncs", "chat_id", chatID, "err", err)
		unsubscribe = func() {}
	}
	defer unsubscribe()
	defer s.poller.Register(chatID, box.put)()
	rel := newRelay(ctx, chatID, s.buffer, s.locator, s.clock, s.log)
	rel.conns = s.gauges.relayOut
	rel.ka = s.ka
	defer rel.stop()
	loop := NewLoop(chatID, rel.configure)
	src := StoreSource{Store: s.store}
	syncOnce := func(h Hints) error {
		var err error
		for attempt := 1; attempt <= syncRetries; attempt++ {
			var events []sdk.ChatStreamEvent
			if events, err = loop.Sync(ctx, src, h); err == nil {
				if len(events) == 0 {
					return nil
				}
				return fn(events)
			}
			if errors.Is(err, store.ErrNotFound) || ctx.Err() != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-s.clock.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		return err
	}
	parts := func(ps []relayPart) error {
		var events []sdk.ChatStreamEvent
		for _, p := range ps {
			var part sdk.ChatMessagePart
			if len(p.Part) > 0 {
				if err := json.Unmarshal(p.Part, &part); err != nil {
					return fmt.Errorf("decode part: %w", err)
				}
			}
			e, err := loop.Part(p.HistoryVersion, p.GenerationAttempt, p.Seq, part)
			if err != nil {
				return err
			}
			if e != nil {
				events = append(events, *e)
			}
		}
		if len(events) == 0 {
			return nil
		}
		return fn(events)
	}
	if err := syncOnce(Hints{}); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-box.wake:
			if h := box.take(); h != nil {
				if err := syncOnce(*h); err != nil {
					return err
				}
			}
		case <-rel.localWake():
			if err := parts(rel.takeLocal()); err != nil {
				return err
			}
		case p := <-rel.out:
			batch := []relayPart{p}
			for more := true; more && len(batch) < MaxEventsPerFrame; {
				select {
				case p = <-rel.out:
					batch = append(batch, p)
				default:
					more = false
				}
			}
			if err := parts(batch); err != nil {
				return err
			}
		}
	}
}
