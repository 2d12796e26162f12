package store

import (
	"context"
	"unicode/utf8"

	"github.com/google/uuid"
)

// SearchReader searches message text (see ChatListParams.Query). It is
// part of Reader.
type SearchReader interface {
	// ChatSearchHits returns, for each of chatIDs with a searchable
	// message matching query (see ChatListParams.Query), its oldest such
	// message; chats without one are left out, in no particular order.
	ChatSearchHits(ctx context.Context, chatIDs []uuid.UUID, query string) ([]SearchHit, error)
}

// Search bounds. ChatListParams.Query matches a chat whose title, or the
// text parts of one of its searchable messages (user or assistant, not
// deleted, not model-only), contain it, case-insensitively. Terms of
// SearchIndexMinRunes or more characters are served by an index; shorter
// ones match titles by a scan and message text only within SearchShortScan.
const (
	// SearchIndexMinRunes is the shortest term the trigram indexes serve.
	SearchIndexMinRunes = 3
	// SearchShortScan bounds the scan of a shorter term: the message text
	// it sees is that of the newest SearchShortScan searchable messages of
	// the whole store.
	SearchShortScan = 2000
)

// SearchHit is a chat's message matching a search: the message and its
// searchable text (its text parts, one per line).
type SearchHit struct {
	ChatID    uuid.UUID
	MessageID int64
	Text      string
}

// ShortSearch reports whether q is too short for the trigram indexes.
func ShortSearch(q string) bool {
	return utf8.RuneCountInString(q) < SearchIndexMinRunes
}
