package sqlite

import (
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// A transaction's read cache. The state machine reads a chat's row and
// counts its queue many times in one transaction (to lock it, to classify
// it before and after each transition, to notify), and each read is a
// statement. Inside a transaction nothing but the transaction itself can
// change what it reads (SQLite has one writer, and a read transaction sees
// one snapshot), so a read is kept until the transaction runs its next
// write statement, whatever table that writes: triggers make a write to
// one table change others (a message insert moves the chat's versions).
// The cache belongs to one batch member (tx), so a member rolled back to
// its savepoint takes its cache with it.

// txCache holds the reads of one member, each stamped with the write count
// of the transaction when it was read. A queue count is kept across
// updates of chats rows, which cannot change it.
type txCache struct {
	chats  map[uuid.UUID]cachedChat
	queues map[uuid.UUID]cachedCount
}

type cachedChat struct {
	at   uint64
	chat store.Chat
}

type cachedCount struct {
	at uint64
	n  int64
}

type writeKind int

const (
	writesNothing writeKind = iota
	// writesChat: an UPDATE of chats rows, which changes no queue (no
	// trigger on chats writes chat_queued_messages; a test checks).
	writesChat
	writesAny
)

// kindOf classifies a statement: a SELECT only reads, an UPDATE of chats
// writes chats only, and anything else (WITH included, which may wrap a
// write) may write anything.
func kindOf(query string) writeKind {
	q := strings.TrimLeft(query, " \t\r\n")
	switch {
	case hasPrefixFold(q, "SELECT "):
		return writesNothing
	case hasPrefixFold(q, "UPDATE chats SET "):
		return writesChat
	}
	return writesAny
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func (t *tx) cachedChat(id uuid.UUID) (store.Chat, bool) {
	e, ok := t.cache.chats[id]
	if !ok || e.at != t.tx.writes {
		return store.Chat{}, false
	}
	return e.chat.Clone(), true
}

func (t *tx) keepChat(c store.Chat) {
	if t.cache.chats == nil {
		t.cache.chats = map[uuid.UUID]cachedChat{}
	}
	t.cache.chats[c.ID] = cachedChat{at: t.tx.writes, chat: c.Clone()}
}

func (t *tx) cachedQueueCount(id uuid.UUID) (int64, bool) {
	e, ok := t.cache.queues[id]
	return e.n, ok && e.at == t.tx.queueWrites
}

func (t *tx) keepQueueCount(id uuid.UUID, n int64) {
	if t.cache.queues == nil {
		t.cache.queues = map[uuid.UUID]cachedCount{}
	}
	t.cache.queues[id] = cachedCount{at: t.tx.queueWrites, n: n}
}
