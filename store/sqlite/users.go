package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/internal/query"
)

func scanUser(row rowScanner) (store.User, error) {
	var (
		u           store.User
		id, created string
		admin, off  int
	)
	if err := row.Scan(&id, &u.Name, &admin, &off, &created); err != nil {
		return store.User{}, translate(err)
	}
	var s scanner
	s.uuid(&u.ID, id)
	s.time(&u.CreatedAt, created)
	if s.err != nil {
		return store.User{}, s.err
	}
	u.Admin = admin != 0
	u.Disabled = off != 0
	return u, nil
}

// UserInsert creates a user; a taken name is store.ErrConflict.
func (t *tx) UserInsert(ctx context.Context, p store.UserInsertParams) (store.User, error) {
	u, err := scanUser(t.tx.QueryRowContext(ctx,
		query.UserInsert,
		p.ID.String(), p.Name, boolInt(p.Admin), ts(p.Now)))
	if err != nil {
		return store.User{}, fmt.Errorf("insert user %q: %w", p.Name, err)
	}
	return u, nil
}

// UserGet reads a user by id.
func (t *tx) UserGet(ctx context.Context, id uuid.UUID) (store.User, error) {
	u, err := scanUser(t.tx.QueryRowContext(ctx, query.UserGet, id.String()))
	if err != nil {
		return store.User{}, fmt.Errorf("get user %s: %w", id, err)
	}
	return u, nil
}

// UserGetByName reads a user by name.
func (t *tx) UserGetByName(ctx context.Context, name string) (store.User, error) {
	u, err := scanUser(t.tx.QueryRowContext(ctx, query.UserGetByName, name))
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

func scanTokenRow(row rowScanner, withHash bool) (store.Token, error) {
	var (
		tok               store.Token
		id, user, created string
		kind              string
		expires, used     sql.NullString
	)
	dst := []any{&id, &user, &tok.Name, &kind, &created, &expires, &used}
	if withHash {
		dst = append(dst, &tok.Hash)
	}
	if err := row.Scan(dst...); err != nil {
		return store.Token{}, translate(err)
	}
	tok.Kind = store.TokenKind(kind)
	var s scanner
	s.uuid(&tok.ID, id)
	s.uuid(&tok.UserID, user)
	s.time(&tok.CreatedAt, created)
	s.timePtr(&tok.ExpiresAt, expires)
	s.timePtr(&tok.LastUsedAt, used)
	if s.err != nil {
		return store.Token{}, s.err
	}
	return tok, nil
}

func scanToken(row rowScanner) (store.Token, error)     { return scanTokenRow(row, true) }
func scanTokenInfo(row rowScanner) (store.Token, error) { return scanTokenRow(row, false) }

// TokenInsert stores a token hash.
func (t *tx) TokenInsert(ctx context.Context, p store.TokenInsertParams) (store.Token, error) {
	kind := p.Kind
	if kind == "" {
		kind = store.TokenKindAPI
	}
	tok, err := scanToken(t.tx.QueryRowContext(ctx,
		`INSERT INTO api_tokens (id, user_id, hash, name, kind, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
		RETURNING `+tokenColumns,
		p.ID.String(), p.UserID.String(), p.Hash, p.Name, string(kind), tsPtr(p.ExpiresAt), ts(p.Now)))
	if err != nil {
		return store.Token{}, fmt.Errorf("insert token for user %s: %w", p.UserID, err)
	}
	return tok, nil
}

// TokenGetByHash finds a token by its hash. The hash is not in the error:
// it is a credential's fingerprint.
func (t *tx) TokenGetByHash(ctx context.Context, hash []byte) (store.Token, error) {
	tok, err := scanToken(t.tx.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM api_tokens WHERE hash = ?`, hash))
	if err != nil {
		return store.Token{}, fmt.Errorf("get token by hash: %w", err)
	}
	return tok, nil
}

// TokenGet reads a token by id, without its hash.
func (t *tx) TokenGet(ctx context.Context, id uuid.UUID) (store.Token, error) {
	tok, err := scanTokenInfo(t.tx.QueryRowContext(ctx, `SELECT `+tokenInfoColumns+` FROM api_tokens WHERE id = ?`, id.String()))
	if err != nil {
		return store.Token{}, fmt.Errorf("get token %s: %w", id, err)
	}
	return tok, nil
}

// TokenList lists tokens oldest first, without their hashes.
func (t *tx) TokenList(ctx context.Context, p store.TokenListParams) ([]store.Token, error) {
	stmt, args := `SELECT `+tokenInfoColumns+` FROM api_tokens`, []any{}
	if p.UserID.Valid {
		stmt += ` WHERE user_id = ?`
		args = append(args, p.UserID.UUID.String())
	}
	rows, err := t.tx.QueryContext(ctx, stmt+` ORDER BY created_at, id`, args...)
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
	n, err := t.exec(ctx, query.TokenDelete, id.String())
	if err != nil {
		return 0, fmt.Errorf("delete token %s: %w", id, err)
	}
	return n, nil
}

// TokenTouch records a use unless a later one is recorded.
func (t *tx) TokenTouch(ctx context.Context, id uuid.UUID, at time.Time) (bool, error) {
	n, err := t.exec(ctx, `UPDATE api_tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`,
		ts(at), id.String(), ts(at))
	if err != nil {
		return false, fmt.Errorf("touch token %s: %w", id, err)
	}
	return n > 0, nil
}

// TokenDeleteExpired removes expired tokens and idle sessions.
func (t *tx) TokenDeleteExpired(ctx context.Context, now, sessionIdleBefore time.Time) (int64, error) {
	stmt, args := query.TokenDeleteExpired, []any{ts(now)}
	if !sessionIdleBefore.IsZero() {
		stmt += ` OR (kind = 'session' AND COALESCE(last_used_at, created_at) <= ?)`
		args = append(args, ts(sessionIdleBefore))
	}
	n, err := t.exec(ctx, stmt, args...)
	if err != nil {
		return 0, fmt.Errorf("delete expired tokens: %w", err)
	}
	return n, nil
}

// TokenDeleteForUser removes all of a user's tokens.
func (t *tx) TokenDeleteForUser(ctx context.Context, userID uuid.UUID) (int64, error) {
	n, err := t.exec(ctx, query.TokenDeleteForUser, userID.String())
	if err != nil {
		return 0, fmt.Errorf("delete tokens of user %s: %w", userID, err)
	}
	return n, nil
}

// UserSetAdmin grants or revokes admin.
func (t *tx) UserSetAdmin(ctx context.Context, id uuid.UUID, admin bool) error {
	n, err := t.exec(ctx, query.UserSetAdmin, boolInt(admin), id.String())
	if err != nil {
		return fmt.Errorf("set admin of user %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("set admin of user %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// UserLock checks that the user exists; the write transaction already
// holds the database's write lock, which serialises every writer.
func (t *tx) UserLock(ctx context.Context, id uuid.UUID) error {
	var one int
	if err := t.tx.QueryRowContext(ctx, `SELECT 1 FROM users WHERE id = ?`, id.String()).Scan(&one); err != nil {
		return fmt.Errorf("lock user %s: %w", id, translate(err))
	}
	return nil
}

// UserCount counts users.
func (t *tx) UserCount(ctx context.Context) (int64, error) {
	var n int64
	if err := t.tx.QueryRowContext(ctx, query.UserCount).Scan(&n); err != nil {
		return 0, fmt.Errorf("count users: %w", translate(err))
	}
	return n, nil
}

// TokenDeleteByHash removes one token.
func (t *tx) TokenDeleteByHash(ctx context.Context, hash []byte) (int64, error) {
	n, err := t.exec(ctx, query.TokenDeleteByHash, hash)
	if err != nil {
		return 0, fmt.Errorf("delete token: %w", err)
	}
	return n, nil
}

// ReplicaUpsert publishes a replica's relay address.
func (t *tx) ReplicaUpsert(ctx context.Context, r store.Replica) error {
	_, err := t.exec(ctx, `INSERT INTO chat_replicas (worker_id, address, token_hash, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (worker_id) DO UPDATE SET address = excluded.address, token_hash = excluded.token_hash, updated_at = excluded.updated_at`,
		r.WorkerID.String(), r.Address, r.TokenHash, ts(r.UpdatedAt))
	if err != nil {
		return fmt.Errorf("upsert replica %s: %w", r.WorkerID, err)
	}
	return nil
}

// ReplicaGet reads a replica.
func (t *tx) ReplicaGet(ctx context.Context, workerID uuid.UUID) (store.Replica, error) {
	var (
		r           store.Replica
		id, updated string
	)
	err := t.tx.QueryRowContext(ctx, query.ReplicaGet,
		workerID.String()).Scan(&id, &r.Address, &r.TokenHash, &updated)
	if err != nil {
		return store.Replica{}, fmt.Errorf("get replica %s: %w", workerID, translate(err))
	}
	var s scanner
	s.uuid(&r.WorkerID, id)
	s.time(&r.UpdatedAt, updated)
	if s.err != nil {
		return store.Replica{}, fmt.Errorf("get replica %s: %w", workerID, s.err)
	}
	return r, nil
}

// ReplicaDelete removes a replica's record.
func (t *tx) ReplicaDelete(ctx context.Context, workerID uuid.UUID) error {
	if _, err := t.exec(ctx, query.ReplicaDelete, workerID.String()); err != nil {
		return fmt.Errorf("delete replica %s: %w", workerID, err)
	}
	return nil
}

// UserList lists every user, oldest first.
func (t *tx) UserList(ctx context.Context) ([]store.User, error) {
	rows, err := t.tx.QueryContext(ctx, query.UserList)
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
	n, err := t.exec(ctx, query.UserSetDisabled, boolInt(disabled), id.String())
	if err != nil {
		return fmt.Errorf("set disabled of user %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("set disabled of user %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// UserLockEnabledAdmins returns the enabled admins; the write transaction
// already holds the database's write lock.
func (t *tx) UserLockEnabledAdmins(ctx context.Context) ([]uuid.UUID, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT id FROM users WHERE admin = 1 AND disabled = 0 ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("lock enabled admins: %w", translate(err))
	}
	ids, err := collect(rows, func(row rowScanner) (uuid.UUID, error) {
		var (
			raw string
			id  uuid.UUID
		)
		if err := row.Scan(&raw); err != nil {
			return uuid.Nil, translate(err)
		}
		var s scanner
		s.uuid(&id, raw)
		return id, s.err
	})
	if err != nil {
		return nil, fmt.Errorf("lock enabled admins: %w", err)
	}
	return ids, nil
}

// LoginCodeInsert stores a login code's hash.
func (t *tx) LoginCodeInsert(ctx context.Context, p store.LoginCodeInsertParams) error {
	if _, err := t.exec(ctx, query.LoginCodeInsert,
		p.Hash, p.UserID.String(), ts(p.ExpiresAt), ts(p.Now)); err != nil {
		return fmt.Errorf("insert login code for user %s: %w", p.UserID, err)
	}
	return nil
}

// LoginCodeTake deletes a live login code and returns its user.
func (t *tx) LoginCodeTake(ctx context.Context, hash []byte, now time.Time) (uuid.UUID, error) {
	var raw string
	err := t.tx.QueryRowContext(ctx, query.LoginCodeTake, hash, ts(now)).Scan(&raw)
	if err != nil {
		return uuid.Nil, fmt.Errorf("take login code: %w", translate(err))
	}
	var (
		s  scanner
		id uuid.UUID
	)
	s.uuid(&id, raw)
	if s.err != nil {
		return uuid.Nil, fmt.Errorf("take login code: %w", s.err)
	}
	return id, nil
}

// LoginCodeDeleteExpired removes expired login codes.
func (t *tx) LoginCodeDeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	n, err := t.exec(ctx, query.LoginCodeDeleteExpired, ts(now))
	if err != nil {
		return 0, fmt.Errorf("delete expired login codes: %w", err)
	}
	return n, nil
}
