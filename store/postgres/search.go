package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
)

// Search runs on the pg_trgm GIN indexes of migration 00017: one over
// chats.title, one over chatd_message_text(content) of searchable messages
// (a partial index whose predicate searchable repeats, so the planner can
// use it). ILIKE is the case-insensitive substring match; the trigram index
// serves terms of 3 or more characters.

// searchable is the partial index's predicate: live user and assistant
// messages people see.
const searchable = `NOT pruned AND role IN ('user', 'assistant') AND visibility <> 'model'`

// shortWindow is the bounded scan of a term too short for the trigram
// index: the newest store.SearchShortScan searchable messages (the same
// rows SQLite's chat_message_fts holds).
var shortWindow = `(SELECT id, chat_id, chatd_message_text(content) AS body FROM chat_messages
	WHERE ` + searchable + ` AND jsonb_typeof(content) = 'array'
	ORDER BY id DESC LIMIT ` + strconv.Itoa(store.SearchShortScan) + `)`

// searchWhere is the ChatList condition on chats for q (non-empty).
func searchWhere(q string, a *args) string {
	pat := `'%' || ` + a.add(likeEscape(q)) + ` || '%'`
	if store.ShortSearch(q) {
		return `(title ILIKE ` + pat + ` ESCAPE '\'
		OR id IN (SELECT w.chat_id FROM ` + shortWindow + ` w WHERE w.body ILIKE ` + pat + ` ESCAPE '\'))`
	}
	// One set of matching ids, each half from its own index, so the chats
	// are then read by key (an OR of the two would scan chats).
	return `id IN (SELECT c.id FROM chats c WHERE c.title ILIKE ` + pat + ` ESCAPE '\'
	UNION SELECT m.chat_id FROM chat_messages m
		WHERE ` + searchable + ` AND chatd_message_text(m.content) ILIKE ` + pat + ` ESCAPE '\')`
}

// ChatSearchHits returns the oldest searchable message matching query of
// each of chatIDs that has one (see store.Reader).
func (t *tx) ChatSearchHits(ctx context.Context, chatIDs []uuid.UUID, query string) ([]store.SearchHit, error) {
	if len(chatIDs) == 0 || query == "" {
		return []store.SearchHit{}, nil
	}
	var a args
	ids := a.add(chatIDs)
	pat := `'%' || ` + a.add(likeEscape(query)) + ` || '%' ESCAPE '\'`
	var sqlText string
	if store.ShortSearch(query) {
		sqlText = `SELECT DISTINCT ON (w.chat_id) w.chat_id, w.id, w.body FROM ` + shortWindow + ` w
			WHERE w.chat_id = ANY(` + ids + `) AND w.body ILIKE ` + pat + `
			ORDER BY w.chat_id, w.id`
	} else {
		sqlText = `SELECT DISTINCT ON (chat_id) chat_id, id, chatd_message_text(content) FROM chat_messages
			WHERE chat_id = ANY(` + ids + `) AND ` + searchable + `
			AND chatd_message_text(content) ILIKE ` + pat + `
			ORDER BY chat_id, id`
	}
	rows, err := t.tx.Query(ctx, sqlText, a...)
	if err != nil {
		return nil, fmt.Errorf("search hits: %w", translate(err))
	}
	hits, err := collect(rows, func(row pgx.Row) (store.SearchHit, error) {
		var (
			h    store.SearchHit
			body *string
		)
		if err := row.Scan(&h.ChatID, &h.MessageID, &body); err != nil {
			return h, translate(err)
		}
		if body != nil {
			h.Text = *body
		}
		return h, nil
	})
	if err != nil {
		return nil, fmt.Errorf("search hits: %w", err)
	}
	return hits, nil
}
