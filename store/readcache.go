package store

import (
	"strings"

	"github.com/google/uuid"
)

// ReadCache is a transaction's cache of the chat rows and queue counts it
// read, for the stores. The state machine reads a chat's row and counts
// its queue many times in one transaction (to lock it, to classify it
// before and after each transition, to notify), each read a statement. A
// store keeps a read while nothing can have changed it: no statement that
// may write has run in the transaction since (whatever table it wrote:
// triggers make a write to one table change others), and no other
// transaction can write the row (SQLite has one writer; on Postgres the
// transaction holds the chat's row lock). Entries are stamped with the
// transaction's write counts (WriteCounts), and rows are cloned in and out
// so a caller's change reaches no other read.
type ReadCache struct {
	chats  map[uuid.UUID]cachedRow[Chat]
	queues map[uuid.UUID]cachedRow[int64]
}

type cachedRow[T any] struct {
	at uint64
	v  T
}

// WriteCounts counts a transaction's statements that may have written:
// all of them, and those that may have written a queue.
type WriteCounts struct{ All, Queue uint64 }

// Note counts query, if it may write: a SELECT does not, an UPDATE of
// chats writes no queue (no trigger on chats writes chat_queued_messages;
// the SQLite store's tests check its schema), anything else (WITH included,
// which may wrap a write) may write anything.
func (w *WriteCounts) Note(query string) {
	q := strings.TrimLeft(query, " \t\r\n")
	switch {
	case hasKeyword(q, "SELECT"):
	case hasPrefixFold(q, "UPDATE chats SET "):
		w.All++
	default:
		w.All++
		w.Queue++
	}
}

// hasKeyword reports whether s starts with the SQL keyword kw, followed
// by white space or a parenthesis.
func hasKeyword(s, kw string) bool {
	if !hasPrefixFold(s, kw) || len(s) == len(kw) {
		return false
	}
	return strings.ContainsRune(" \t\r\n(", rune(s[len(kw)]))
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// Chat returns the kept row of id if no write ran since it was kept.
func (c *ReadCache) Chat(id uuid.UUID, w WriteCounts) (Chat, bool) {
	e, ok := c.chats[id]
	if !ok || e.at != w.All {
		return Chat{}, false
	}
	return e.v.Clone(), true
}

// KeepChat keeps ch as read now.
func (c *ReadCache) KeepChat(ch Chat, w WriteCounts) {
	if c.chats == nil {
		c.chats = map[uuid.UUID]cachedRow[Chat]{}
	}
	c.chats[ch.ID] = cachedRow[Chat]{at: w.All, v: ch.Clone()}
}

// QueueCount returns the kept queue count of id if no statement that may
// write a queue ran since it was kept.
func (c *ReadCache) QueueCount(id uuid.UUID, w WriteCounts) (int64, bool) {
	e, ok := c.queues[id]
	return e.v, ok && e.at == w.Queue
}

// KeepQueueCount keeps n as id's queue count read now.
func (c *ReadCache) KeepQueueCount(id uuid.UUID, n int64, w WriteCounts) {
	if c.queues == nil {
		c.queues = map[uuid.UUID]cachedRow[int64]{}
	}
	c.queues[id] = cachedRow[int64]{at: w.Queue, v: n}
}

// Forget drops what is kept of id (its lock is not held any more).
func (c *ReadCache) Forget(id uuid.UUID) {
	delete(c.chats, id)
	delete(c.queues, id)
}
