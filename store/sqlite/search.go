package sqlite

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// Search runs on the FTS5 trigram tables of migration 00017, which triggers
// keep in sync: chat_title_fts (keyed through chat_title_fts_ids) and
// chat_message_fts (rowid = chat_messages.id, searchable messages only).
// MATCH on a quoted phrase is a case-insensitive substring prefilter; every
// candidate is rechecked with chatd_fold(...) LIKE so the semantics are
// exactly the title search's (and Postgres's ILIKE), FTS5's own case
// folding notwithstanding.
//
// Messages written since the last flush of the index (migration 00019,
// SearchIndexPending: a busy writer flushes every searchPendingFlush
// messages, an idle one at every commit) are in chat_message_fts_pending,
// not yet in chat_message_fts; every search reads them too (pendingBodies),
// so a committed message is found at once either way.

// messageBody is the searchable text of message m: its text parts, one a
// line, as the index holds it.
const messageBody = `(SELECT group_concat(json_extract(p.value, '$.text'), char(10))
	FROM json_each(m.content) p WHERE json_extract(p.value, '$.type') = 'text')`

// messageSearchable is whether message m belongs in the index.
// (A row that is not JSON, which the store never writes, is left out
// rather than failing every flush after it.)
const messageSearchable = `m.pruned = 0 AND m.role IN ('user', 'assistant') AND m.visibility <> 'model'
	AND CASE WHEN json_valid(m.content) THEN json_type(m.content) = 'array' ELSE 0 END`

// pendingBodies are the searchable messages not indexed yet, as rows of
// (id, chat_id, body) like the index's. The CROSS JOIN keeps the short
// pending list the outer loop.
const pendingBodies = `SELECT m.id AS id, m.chat_id AS chat_id, ` + messageBody + ` AS body
	FROM chat_message_fts_pending f CROSS JOIN chat_messages m ON m.id = f.id
	WHERE ` + messageSearchable

// indexWindow is the newest store.SearchShortScan indexed messages.
var indexWindow = `SELECT rowid AS id, chat_id, body FROM chat_message_fts ORDER BY rowid DESC LIMIT ` +
	strconv.Itoa(store.SearchShortScan)

// shortWindow is the bounded scan of a term too short for the trigram
// index: the newest store.SearchShortScan searchable messages. With
// messages pending, those of the index and the pending ones (newer, or
// edited) are merged by id.
func shortWindow(pending bool) string {
	if !pending {
		return `(` + indexWindow + `)`
	}
	return `(SELECT id, chat_id, body FROM (SELECT * FROM (` + indexWindow + `) UNION ALL ` + pendingBodies + `)
	ORDER BY id DESC LIMIT ` + strconv.Itoa(store.SearchShortScan) + `)`
}

// searchPending reports whether messages wait for the index: the search
// then reads them too (its plain form, without, is the cheaper one).
func (t *tx) searchPending(ctx context.Context) (bool, error) {
	var pending bool
	if err := t.tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM chat_message_fts_pending)`).Scan(&pending); err != nil {
		return false, fmt.Errorf("search: pending messages: %w", translate(err))
	}
	return pending, nil
}

// ftsPhrase quotes q as one FTS5 phrase: with the trigram tokenizer it
// matches rows containing q as a substring.
func ftsPhrase(q string) string {
	return `"` + strings.ReplaceAll(q, `"`, `""`) + `"`
}

// searchScanAt and searchSpreadAt are where a search of a term the
// trigram indexes serve changes plan, like labelScanAt. A term few chats
// hold drives the list from its chats (a key lookup each, then a sort);
// one many chats hold is checked per chat while the chats are read in list
// order, which stops at the page's end.
var (
	searchScanAt   = 1000 // titles, or messages looked at
	searchSpreadAt = 200  // distinct chats among those messages
)

// rareSearch reports whether q, a term the indexes serve, looks held by
// few chats: fewer than searchScanAt titles, and fewer than searchSpreadAt
// distinct chats among its first searchScanAt messages (bounded reads of
// the trigram prefilter, which may only overcount). It picks a plan, not
// an answer. Pending messages are few (searchPendingFlush) and not counted.
func (t *tx) rareSearch(ctx context.Context, q string) (bool, error) {
	if store.ShortSearch(q) {
		return false, nil
	}
	var titles, chats int
	err := t.tx.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM (SELECT 1 FROM chat_title_fts WHERE chat_title_fts MATCH ?1 LIMIT ?2)),
		(SELECT count(DISTINCT chat_id) FROM (SELECT chat_id FROM chat_message_fts WHERE chat_message_fts MATCH ?1 LIMIT ?2))`,
		ftsPhrase(q), searchScanAt).Scan(&titles, &chats)
	if err != nil {
		return false, fmt.Errorf("search: count matches: %w", translate(err))
	}
	return titles < searchScanAt && chats < searchSpreadAt, nil
}

// searchWhere is the ChatList condition on chats for q (non-empty), with
// messages pending for the index or not (searchPending).
func searchWhere(q string, a *args, pending bool) string {
	// Placeholders are positional: each use adds its own argument.
	pat := func() string { return likePattern(q, a) }
	if store.ShortSearch(q) {
		return `(chatd_fold(title) LIKE ` + pat() +
			` OR id IN (SELECT w.chat_id FROM ` + shortWindow(pending) + ` w WHERE chatd_fold(w.body) LIKE ` + pat() + `))`
	}
	phrase := ftsPhrase(q)
	// One set of matching ids, each half from its own FTS5 table (and the
	// messages pending for the index).
	sql := `id IN (SELECT s.chat_id FROM chat_title_fts JOIN chat_title_fts_ids s ON s.n = chat_title_fts.rowid
		WHERE chat_title_fts MATCH ` + a.add(phrase) + ` AND chatd_fold(chat_title_fts.title) LIKE ` + pat() + `
	UNION SELECT chat_message_fts.chat_id FROM chat_message_fts
		WHERE chat_message_fts MATCH ` + a.add(phrase) + ` AND chatd_fold(chat_message_fts.body) LIKE ` + pat()
	if pending {
		sql += `
	UNION SELECT pb.chat_id FROM (` + pendingBodies + `) pb WHERE chatd_fold(pb.body) LIKE ` + pat()
	}
	return sql + `)`
}

// likePattern adds q as a case-folded LIKE pattern matching any text
// containing it.
func likePattern(q string, a *args) string {
	return "'%' || " + a.add(likeEscape(strings.ToLower(q))) + " || '%' ESCAPE '\\'"
}

// ChatSearchHits returns the oldest searchable message matching query of
// each of chatIDs that has one (see store.Reader).
func (t *tx) ChatSearchHits(ctx context.Context, chatIDs []uuid.UUID, query string) ([]store.SearchHit, error) {
	if len(chatIDs) == 0 || query == "" {
		return []store.SearchHit{}, nil
	}
	var a args
	in := func() string {
		ids := make([]string, len(chatIDs))
		for i, id := range chatIDs {
			ids[i] = a.add(id.String())
		}
		return strings.Join(ids, ", ")
	}
	pending, err := t.searchPending(ctx)
	if err != nil {
		return nil, err
	}
	// Arguments are added in the placeholders' order.
	var sqlText string
	if store.ShortSearch(query) {
		sqlText = `SELECT w.chat_id, min(w.id), w.body FROM ` + shortWindow(pending) + ` w
			WHERE w.chat_id IN (` + in() + `) AND chatd_fold(w.body) LIKE ` + likePattern(query, &a) + `
			GROUP BY w.chat_id`
	} else {
		sqlText = `SELECT rowid AS id, chat_id, body FROM chat_message_fts
			WHERE chat_message_fts MATCH ` + a.add(ftsPhrase(query)) + `
			AND chat_id IN (` + in() + `) AND chatd_fold(body) LIKE ` + likePattern(query, &a)
		if pending {
			sqlText += `
			UNION ALL SELECT pb.id, pb.chat_id, pb.body FROM (` + pendingBodies + `) pb
			WHERE pb.chat_id IN (` + in() + `) AND chatd_fold(pb.body) LIKE ` + likePattern(query, &a)
		}
		sqlText = `SELECT chat_id, min(id), body FROM (` + sqlText + `) GROUP BY chat_id`
	}
	// SQLite's bare-column rule: with min(), body comes from the row that
	// holds the minimum.
	rows, err := t.tx.QueryContext(ctx, sqlText, a...)
	if err != nil {
		return nil, fmt.Errorf("search hits: %w", translate(err))
	}
	hits, err := collect(rows, func(row rowScanner) (store.SearchHit, error) {
		var (
			h    store.SearchHit
			chat string
			body *string
			sc   scanner
		)
		if err := row.Scan(&chat, &h.MessageID, &body); err != nil {
			return h, translate(err)
		}
		sc.uuid(&h.ChatID, chat)
		if body != nil {
			h.Text = *body
		}
		return h, sc.err
	})
	if err != nil {
		return nil, fmt.Errorf("search hits: %w", err)
	}
	return hits, nil
}
