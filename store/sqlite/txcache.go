package sqlite

import (
	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// The transaction read cache (store.ReadCache). Inside a SQLite
// transaction nothing but the transaction itself can change what it reads
// (one writer; a read transaction sees one snapshot), so every chat row
// and queue count read is kept until the next statement that may write.
// The cache belongs to one batch member (tx), so a member rolled back to
// its savepoint takes its cache with it; the write counts are the shared
// transaction's (sqlTx), which only makes them count more.

func (t *tx) cachedChat(id uuid.UUID) (store.Chat, bool) { return t.cache.Chat(id, t.tx.writes) }

func (t *tx) keepChat(c store.Chat) { t.cache.KeepChat(c, t.tx.writes) }

func (t *tx) cachedQueueCount(id uuid.UUID) (int64, bool) {
	return t.cache.QueueCount(id, t.tx.writes)
}

func (t *tx) keepQueueCount(id uuid.UUID, n int64) { t.cache.KeepQueueCount(id, n, t.tx.writes) }
