// Package pubsub carries chatd's notifications: chat:ownership for workers and
// chat:update:{chat_id} for runners and stream loops. Notifications are hints:
// receivers tolerate drops, duplicates and reordering, and converge through
// versions and periodic syncs.
//
// The interface uses only standard types so that store/postgres can provide
// the LISTEN/NOTIFY implementation without importing this package.
package pubsub

import (
	"context"
	"sync"
)

// Pubsub publishes and delivers notifications by channel name.
type Pubsub interface {
	// Publish sends payload to every subscriber of channel. It is called only
	// after the transaction that produced the notification has committed.
	Publish(ctx context.Context, channel string, payload []byte) error
	// Subscribe calls fn for each payload published on channel until cancel
	// is called. fn runs on a delivery goroutine and must not block for long.
	Subscribe(ctx context.Context, channel string, fn func(payload []byte)) (cancel func(), err error)
}

// Channel names of the spec.
const ChannelOwnership = "chat:ownership"

// ChannelUpdate is the per-chat channel "chat:update:{chat_id}".
func ChannelUpdate(chatID string) string { return "chat:update:" + chatID }

// ChannelWatch is the per-owner channel "chat:watch:{owner_id}": the same
// payload as chat:update for every chat of that owner a transaction
// touched, for the owner's chat-list watch (GET /chats/watch).
func ChannelWatch(ownerID string) string { return "chat:watch:" + ownerID }

// ChannelElicitations is the per-chat channel "mcp:elicitations:{chat_id}":
// a hint that the chat's MCP questions changed (one was asked, answered,
// cancelled or timed out); its payload is the question's id. The chat's
// streams read the pending questions again on it.
func ChannelElicitations(chatID string) string { return "mcp:elicitations:" + chatID }

// Memory is the single-node implementation: in-process fan-out.
type Memory struct {
	mu   sync.RWMutex
	next int
	subs map[string]map[int]func([]byte)
}

var _ Pubsub = (*Memory)(nil)

// NewMemory returns an empty in-process pubsub.
func NewMemory() *Memory {
	return &Memory{subs: make(map[string]map[int]func([]byte))}
}

// Publish delivers payload synchronously to the channel's current subscribers.
func (m *Memory) Publish(_ context.Context, channel string, payload []byte) error {
	m.mu.RLock()
	fns := make([]func([]byte), 0, len(m.subs[channel]))
	for _, fn := range m.subs[channel] {
		fns = append(fns, fn)
	}
	m.mu.RUnlock()
	for _, fn := range fns {
		fn(append([]byte(nil), payload...))
	}
	return nil
}

// Subscribe registers fn on channel.
func (m *Memory) Subscribe(_ context.Context, channel string, fn func([]byte)) (func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.next
	m.next++
	if m.subs[channel] == nil {
		m.subs[channel] = make(map[int]func([]byte))
	}
	m.subs[channel][id] = fn
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			delete(m.subs[channel], id)
			if len(m.subs[channel]) == 0 {
				delete(m.subs, channel)
			}
		})
	}, nil
}
