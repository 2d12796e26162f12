package worker

import (
	"context"
	"slices"
	"sync"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/store"
)

// The history cache. A turn's prompt is the chat's history since its
// latest boundary (chatstate.FromBoundary), and reading all of it on every
// turn made a turn's cost grow with the chat: the worker keeps each recent
// chat's active messages as of a history version, and a turn reads only
// the messages written since.
//
// It rests on two rules of the schema (the store suite holds both stores
// to them): every meaningful message write, a soft delete included, gives
// the message revision = the chat's snapshot_version and sets
// history_version to the same; and message writes to one chat commit in
// snapshot order (they hold its row lock). So a snapshot whose chat row
// says history_version H holds every write of revision <= H, and what it
// holds beyond a view as of V is exactly the rows of revision > V. A
// change at or before the view's first message (an edit further back, the
// anchor itself deleted) can move the boundary back: the view is read
// afresh then. The cached slices are never changed in place: a merge
// builds a new one, so a reader's slice stays what it read.

const (
	// maxCachedHistories and maxCachedHistoryBytes bound the cache: the
	// least recently used chat goes first.
	maxCachedHistories    = 128
	maxCachedHistoryBytes = 64 << 20
)

type historyCache struct {
	mu    sync.Mutex
	chats map[uuid.UUID]*cachedHistory
	bytes int
	tick  uint64
}

type cachedHistory struct {
	version int64           // the chat's history_version msgs are as of
	msgs    []store.Message // FromBoundary's messages as of version
	bytes   int
	used    uint64
}

// active returns what chatstate.FromBoundary reads of c in tx; c is the
// chat row read in tx.
func (h *historyCache) active(ctx context.Context, tx store.Reader, c store.Chat) ([]store.Message, error) {
	h.mu.Lock()
	e := h.chats[c.ID]
	var (
		version int64
		msgs    []store.Message
	)
	if e != nil {
		version, msgs = e.version, e.msgs
	}
	h.mu.Unlock()
	fresh := e == nil || version > c.HistoryVersion // none, or kept from a newer snapshot
	if !fresh && version < c.HistoryVersion {
		changed, err := tx.MessageList(ctx, c.ID, store.MessageListParams{RevisionAfter: version, IncludeDeleted: true})
		if err != nil {
			return nil, err
		}
		if len(changed) > 0 && (len(msgs) == 0 || changed[0].ID <= msgs[0].ID) {
			fresh = true
		} else {
			msgs = chatstate.SinceLastAnchor(mergeMessages(msgs, changed))
		}
	}
	if fresh {
		var err error
		if msgs, err = chatstate.FromBoundary(ctx, tx, c.ID); err != nil {
			return nil, err
		}
	}
	h.put(c.ID, c.HistoryVersion, msgs)
	// A caller's append must not write into an array the cache shares.
	return slices.Clip(msgs), nil
}

// put keeps msgs as c's messages as of version, unless a newer view is
// kept already.
func (h *historyCache) put(id uuid.UUID, version int64, msgs []store.Message) {
	size := 0
	for _, m := range msgs {
		size += len(m.Content) + 256
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.chats == nil {
		h.chats = map[uuid.UUID]*cachedHistory{}
	}
	h.tick++
	if e := h.chats[id]; e != nil {
		if e.version > version {
			e.used = h.tick
			return
		}
		h.bytes -= e.bytes
		delete(h.chats, id)
	}
	if size > maxCachedHistoryBytes/4 {
		return // one chat may not crowd out the others
	}
	for len(h.chats) >= maxCachedHistories || h.bytes+size > maxCachedHistoryBytes {
		h.evictLocked()
	}
	h.chats[id] = &cachedHistory{version: version, msgs: msgs, bytes: size, used: h.tick}
	h.bytes += size
}

// evictLocked drops the least recently used chat.
func (h *historyCache) evictLocked() {
	var (
		oldest uuid.UUID
		at     uint64
		found  bool
	)
	for id, e := range h.chats {
		if !found || e.used < at {
			oldest, at, found = id, e.used, true
		}
	}
	if found {
		h.bytes -= h.chats[oldest].bytes
		delete(h.chats, oldest)
	}
}

// mergeMessages applies changed (rows written since, deleted ones
// included, in id order) to msgs (live rows in id order) in a new slice.
func mergeMessages(msgs, changed []store.Message) []store.Message {
	out := make([]store.Message, 0, len(msgs)+len(changed))
	i := 0
	for _, c := range changed {
		for i < len(msgs) && msgs[i].ID < c.ID {
			out = append(out, msgs[i])
			i++
		}
		if i < len(msgs) && msgs[i].ID == c.ID {
			i++ // replaced by c, or gone with it
		}
		if !c.Deleted {
			out = append(out, c)
		}
	}
	return append(out, msgs[i:]...)
}
