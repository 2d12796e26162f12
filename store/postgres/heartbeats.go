package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

// Postgres's lease clock is the database's: replicas on different hosts
// disagree about the time, so every heartbeat and replica record is
// stamped with statement_timestamp() and judged against it, and the
// callers' times are ignored; only a window's Timeout is used (see
// store.LeaseWindow). statement_timestamp(), not now(): an acquisition
// may wait seconds for the admission lock, and its stamp must not start
// out that old.

// staleBefore is the SQL expression of the instant at or before which a
// heartbeat is stale in w, by the database's clock.
func staleBefore(a *args, w store.LeaseWindow) string {
	return `(statement_timestamp() - ` + a.add(w.Timeout.Microseconds()) + `::bigint * interval '1 microsecond')`
}

// HeartbeatInsert records a runner's lease on a chat, replacing the row of
// the same (chat, runner) pair: Acquire may run again for a runner whose
// earlier row was not cleaned up yet. The database's clock stamps it.
func (t *tx) HeartbeatInsert(ctx context.Context, chatID, runnerID uuid.UUID, _ time.Time) error {
	_, err := t.tx.Exec(ctx, `
		INSERT INTO chat_heartbeats (chat_id, runner_id, heartbeat_at) VALUES ($1, $2, statement_timestamp())
		ON CONFLICT (chat_id, runner_id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at`,
		chatID, runnerID)
	if err != nil {
		return fmt.Errorf("insert heartbeat of chat %s runner %s: %w", chatID, runnerID, translate(err))
	}
	return nil
}

// HeartbeatRenew renews, in one statement, the fresh leases whose chat is
// still owned by that runner (spec: "Heartbeat loop"), and returns them.
func (t *tx) HeartbeatRenew(ctx context.Context, leases []store.Lease, w store.LeaseWindow) ([]store.Lease, error) {
	if len(leases) == 0 {
		return []store.Lease{}, nil
	}
	chats := make([]uuid.UUID, len(leases))
	runners := make([]uuid.UUID, len(leases))
	for i, l := range leases {
		chats[i], runners[i] = l.ChatID, l.RunnerID
	}
	a := args{chats, runners}
	rows, err := t.tx.Query(ctx, `
		UPDATE chat_heartbeats hb SET heartbeat_at = statement_timestamp()
		FROM unnest($1::uuid[], $2::uuid[]) AS runners(chat_id, runner_id)
		JOIN chats c ON c.id = runners.chat_id AND c.runner_id = runners.runner_id AND c.worker_id IS NOT NULL
		WHERE hb.chat_id = runners.chat_id AND hb.runner_id = runners.runner_id AND hb.heartbeat_at > `+staleBefore(&a, w)+`
		RETURNING hb.chat_id, hb.runner_id`, a...)
	if err != nil {
		return nil, fmt.Errorf("renew heartbeats: %w", translate(err))
	}
	renewed, err := collect(rows, func(r pgx.Row) (store.Lease, error) {
		var l store.Lease
		err := r.Scan(&l.ChatID, &l.RunnerID)
		return l, translate(err)
	})
	if err != nil {
		return nil, fmt.Errorf("renew heartbeats: %w", err)
	}
	return renewed, nil
}

// HeartbeatAt reads a lease's last heartbeat.
func (t *tx) HeartbeatAt(ctx context.Context, chatID, runnerID uuid.UUID) (time.Time, error) {
	var at time.Time
	err := t.tx.QueryRow(ctx, query.HeartbeatAt,
		chatID, runnerID).Scan(&at)
	if err != nil {
		return time.Time{}, fmt.Errorf("get heartbeat of chat %s runner %s: %w", chatID, runnerID, translate(err))
	}
	return at.UTC(), nil
}

// HeartbeatFresh reports whether a lease has a fresh heartbeat.
func (t *tx) HeartbeatFresh(ctx context.Context, chatID, runnerID uuid.UUID, w store.LeaseWindow) (bool, error) {
	a := args{chatID, runnerID}
	var fresh bool
	err := t.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM chat_heartbeats
		WHERE chat_id = $1 AND runner_id = $2 AND heartbeat_at > `+staleBefore(&a, w)+`)`, a...).Scan(&fresh)
	if err != nil {
		return false, fmt.Errorf("check heartbeat of chat %s runner %s: %w", chatID, runnerID, translate(err))
	}
	return fresh, nil
}

// HeartbeatDeleteStale removes stale leases.
func (t *tx) HeartbeatDeleteStale(ctx context.Context, w store.LeaseWindow) (int64, error) {
	var a args
	tag, err := t.tx.Exec(ctx, `DELETE FROM chat_heartbeats WHERE heartbeat_at < `+staleBefore(&a, w), a...)
	if err != nil {
		return 0, fmt.Errorf("delete stale heartbeats: %w", translate(err))
	}
	return tag.RowsAffected(), nil
}

// HeartbeatOldestForeign reports how long, by the database's clock, until
// the oldest fresh lease that other workers hold on runnable chats goes
// stale. The database measures the duration: a timestamp would have to be
// compared with the caller's clock.
func (t *tx) HeartbeatOldestForeign(ctx context.Context, p store.AcquirableParams) (time.Duration, bool, error) {
	if p.Leases == nil {
		return 0, false, nil
	}
	a := args{p.Self}
	stale := staleBefore(&a, *p.Leases)
	var micros *int64
	err := t.tx.QueryRow(ctx, `SELECT (EXTRACT(EPOCH FROM MIN(hb.heartbeat_at) - `+stale+`) * 1000000)::bigint
		FROM chats c JOIN chat_heartbeats hb ON hb.chat_id = c.id AND hb.runner_id = c.runner_id
		WHERE NOT c.archived AND c.status IN ('running', 'interrupting', 'requires_action')
		AND c.worker_id IS NOT NULL AND c.worker_id <> $1 AND hb.heartbeat_at > `+stale, a...).Scan(&micros)
	if err != nil {
		return 0, false, fmt.Errorf("oldest foreign heartbeat: %w", translate(err))
	}
	if micros == nil {
		return 0, false, nil
	}
	return time.Duration(*micros) * time.Microsecond, true, nil
}

// ReplicaTouch marks a replica's record as refreshed now, by the
// database's clock.
func (t *tx) ReplicaTouch(ctx context.Context, workerID uuid.UUID, _ time.Time) (bool, error) {
	tag, err := t.tx.Exec(ctx, `UPDATE chat_replicas SET updated_at = statement_timestamp() WHERE worker_id = $1`, workerID)
	if err != nil {
		return false, fmt.Errorf("touch replica %s: %w", workerID, translate(err))
	}
	return tag.RowsAffected() > 0, nil
}

// ReplicaDeleteStale removes the records of replicas not refreshed within
// the window, by the database's clock.
func (t *tx) ReplicaDeleteStale(ctx context.Context, w store.LeaseWindow) (int64, error) {
	var a args
	tag, err := t.tx.Exec(ctx, `DELETE FROM chat_replicas WHERE updated_at < `+staleBefore(&a, w), a...)
	if err != nil {
		return 0, fmt.Errorf("delete stale replicas: %w", translate(err))
	}
	return tag.RowsAffected(), nil
}

// ownerAlive is the SQL condition "the chat aliased c has a live owner".
func ownerAlive(p store.AcquirableParams, a *args, c string) string {
	if p.Leases != nil {
		return `(` + c + `.worker_id IS NOT NULL AND EXISTS (SELECT 1 FROM chat_heartbeats hb
			WHERE hb.chat_id = ` + c + `.id AND hb.runner_id = ` + c + `.runner_id AND hb.heartbeat_at > ` + staleBefore(a, *p.Leases) + `))`
	}
	return `(` + c + `.worker_id IS NOT NULL AND ` + c + `.worker_id = ` + a.add(p.Self) + `)`
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
func (t *tx) ChatListAcquirable(ctx context.Context, p store.AcquirableParams) ([]store.Chat, error) {
	// The slots each owner holds are counted once (held), not once per
	// candidate: a correlated count made this quadratic in the chats.
	var a args
	held := holdsSlot(p, &a, "o")
	alive := ownerAlive(p, &a, "c")
	rows, err := t.tx.Query(ctx, `WITH held AS (
			SELECT o.owner_id, COUNT(*) AS n FROM chats o WHERE `+held+` GROUP BY o.owner_id)
		SELECT `+qualified("c", query.ChatColumns)+` FROM chats c LEFT JOIN held h ON h.owner_id = c.owner_id
		WHERE NOT c.archived AND c.status IN ('running', 'interrupting', 'requires_action')
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
	err = t.tx.QueryRow(ctx, stmt, a...).Scan(&roots, &subagents)
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
	rows, err := t.tx.Query(ctx, `SELECT c.owner_id, COUNT(*) FROM chats c WHERE `+held+` GROUP BY c.owner_id`, a...)
	if err != nil {
		return nil, fmt.Errorf("count owned chats by owner: %w", translate(err))
	}
	type ownerCount struct {
		owner uuid.UUID
		n     int64
	}
	list, err := collect(rows, func(r pgx.Row) (ownerCount, error) {
		var oc ownerCount
		err := r.Scan(&oc.owner, &oc.n)
		return oc, translate(err)
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

// admissionLockKey is the advisory lock key of capacity admission.
const admissionLockKey = 0x63686174644c696d // "chatdLim"

// AdmissionLock takes the transaction-scoped admission lock, waiting at
// most 5 seconds (spec: "Concurrent agent limiter").
func (t *tx) AdmissionLock(ctx context.Context) error {
	if _, err := t.tx.Exec(ctx, `SET LOCAL lock_timeout = '5s'`); err != nil {
		return fmt.Errorf("set lock_timeout: %w", translate(err))
	}
	if _, err := t.tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(admissionLockKey)); err != nil {
		return fmt.Errorf("admission lock: %w", translate(err))
	}
	return nil
}

// AdmissionTryLock takes the admission lock if it is free.
func (t *tx) AdmissionTryLock(ctx context.Context) (bool, error) {
	var ok bool
	if err := t.tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, int64(admissionLockKey)).Scan(&ok); err != nil {
		return false, fmt.Errorf("admission lock: %w", translate(err))
	}
	return ok, nil
}

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
	rows, err := t.tx.Query(ctx, query.ChatListByWorker, workerID)
	if err != nil {
		return nil, fmt.Errorf("list chats of worker %s: %w", workerID, translate(err))
	}
	ids, err := collect(rows, func(r pgx.Row) (uuid.UUID, error) {
		var id uuid.UUID
		err := r.Scan(&id)
		return id, translate(err)
	})
	if err != nil {
		return nil, fmt.Errorf("list chats of worker %s: %w", workerID, err)
	}
	return ids, nil
}
