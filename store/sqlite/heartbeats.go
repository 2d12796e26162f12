package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

// SQLite's lease clock is the caller's: one process owns the database
// file, so every stamp and every judgement comes from one clock (see
// store.LeaseWindow).

// leaseCutoff is the stamp at or before which a heartbeat is stale in w.
func leaseCutoff(w store.LeaseWindow) string { return ts(w.Now.Add(-w.Timeout)) }

// HeartbeatInsert records a runner's lease on a chat, replacing the row of
// the same (chat, runner) pair: Acquire may run again for a runner whose
// earlier row was not cleaned up yet.
func (t *tx) HeartbeatInsert(ctx context.Context, chatID, runnerID uuid.UUID, at time.Time) error {
	_, err := t.exec(ctx, `
		INSERT INTO chat_heartbeats (chat_id, runner_id, heartbeat_at) VALUES (?, ?, ?)
		ON CONFLICT (chat_id, runner_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`,
		chatID.String(), runnerID.String(), ts(at))
	if err != nil {
		return fmt.Errorf("insert heartbeat of chat %s runner %s: %w", chatID, runnerID, err)
	}
	return nil
}

// HeartbeatRenew renews, in one statement, the fresh leases whose chat is
// still owned by that runner (spec: "Heartbeat loop"), and returns them.
// The leases travel as one JSON array of [chat, runner] pairs, as the two
// uuid[] do on Postgres.
func (t *tx) HeartbeatRenew(ctx context.Context, leases []store.Lease, w store.LeaseWindow) ([]store.Lease, error) {
	if len(leases) == 0 {
		return []store.Lease{}, nil
	}
	pairs := make([][2]string, len(leases))
	for i, l := range leases {
		pairs[i] = [2]string{l.ChatID.String(), l.RunnerID.String()}
	}
	list, err := json.Marshal(pairs)
	if err != nil {
		return nil, fmt.Errorf("renew heartbeats: encode leases: %w", err)
	}
	rows, err := t.tx.QueryContext(ctx, `
		UPDATE chat_heartbeats AS hb SET heartbeat_at = ?
		WHERE hb.heartbeat_at > ?
		AND (hb.chat_id, hb.runner_id) IN (
			SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))
		AND EXISTS (SELECT 1 FROM chats c WHERE c.id = hb.chat_id
			AND c.runner_id = hb.runner_id AND c.worker_id IS NOT NULL)
		RETURNING chat_id, runner_id`, ts(w.Now), leaseCutoff(w), string(list))
	if err != nil {
		return nil, fmt.Errorf("renew heartbeats: %w", translate(err))
	}
	renewed, err := collect(rows, func(row rowScanner) (store.Lease, error) {
		var chatID, runnerID string
		if err := row.Scan(&chatID, &runnerID); err != nil {
			return store.Lease{}, translate(err)
		}
		var (
			l store.Lease
			s scanner
		)
		s.uuid(&l.ChatID, chatID)
		s.uuid(&l.RunnerID, runnerID)
		return l, s.err
	})
	if err != nil {
		return nil, fmt.Errorf("renew heartbeats: %w", err)
	}
	return renewed, nil
}

// HeartbeatAt reads a lease's last heartbeat.
func (t *tx) HeartbeatAt(ctx context.Context, chatID, runnerID uuid.UUID) (time.Time, error) {
	var at string
	err := t.tx.QueryRowContext(ctx, query.HeartbeatAt,
		chatID.String(), runnerID.String()).Scan(&at)
	if err != nil {
		return time.Time{}, fmt.Errorf("get heartbeat of chat %s runner %s: %w", chatID, runnerID, translate(err))
	}
	parsed, err := parseTS(at)
	if err != nil {
		return time.Time{}, fmt.Errorf("get heartbeat of chat %s runner %s: %w", chatID, runnerID, err)
	}
	return parsed, nil
}

// HeartbeatFresh reports whether a lease has a fresh heartbeat.
func (t *tx) HeartbeatFresh(ctx context.Context, chatID, runnerID uuid.UUID, w store.LeaseWindow) (bool, error) {
	var fresh bool
	err := t.tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM chat_heartbeats
		WHERE chat_id = ? AND runner_id = ? AND heartbeat_at > ?)`,
		chatID.String(), runnerID.String(), leaseCutoff(w)).Scan(&fresh)
	if err != nil {
		return false, fmt.Errorf("check heartbeat of chat %s runner %s: %w", chatID, runnerID, translate(err))
	}
	return fresh, nil
}

// HeartbeatDeleteStale removes stale leases.
func (t *tx) HeartbeatDeleteStale(ctx context.Context, w store.LeaseWindow) (int64, error) {
	n, err := t.exec(ctx, `DELETE FROM chat_heartbeats WHERE heartbeat_at < ?`, leaseCutoff(w))
	if err != nil {
		return 0, fmt.Errorf("delete stale heartbeats: %w", err)
	}
	return n, nil
}

// HeartbeatOldestForeign reports how long until the oldest fresh lease
// that other workers hold on runnable chats goes stale.
func (t *tx) HeartbeatOldestForeign(ctx context.Context, p store.AcquirableParams) (time.Duration, bool, error) {
	if p.Leases == nil {
		return 0, false, nil
	}
	var at sql.NullString
	err := t.tx.QueryRowContext(ctx, `SELECT MIN(hb.heartbeat_at) FROM chats c
		JOIN chat_heartbeats hb ON hb.chat_id = c.id AND hb.runner_id = c.runner_id
		WHERE c.archived = 0 AND c.status IN ('running', 'interrupting', 'requires_action')
		AND c.worker_id IS NOT NULL AND c.worker_id <> ? AND hb.heartbeat_at > ?`,
		p.Self.String(), leaseCutoff(*p.Leases)).Scan(&at)
	if err != nil {
		return 0, false, fmt.Errorf("oldest foreign heartbeat: %w", translate(err))
	}
	if !at.Valid {
		return 0, false, nil
	}
	oldest, err := parseTS(at.String)
	if err != nil {
		return 0, false, fmt.Errorf("oldest foreign heartbeat: %w", err)
	}
	return oldest.Add(p.Leases.Timeout).Sub(p.Leases.Now), true, nil
}

// ReplicaTouch marks a replica's record as refreshed at now.
func (t *tx) ReplicaTouch(ctx context.Context, workerID uuid.UUID, now time.Time) (bool, error) {
	n, err := t.exec(ctx, `UPDATE chat_replicas SET updated_at = ? WHERE worker_id = ?`, ts(now), workerID.String())
	if err != nil {
		return false, fmt.Errorf("touch replica %s: %w", workerID, err)
	}
	return n > 0, nil
}

// ReplicaDeleteStale removes the records of replicas not refreshed within
// the window.
func (t *tx) ReplicaDeleteStale(ctx context.Context, w store.LeaseWindow) (int64, error) {
	n, err := t.exec(ctx, `DELETE FROM chat_replicas WHERE updated_at < ?`, leaseCutoff(w))
	if err != nil {
		return 0, fmt.Errorf("delete stale replicas: %w", err)
	}
	return n, nil
}

// ownerAlive is the SQL condition "the chat aliased c has a live owner".
func ownerAlive(p store.AcquirableParams, a *args, c string) string {
	if p.Leases != nil {
		return `(` + c + `.worker_id IS NOT NULL AND EXISTS (SELECT 1 FROM chat_heartbeats hb
			WHERE hb.chat_id = ` + c + `.id AND hb.runner_id = ` + c + `.runner_id AND hb.heartbeat_at > ` + a.add(leaseCutoff(*p.Leases)) + `))`
	}
	return `(` + c + `.worker_id IS NOT NULL AND ` + c + `.worker_id = ` + a.add(p.Self.String()) + `)`
}

// holdsSlot is the SQL condition "the chat aliased c counts against the
// concurrent agent limit": a live owner holds it and it is not waiting on
// a person or an operator (requires_action keeps its owner, not a slot;
// so does a running tool call whose MCP server's question awaits its
// answer, while the question names the chat's runner).
func holdsSlot(p store.AcquirableParams, a *args, c string) string {
	return `(` + ownerAlive(p, a, c) + ` AND ` + c + `.status <> 'requires_action'
		AND NOT EXISTS (SELECT 1 FROM chat_elicitations q
			WHERE q.chat_id = ` + c + `.id AND q.slot_runner_id = ` + c + `.runner_id))`
}

// ChatListAcquirable lists runnable chats without a live owner, in
// admission order: requires_action first (it takes no slot), then the
// chats of the owners holding the fewest slots, oldest first.
// (archived = 0 rather than NOT archived, so the partial index applies.)
func (t *tx) ChatListAcquirable(ctx context.Context, p store.AcquirableParams) ([]store.Chat, error) {
	// The slots each owner holds are counted once (held), not once per
	// candidate: a correlated count made this quadratic in the chats.
	var a args
	held := holdsSlot(p, &a, "o")
	alive := ownerAlive(p, &a, "c")
	rows, err := t.tx.QueryContext(ctx, `WITH held AS (
			SELECT o.owner_id, COUNT(*) AS n FROM chats o WHERE `+held+` GROUP BY o.owner_id)
		SELECT `+qualified("c", query.ChatColumns)+` FROM chats c LEFT JOIN held h ON h.owner_id = c.owner_id
		WHERE c.archived = 0 AND c.status IN ('running', 'interrupting', 'requires_action')
		AND NOT `+alive+`
		ORDER BY CASE WHEN c.status = 'requires_action' THEN 0 ELSE 1 END,
			COALESCE(h.n, 0), c.updated_at, c.id
		LIMIT `+a.add(store.ListLimit(p.Limit)), a...)
	if err != nil {
		return nil, fmt.Errorf("list acquirable chats: %w", translate(err))
	}
	chats, err := collect(rows, scanChat)
	if err != nil {
		return nil, fmt.Errorf("list acquirable chats: %w", err)
	}
	return chats, nil
}

// countOwnedQuery is ChatCountOwned's query. It reads the owned chats
// through chats_owned_idx (worker_id IS NOT NULL), never the whole table:
// it runs inside the admission write transaction.
func countOwnedQuery(p store.AcquirableParams) (string, args) {
	var a args
	held := holdsSlot(p, &a, "c")
	return `SELECT
		COUNT(*) FILTER (WHERE c.parent_chat_id IS NULL),
		COUNT(*) FILTER (WHERE c.parent_chat_id IS NOT NULL)
		FROM chats c WHERE ` + held, a
}

// ChatCountOwned counts the chats that hold a slot of the concurrent
// agent limit.
func (t *tx) ChatCountOwned(ctx context.Context, p store.AcquirableParams) (roots, subagents int64, err error) {
	stmt, a := countOwnedQuery(p)
	err = t.tx.QueryRowContext(ctx, stmt, a...).Scan(&roots, &subagents)
	if err != nil {
		return 0, 0, fmt.Errorf("count owned chats: %w", translate(err))
	}
	return roots, subagents, nil
}

// ChatCountOwnedByOwner counts, per user, the chats that hold a slot of
// the concurrent agent limit (both pools together).
func (t *tx) ChatCountOwnedByOwner(ctx context.Context, p store.AcquirableParams) (map[uuid.UUID]int64, error) {
	var a args
	held := holdsSlot(p, &a, "c")
	rows, err := t.tx.QueryContext(ctx, `SELECT c.owner_id, COUNT(*) FROM chats c WHERE `+held+` GROUP BY c.owner_id`, a...)
	if err != nil {
		return nil, fmt.Errorf("count owned chats by owner: %w", translate(err))
	}
	type ownerCount struct {
		owner uuid.UUID
		n     int64
	}
	list, err := collect(rows, func(row rowScanner) (ownerCount, error) {
		var (
			owner string
			oc    ownerCount
			s     scanner
		)
		if err := row.Scan(&owner, &oc.n); err != nil {
			return ownerCount{}, translate(err)
		}
		s.uuid(&oc.owner, owner)
		return oc, s.err
	})
	if err != nil {
		return nil, fmt.Errorf("count owned chats by owner: %w", err)
	}
	counts := make(map[uuid.UUID]int64, len(list))
	for _, oc := range list {
		counts[oc.owner] = oc.n
	}
	return counts, nil
}

// AdmissionLock is a no-op: the IMMEDIATE transaction already holds the
// database write lock, which serialises capacity admission.
func (t *tx) AdmissionLock(context.Context) error { return nil }

// AdmissionTryLock always succeeds, for the same reason.
func (t *tx) AdmissionTryLock(context.Context) (bool, error) { return true, nil }

// qualified prefixes each column of a comma-separated list with alias.
func qualified(alias, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// ChatListByWorker lists the ids of the chats workerID owns (through
// chats_owned_idx), oldest first.
func (t *tx) ChatListByWorker(ctx context.Context, workerID uuid.UUID) ([]uuid.UUID, error) {
	rows, err := t.tx.QueryContext(ctx, query.ChatListByWorker, workerID.String())
	if err != nil {
		return nil, fmt.Errorf("list chats of worker %s: %w", workerID, translate(err))
	}
	ids, err := collect(rows, func(r rowScanner) (uuid.UUID, error) {
		var id uuid.UUID
		err := r.Scan(&id)
		return id, translate(err)
	})
	if err != nil {
		return nil, fmt.Errorf("list chats of worker %s: %w", workerID, err)
	}
	return ids, nil
}
