package api

import (
	"context"
	"strings"
	"unicode"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// snippetContext is how many characters a search snippet keeps on each
// side of the match.
const snippetContext = 60

// searchSnippets reads the message hits of query for chats and returns the
// snippet of each chat that has one.
func searchSnippets(ctx context.Context, tx store.Reader, chats []store.Chat, query string) (map[uuid.UUID]*sdk.SearchSnippet, error) {
	ids := make([]uuid.UUID, len(chats))
	for i, c := range chats {
		ids[i] = c.ID
	}
	hits, err := tx.ChatSearchHits(ctx, ids, query)
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]*sdk.SearchSnippet, len(hits))
	for _, h := range hits {
		m, err := tx.MessageGet(ctx, h.ChatID, h.MessageID)
		if err != nil {
			return nil, err
		}
		out[h.ChatID] = &sdk.SearchSnippet{MessageID: h.MessageID, Text: snippet(h.Text, query), ActiveBranch: !m.Deleted}
	}
	return out, nil
}

// snippet cuts text to snippetContext characters either side of the first
// case-insensitive occurrence of query, marking a cut with "…"; line breaks
// become spaces. Text without an occurrence (a store may fold case a little
// differently) is cut from its start.
func snippet(text, query string) string {
	rs := []rune(strings.ReplaceAll(text, "\n", " "))
	at, n := foldIndex(rs, []rune(query)), len([]rune(query))
	if at < 0 {
		at, n = 0, 0
	}
	from, to := max(0, at-snippetContext), min(len(rs), at+n+snippetContext)
	var b strings.Builder
	if from > 0 {
		b.WriteString("…")
	}
	b.WriteString(string(rs[from:to]))
	if to < len(rs) {
		b.WriteString("…")
	}
	return b.String()
}

// foldIndex finds needle in hay rune by rune, lowering each (the store's
// chatd_fold lowers the same way), or returns -1.
func foldIndex(hay, needle []rune) int {
	if len(needle) == 0 {
		return -1
	}
outer:
	for i := 0; i+len(needle) <= len(hay); i++ {
		for j, r := range needle {
			if unicode.ToLower(hay[i+j]) != unicode.ToLower(r) {
				continue outer
			}
		}
		return i
	}
	return -1
}
