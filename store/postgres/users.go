package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanUser(row pgx.Row) (store.User, error) {
	var u store.User
	if err := row.Scan(&u.ID, &u.Name, &u.Admin, &u.Disabled, &u.CreatedAt); err != nil {
		return store.User{}, translate(err)
	}
	u.CreatedAt = utc(u.CreatedAt)
	return u, nil
}

// UserInsert creates a user; a taken name is store.ErrConflict.
func (t *tx) UserInsert(ctx context.Context, p store.UserInsertParams) (store.User, error) {
	u, err := scanUser(t.tx.QueryRow(ctx,
		query.UserInsert,
		p.ID, p.Name, p.Admin, p.Now))
	if err != nil {
		return store.User{}, fmt.Errorf("insert user %q: %w", p.Name, err)
	}
	return u, nil
}

// UserGet reads a user by id.
func (t *tx) UserGet(ctx context.Context, id uuid.UUID) (store.User, error) {
	u, err := scanUser(t.tx.QueryRow(ctx, query.UserGet, id))
	if err != nil {
		return store.User{}, fmt.Errorf("get user %s: %w", id, err)
	}
	return u, nil
}

// UserGetByName reads a user by name.
func (t *tx) UserGetByName(ctx context.Context, name string) (store.User, error) {
	u, err := scanUser(t.tx.QueryRow(ctx, query.UserGetByName, name))
	if err != nil {
		return store.User{}, fmt.Errorf("get user %q: %w", name, err)
	}
	return u, nil
}

// tokenInfoColumns are everything but the hash, which only TokenInsert and
// TokenGetByHash read back.
const (
	tokenInfoColumns = `id, user_id, name, kind, created_at, expires_at, last_used_at`
	tokenColumns     = tokenInfoColumns + `, hash`
)

func scanTokenRow(row pgx.Row, withHash bool) (store.Token, error) {
	var (
		tok  store.Token
		kind string
	)
	dst := []any{&tok.ID, &tok.UserID, &tok.Name, &kind, &tok.CreatedAt, &tok.ExpiresAt, &tok.LastUsedAt}
	if withHash {
		dst = append(dst, &tok.Hash)
	}
	if err := row.Scan(dst...); err != nil {
		return store.Token{}, translate(err)
	}
	tok.Kind = store.TokenKind(kind)
	tok.CreatedAt = utc(tok.CreatedAt)
	tok.ExpiresAt = utcPtr(tok.ExpiresAt)
	tok.LastUsedAt = utcPtr(tok.LastUsedAt)
	return tok, nil
}

func scanToken(row pgx.Row) (store.Token, error)     { return scanTokenRow(row, true) }
func scanTokenInfo(row pgx.Row) (store.Token, error) { return scanTokenRow(row, false) }

// TokenInsert stores a token hash.
func (t *tx) TokenInsert(ctx context.Context, p store.TokenInsertParams) (store.Token, error) {
	kind := p.Kind
	if kind == "" {
		kind = store.TokenKindAPI
	}
	tok, err := scanToken(t.tx.QueryRow(ctx,
		`INSERT INTO api_tokens (id, user_id, hash, name, kind, expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
		RETURNING `+tokenColumns,
		p.ID, p.UserID, p.Hash, p.Name, string(kind), p.ExpiresAt, p.Now))
	if err != nil {
		return store.Token{}, fmt.Errorf("insert token for user %s: %w", p.UserID, err)
	}
	return tok, nil
}

// TokenGetByHash finds a token by its hash. The hash is not in the error:
// it is a credential's fingerprint.
func (t *tx) TokenGetByHash(ctx context.Context, hash []byte) (store.Token, error) {
	tok, err := scanToken(t.tx.QueryRow(ctx, `SELECT `+tokenColumns+` FROM api_tokens WHERE hash = $1`, hash))
	if err != nil {
		return store.Token{}, fmt.Errorf("get token by hash: %w", err)
	}
	return tok, nil
}

// TokenGet reads a token by id, without its hash.
func (t *tx) TokenGet(ctx context.Context, id uuid.UUID) (store.Token, error) {
	tok, err := scanTokenInfo(t.tx.QueryRow(ctx, `SELECT `+tokenInfoColumns+` FROM api_tokens WHERE id = $1`, id))
	if err != nil {
		return store.Token{}, fmt.Errorf("get token %s: %w", id, err)
	}
	return tok, nil
}

// TokenList lists tokens oldest first, without their hashes.
func (t *tx) TokenList(ctx context.Context, p store.TokenListParams) ([]store.Token, error) {
	stmt, args := `SELECT `+tokenInfoColumns+` FROM api_tokens`, []any{}
	if p.UserID.Valid {
		stmt += ` WHERE user_id = $1`
		args = append(args, p.UserID.UUID)
	}
	rows, err := t.tx.Query(ctx, stmt+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", translate(err))
	}
	toks, err := collect(rows, scanTokenInfo)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return toks, nil
}

// TokenDelete removes one token by id.
func (t *tx) TokenDelete(ctx context.Context, id uuid.UUID) (int64, error) {
	tag, err := t.tx.Exec(ctx, query.TokenDelete, id)
	if err != nil {
		return 0, fmt.Errorf("delete token %s: %w", id, translate(err))
	}
	return tag.RowsAffected(), nil
}

// TokenTouch records a use unless a later one is recorded.
func (t *tx) TokenTouch(ctx context.Context, id uuid.UUID, at time.Time) (bool, error) {
	tag, err := t.tx.Exec(ctx, `UPDATE api_tokens SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $1)`,
		at, id)
	if err != nil {
		return false, fmt.Errorf("touch token %s: %w", id, translate(err))
	}
	return tag.RowsAffected() > 0, nil
}

// TokenDeleteExpired removes expired tokens and idle sessions.
func (t *tx) TokenDeleteExpired(ctx context.Context, now, sessionIdleBefore time.Time) (int64, error) {
	stmt, args := query.TokenDeleteExpired, []any{now}
	if !sessionIdleBefore.IsZero() {
		stmt += ` OR (kind = 'session' AND COALESCE(last_used_at, created_at) <= $2)`
		args = append(args, sessionIdleBefore)
	}
	tag, err := t.tx.Exec(ctx, stmt, args...)
	if err != nil {
		return 0, fmt.Errorf("delete expired tokens: %w", translate(err))
	}
	return tag.RowsAffected(), nil
}

// TokenDeleteForUser removes all of a user's tokens.
func (t *tx) TokenDeleteForUser(ctx context.Context, userID uuid.UUID) (int64, error) {
	tag, err := t.tx.Exec(ctx, query.TokenDeleteForUser, userID)
	if err != nil {
		return 0, fmt.Errorf("delete tokens of user %s: %w", userID, translate(err))
	}
	return tag.RowsAffected(), nil
}

// UserLock takes the user's row lock until the transaction ends. FOR NO
// KEY UPDATE serialises the lockers without blocking the FOR KEY SHARE
// locks that inserts referencing the user take (messages, chats), so a
// transition holding a chat lock never waits on it.
func (t *tx) UserLock(ctx context.Context, id uuid.UUID) error {
	var one int
	if err := t.tx.QueryRow(ctx, `SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE`, id).Scan(&one); err != nil {
		return fmt.Errorf("lock user %s: %w", id, translate(err))
	}
	return nil
}

// UserSetAdmin grants or revokes admin.
func (t *tx) UserSetAdmin(ctx context.Context, id uuid.UUID, admin bool) error {
	tag, err := t.tx.Exec(ctx, query.UserSetAdmin, admin, id)
	if err != nil {
		return fmt.Errorf("set admin of user %s: %w", id, translate(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("set admin of user %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// UserCount counts users.
func (t *tx) UserCount(ctx context.Context) (int64, error) {
	var n int64
	if err := t.tx.QueryRow(ctx, query.UserCount).Scan(&n); err != nil {
		return 0, fmt.Errorf("count users: %w", translate(err))
	}
	return n, nil
}

// TokenDeleteByHash removes one token.
func (t *tx) TokenDeleteByHash(ctx context.Context, hash []byte) (int64, error) {
	tag, err := t.tx.Exec(ctx, query.TokenDeleteByHash, hash)
	if err != nil {
		return 0, fmt.Errorf("delete token: %w", translate(err))
	}
	return tag.RowsAffected(), nil
}

// ReplicaUpsert publishes a replica's relay address, stamped by the
// database's clock (r.UpdatedAt is ignored; see heartbeats.go).
func (t *tx) ReplicaUpsert(ctx context.Context, r store.Replica) error {
	_, err := t.tx.Exec(ctx, `INSERT INTO chat_replicas (worker_id, address, token_hash, updated_at) VALUES ($1, $2, $3, statement_timestamp())
		ON CONFLICT (worker_id) DO UPDATE SET address = EXCLUDED.address, token_hash = EXCLUDED.token_hash, updated_at = EXCLUDED.updated_at`,
		r.WorkerID, r.Address, r.TokenHash)
	if err != nil {
		return fmt.Errorf("upsert replica %s: %w", r.WorkerID, translate(err))
	}
	return nil
}

// ReplicaGet reads a replica.
func (t *tx) ReplicaGet(ctx context.Context, workerID uuid.UUID) (store.Replica, error) {
	var r store.Replica
	err := t.tx.QueryRow(ctx, query.ReplicaGet,
		workerID).Scan(&r.WorkerID, &r.Address, &r.TokenHash, &r.UpdatedAt)
	if err != nil {
		return store.Replica{}, fmt.Errorf("get replica %s: %w", workerID, translate(err))
	}
	r.UpdatedAt = r.UpdatedAt.UTC()
	return r, nil
}

// ReplicaDelete removes a replica's record.
func (t *tx) ReplicaDelete(ctx context.Context, workerID uuid.UUID) error {
	if _, err := t.tx.Exec(ctx, query.ReplicaDelete, workerID); err != nil {
		return fmt.Errorf("delete replica %s: %w", workerID, translate(err))
	}
	return nil
}

// UserList lists every user, oldest first.
func (t *tx) UserList(ctx context.Context) ([]store.User, error) {
	rows, err := t.tx.Query(ctx, query.UserList)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", translate(err))
	}
	users, err := collect(rows, scanUser)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return users, nil
}

// UserSetDisabled disables or enables a user.
func (t *tx) UserSetDisabled(ctx context.Context, id uuid.UUID, disabled bool) error {
	tag, err := t.tx.Exec(ctx, query.UserSetDisabled, disabled, id)
	if err != nil {
		return fmt.Errorf("set disabled of user %s: %w", id, translate(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("set disabled of user %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// UserLockEnabledAdmins locks the enabled admins' rows (FOR NO KEY UPDATE,
// which an UPDATE of admin or disabled also takes): a concurrent demotion
// waits, and the rows are re-checked after it, so two writers cannot each
// remove "the other" last admin.
func (t *tx) UserLockEnabledAdmins(ctx context.Context) ([]uuid.UUID, error) {
	rows, err := t.tx.Query(ctx, `SELECT id FROM users WHERE admin AND NOT disabled ORDER BY id FOR NO KEY UPDATE`)
	if err != nil {
		return nil, fmt.Errorf("lock enabled admins: %w", translate(err))
	}
	ids, err := collect(rows, func(row pgx.Row) (uuid.UUID, error) {
		var id uuid.UUID
		return id, translate(row.Scan(&id))
	})
	if err != nil {
		return nil, fmt.Errorf("lock enabled admins: %w", err)
	}
	return ids, nil
}

// LoginCodeInsert stores a login code's hash.
func (t *tx) LoginCodeInsert(ctx context.Context, p store.LoginCodeInsertParams) error {
	if _, err := t.tx.Exec(ctx, query.LoginCodeInsert,
		p.Hash, p.UserID, p.ExpiresAt, p.Now); err != nil {
		return fmt.Errorf("insert login code for user %s: %w", p.UserID, translate(err))
	}
	return nil
}

// LoginCodeTake deletes a live login code and returns its user.
func (t *tx) LoginCodeTake(ctx context.Context, hash []byte, now time.Time) (uuid.UUID, error) {
	var id uuid.UUID
	err := t.tx.QueryRow(ctx, query.LoginCodeTake, hash, now).Scan(&id)
	if err != nil {
		return uuid.Nil, fmt.Errorf("take login code: %w", translate(err))
	}
	return id, nil
}

// LoginCodeDeleteExpired removes expired login codes.
func (t *tx) LoginCodeDeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	tag, err := t.tx.Exec(ctx, query.LoginCodeDeleteExpired, now)
	if err != nil {
		return 0, fmt.Errorf("delete expired login codes: %w", translate(err))
	}
	return tag.RowsAffected(), nil
}
