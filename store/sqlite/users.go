package sqlite

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

const userColumns = `id, name, admin, created_at`

func scanUser(row rowScanner) (store.User, error) {
	var (
		u           store.User
		id, created string
		admin       int
	)
	if err := row.Scan(&id, &u.Name, &admin, &created); err != nil {
		return store.User{}, translate(err)
	}
	var s scanner
	s.uuid(&u.ID, id)
	s.time(&u.CreatedAt, created)
	if s.err != nil {
		return store.User{}, s.err
	}
	u.Admin = admin != 0
	return u, nil
}

// UserInsert creates a user; a taken name is store.ErrConflict.
func (t *tx) UserInsert(ctx context.Context, p store.UserInsertParams) (store.User, error) {
	u, err := scanUser(t.tx.QueryRowContext(ctx,
		`INSERT INTO users (id, name, admin, created_at) VALUES (?, ?, ?, ?) RETURNING `+userColumns,
		p.ID.String(), p.Name, boolInt(p.Admin), ts(p.Now)))
	if err != nil {
		return store.User{}, fmt.Errorf("insert user %q: %w", p.Name, err)
	}
	return u, nil
}

// UserGet reads a user by id.
func (t *tx) UserGet(ctx context.Context, id uuid.UUID) (store.User, error) {
	u, err := scanUser(t.tx.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE id = ?`, id.String()))
	if err != nil {
		return store.User{}, fmt.Errorf("get user %s: %w", id, err)
	}
	return u, nil
}

// UserGetByName reads a user by name.
func (t *tx) UserGetByName(ctx context.Context, name string) (store.User, error) {
	u, err := scanUser(t.tx.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE name = ?`, name))
	if err != nil {
		return store.User{}, fmt.Errorf("get user %q: %w", name, err)
	}
	return u, nil
}

const tokenColumns = `id, user_id, hash, name, created_at`

func scanToken(row rowScanner) (store.Token, error) {
	var (
		tok               store.Token
		id, user, created string
	)
	if err := row.Scan(&id, &user, &tok.Hash, &tok.Name, &created); err != nil {
		return store.Token{}, translate(err)
	}
	var s scanner
	s.uuid(&tok.ID, id)
	s.uuid(&tok.UserID, user)
	s.time(&tok.CreatedAt, created)
	if s.err != nil {
		return store.Token{}, s.err
	}
	return tok, nil
}

// TokenInsert stores a token hash.
func (t *tx) TokenInsert(ctx context.Context, p store.TokenInsertParams) (store.Token, error) {
	tok, err := scanToken(t.tx.QueryRowContext(ctx,
		`INSERT INTO api_tokens (id, user_id, hash, name, created_at) VALUES (?, ?, ?, ?, ?)
		RETURNING `+tokenColumns,
		p.ID.String(), p.UserID.String(), p.Hash, p.Name, ts(p.Now)))
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

// TokenDeleteForUser removes all of a user's tokens.
func (t *tx) TokenDeleteForUser(ctx context.Context, userID uuid.UUID) (int64, error) {
	n, err := t.exec(ctx, `DELETE FROM api_tokens WHERE user_id = ?`, userID.String())
	if err != nil {
		return 0, fmt.Errorf("delete tokens of user %s: %w", userID, err)
	}
	return n, nil
}

// UserSetAdmin grants or revokes admin.
func (t *tx) UserSetAdmin(ctx context.Context, id uuid.UUID, admin bool) error {
	n, err := t.exec(ctx, `UPDATE users SET admin = ? WHERE id = ?`, boolInt(admin), id.String())
	if err != nil {
		return fmt.Errorf("set admin of user %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("set admin of user %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// UserCount counts users.
func (t *tx) UserCount(ctx context.Context) (int64, error) {
	var n int64
	if err := t.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count users: %w", translate(err))
	}
	return n, nil
}

// TokenDeleteByHash removes one token.
func (t *tx) TokenDeleteByHash(ctx context.Context, hash []byte) (int64, error) {
	n, err := t.exec(ctx, `DELETE FROM api_tokens WHERE hash = ?`, hash)
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
	err := t.tx.QueryRowContext(ctx, `SELECT worker_id, address, token_hash, updated_at FROM chat_replicas WHERE worker_id = ?`,
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
	if _, err := t.exec(ctx, `DELETE FROM chat_replicas WHERE worker_id = ?`, workerID.String()); err != nil {
		return fmt.Errorf("delete replica %s: %w", workerID, err)
	}
	return nil
}
