// Package auth mints and checks chatd's API tokens. Tokens are random,
// shown once, and stored only as SHA-256 hashes.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// TokenPrefix marks chatd tokens so they are recognisable in logs and leaks.
const TokenPrefix = "chatd_"

// AdminName is the user CHATD_BOOTSTRAP_TOKEN and the first start create.
const AdminName = "admin"

// ErrUnauthenticated: the token is missing, malformed or unknown.
var ErrUnauthenticated = errors.New("unauthenticated")

// NewToken returns a fresh random token.
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// Hash is the stored form of a token.
func Hash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// EnsureUser returns the user called name, creating it when absent. An
// existing user is promoted to admin when admin is set.
func EnsureUser(ctx context.Context, tx store.Tx, name string, admin bool, now time.Time) (store.User, error) {
	u, err := tx.UserGetByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return tx.UserInsert(ctx, store.UserInsertParams{ID: uuid.New(), Name: name, Admin: admin, Now: now})
	}
	if err != nil || !admin || u.Admin {
		return u, err
	}
	if err := tx.UserSetAdmin(ctx, u.ID, true); err != nil {
		return u, fmt.Errorf("promote %s to admin: %w", name, err)
	}
	u.Admin = true
	return u, nil
}

// CreateToken mints a token for user name (created if needed), stamped now.
func CreateToken(ctx context.Context, s store.Store, name string, admin bool, label string, now time.Time) (string, store.User, error) {
	if strings.TrimSpace(name) == "" {
		return "", store.User{}, errors.New("user name is empty")
	}
	token := NewToken()
	var u store.User
	err := s.InTx(ctx, func(tx store.Tx) error {
		var err error
		if u, err = EnsureUser(ctx, tx, name, admin, now); err != nil {
			return err
		}
		_, err = tx.TokenInsert(ctx, store.TokenInsertParams{
			ID: uuid.New(), UserID: u.ID, Hash: Hash(token), Name: label, Now: now,
		})
		return err
	})
	return token, u, err
}

// revokeOtherBootstrapTokens deletes the admin's bootstrap tokens but keep.
func revokeOtherBootstrapTokens(ctx context.Context, tx store.Tx, admin, keep uuid.UUID) error {
	toks, err := tx.TokenList(ctx, store.TokenListParams{UserID: uuid.NullUUID{UUID: admin, Valid: true}})
	if err != nil {
		return err
	}
	for _, tok := range toks {
		if tok.Kind != store.TokenKindBootstrap || tok.ID == keep {
			continue
		}
		if _, err := tx.TokenDelete(ctx, tok.ID); err != nil {
			return fmt.Errorf("revoke the previous bootstrap token: %w", err)
		}
	}
	return nil
}

// RevokeToken deletes one token by its clear value.
func RevokeToken(ctx context.Context, s store.Store, token string) error {
	return s.InTx(ctx, func(tx store.Tx) error {
		_, err := tx.TokenDeleteByHash(ctx, Hash(token))
		return err
	})
}

// RevokeToken deletes the token (a web session's, at logout); the API,
// which holds only a read store, revokes through here.
func (t *Tokens) RevokeToken(ctx context.Context, token string) error {
	return RevokeToken(ctx, t.store, token)
}

// SetBudget sets a user's own budget (nil: the defaults apply again);
// store.ErrNotFound when there is no such user.
func (t *Tokens) SetBudget(ctx context.Context, userID uuid.UUID, b *store.Budget, now time.Time) error {
	return t.store.InTx(ctx, func(tx store.Tx) error { return tx.UserBudgetSet(ctx, userID, b, now) })
}

// Bootstrap prepares the admin user at start. With a bootstrap token, the
// admin exists with exactly that token (idempotent across restarts), every
// other bootstrap token of the admin (a previous CHATD_BOOTSTRAP_TOKEN) is
// deleted, and Bootstrap returns "". Without one, the first start (no users
// at all) creates the admin with a new token and returns it to be printed
// once; earlier bootstrap tokens stay, so unsetting the variable after the
// first start does not lock the admin out. Rows it creates are stamped now.
func Bootstrap(ctx context.Context, s store.Store, bootstrapToken string, now time.Time) (string, error) {
	if bootstrapToken != "" {
		return "", s.InTx(ctx, func(tx store.Tx) error {
			u, err := EnsureUser(ctx, tx, AdminName, true, now)
			if err != nil {
				return err
			}
			tok, err := tx.TokenGetByHash(ctx, Hash(bootstrapToken))
			switch {
			case err == nil && tok.UserID != u.ID:
				return fmt.Errorf("CHATD_BOOTSTRAP_TOKEN belongs to another user")
			case errors.Is(err, store.ErrNotFound):
				tok, err = tx.TokenInsert(ctx, store.TokenInsertParams{
					ID: uuid.New(), UserID: u.ID, Hash: Hash(bootstrapToken), Name: "bootstrap",
					Kind: store.TokenKindBootstrap, Now: now,
				})
				if err != nil {
					return err
				}
			case err != nil:
				return err
			}
			return revokeOtherBootstrapTokens(ctx, tx, u.ID, tok.ID)
		})
	}
	var token string
	err := s.InTx(ctx, func(tx store.Tx) error {
		if _, err := tx.UserGetByName(ctx, AdminName); err == nil {
			return nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		n, err := tx.UserCount(ctx)
		if err != nil || n > 0 {
			return err // users exist: not a first start
		}
		u, err := EnsureUser(ctx, tx, AdminName, true, now)
		if err != nil {
			return err
		}
		token = NewToken()
		_, err = tx.TokenInsert(ctx, store.TokenInsertParams{
			ID: uuid.New(), UserID: u.ID, Hash: Hash(token), Name: "first start", Now: now,
		})
		return err
	})
	return token, err
}
