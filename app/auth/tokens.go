package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/store"
)

// Defaults for Config's zero values.
const (
	// DefaultSessionTTL is how long a web session lives without being used.
	DefaultSessionTTL = 7 * 24 * time.Hour
	// DefaultTouchInterval is how often a token's last use is written at
	// most: a request within it of the recorded use writes nothing.
	DefaultTouchInterval = time.Minute
)

// NoExpiry as Config.SessionTTL keeps sessions until logout or revocation
// (CHATD_SESSION_TTL=0).
const NoExpiry time.Duration = -1

// Config tunes token expiry. Zero values take the Defaults.
type Config struct {
	// SessionTTL: a session expires when it has not been used for this
	// long (sliding). Negative (NoExpiry): sessions never expire.
	SessionTTL time.Duration
	// TouchInterval throttles last-use writes; it is capped at a tenth of
	// SessionTTL so a short TTL still slides.
	TouchInterval time.Duration
}

// Tokens authenticates, mints, lists and revokes tokens. The API, the
// admin socket and the CLI's direct path all use it, so each behaves the
// same.
type Tokens struct {
	store store.Store
	clock clock.Clock
	log   *slog.Logger
	ttl   time.Duration // <= 0: sessions never expire
	touch time.Duration
}

// New returns the token service over s. A nil clock is clock.Real, a nil
// log slog.Default().
func New(s store.Store, c clock.Clock, log *slog.Logger, cfg Config) *Tokens {
	if c == nil {
		c = clock.Real{}
	}
	if log == nil {
		log = slog.Default()
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.TouchInterval <= 0 {
		cfg.TouchInterval = DefaultTouchInterval
	}
	if cfg.SessionTTL > 0 && cfg.TouchInterval > cfg.SessionTTL/10 {
		cfg.TouchInterval = cfg.SessionTTL / 10
	}
	return &Tokens{store: s, clock: c, log: log, ttl: cfg.SessionTTL, touch: cfg.TouchInterval}
}

// SessionTTL is the sliding session lifetime, 0 when sessions never expire.
func (t *Tokens) SessionTTL() time.Duration { return max(t.ttl, 0) }

// expiresAt is when tok stops authenticating, nil for never. A session
// lives SessionTTL past its last recorded use (its creation if unused);
// since uses are recorded every TouchInterval at most, it may end up to
// that much early.
func (t *Tokens) expiresAt(tok store.Token) *time.Time {
	if tok.Kind == store.TokenKindSession && t.ttl > 0 {
		at := tok.CreatedAt
		if tok.LastUsedAt != nil && tok.LastUsedAt.After(at) {
			at = *tok.LastUsedAt
		}
		at = at.Add(t.ttl)
		if tok.ExpiresAt != nil && tok.ExpiresAt.Before(at) {
			at = *tok.ExpiresAt
		}
		return &at
	}
	return tok.ExpiresAt
}

// Authenticate returns the user a token belongs to. An unknown, malformed,
// revoked or expired token is ErrUnauthenticated. A use more than
// TouchInterval after the recorded one is written (it slides a session's
// expiry); a failed write is logged, not fatal.
func (t *Tokens) Authenticate(ctx context.Context, token string) (store.User, error) {
	token = strings.TrimSpace(token)
	if token == "" || len(token) > 512 {
		return store.User{}, ErrUnauthenticated
	}
	var (
		u   store.User
		tok store.Token
	)
	err := t.store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		if tok, err = tx.TokenGetByHash(ctx, Hash(token)); err != nil {
			return err
		}
		u, err = tx.UserGet(ctx, tok.UserID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return store.User{}, ErrUnauthenticated
	}
	if err != nil {
		return store.User{}, fmt.Errorf("authenticate: %w", err)
	}
	now := t.clock.Now()
	if exp := t.expiresAt(tok); exp != nil && !now.Before(*exp) {
		return store.User{}, fmt.Errorf("%w: token expired", ErrUnauthenticated)
	}
	if u.Disabled {
		return store.User{}, fmt.Errorf("%w: %w", ErrUnauthenticated, ErrUserDisabled)
	}
	if tok.LastUsedAt == nil || now.Sub(*tok.LastUsedAt) >= t.touch {
		err := t.store.InTx(ctx, func(tx store.Tx) error {
			_, err := tx.TokenTouch(ctx, tok.ID, now)
			return err
		})
		if err != nil && ctx.Err() == nil {
			t.log.Warn("could not record a token's use", "token_id", tok.ID, "err", err)
		}
	}
	return u, nil
}

// CreateSession mints a web session token for u, first deleting expired
// tokens and idle sessions so logins do not accumulate rows.
func (t *Tokens) CreateSession(ctx context.Context, u store.User) (string, error) {
	token := NewToken()
	now := t.clock.Now()
	err := t.store.InTx(ctx, func(tx store.Tx) error {
		if err := deleteExpired(ctx, tx, now, t.ttl); err != nil {
			return err
		}
		_, err := tx.TokenInsert(ctx, store.TokenInsertParams{
			ID: uuid.New(), UserID: u.ID, Hash: Hash(token), Name: "web session", Kind: store.TokenKindSession, Now: now,
		})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("create a session for %s: %w", u.Name, err)
	}
	return token, nil
}

// DeleteExpired removes expired tokens and idle sessions.
func (t *Tokens) DeleteExpired(ctx context.Context) error {
	return t.store.InTx(ctx, func(tx store.Tx) error { return deleteExpired(ctx, tx, t.clock.Now(), t.ttl) })
}

func deleteExpired(ctx context.Context, tx store.Tx, now time.Time, ttl time.Duration) error {
	var idleBefore time.Time
	if ttl > 0 {
		idleBefore = now.Add(-ttl)
	}
	if _, err := tx.TokenDeleteExpired(ctx, now, idleBefore); err != nil {
		return err
	}
	_, err := tx.LoginCodeDeleteExpired(ctx, now)
	return err
}

// CreateParams describe an API token to mint.
type CreateParams struct {
	User  string // created when it does not exist
	Admin bool   // make (or promote) the user an admin
	Label string
	// ExpiresIn, when positive, gives the token a fixed expiry; otherwise
	// it never expires.
	ExpiresIn time.Duration
}

// Create mints an API token and returns it (to be shown once) with its
// description.
func (t *Tokens) Create(ctx context.Context, p CreateParams) (string, TokenInfo, error) {
	if strings.TrimSpace(p.User) == "" {
		return "", TokenInfo{}, errors.New("user name is empty")
	}
	token := NewToken()
	now := t.clock.Now()
	var info TokenInfo
	err := t.store.InTx(ctx, func(tx store.Tx) error {
		u, err := EnsureUser(ctx, tx, p.User, p.Admin, now)
		if err != nil {
			return err
		}
		params := store.TokenInsertParams{ID: uuid.New(), UserID: u.ID, Hash: Hash(token), Name: p.Label, Kind: store.TokenKindAPI, Now: now}
		if p.ExpiresIn > 0 {
			exp := now.Add(p.ExpiresIn)
			params.ExpiresAt = &exp
		}
		tok, err := tx.TokenInsert(ctx, params)
		if err != nil {
			return err
		}
		info = t.describe(tok, u, now)
		return nil
	})
	if err != nil {
		return "", TokenInfo{}, fmt.Errorf("create a token for %s: %w", p.User, err)
	}
	return token, info, nil
}

// TokenInfo describes a token without its secret or hash.
type TokenInfo struct {
	ID         uuid.UUID       `json:"id"`
	UserID     uuid.UUID       `json:"user_id"`
	User       string          `json:"user"`
	Admin      bool            `json:"admin"`
	Label      string          `json:"label"`
	Kind       store.TokenKind `json:"kind"`
	CreatedAt  time.Time       `json:"created_at"`
	LastUsedAt *time.Time      `json:"last_used_at,omitempty"`
	// ExpiresAt is when it stops working (for a session, if unused until
	// then); absent when it never expires.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Expired   bool       `json:"expired"`
}

func (t *Tokens) describe(tok store.Token, u store.User, now time.Time) TokenInfo {
	exp := t.expiresAt(tok)
	return TokenInfo{
		ID: tok.ID, UserID: u.ID, User: u.Name, Admin: u.Admin, Label: tok.Name, Kind: tok.Kind,
		CreatedAt: tok.CreatedAt, LastUsedAt: tok.LastUsedAt, ExpiresAt: exp,
		Expired: exp != nil && !now.Before(*exp),
	}
}

// List describes every token, or only user's when user is not empty (an
// unknown user is store.ErrNotFound), oldest first.
func (t *Tokens) List(ctx context.Context, user string) ([]TokenInfo, error) {
	now := t.clock.Now()
	out := make([]TokenInfo, 0)
	err := t.store.ReadTx(ctx, func(tx store.Reader) error {
		var p store.TokenListParams
		users := map[uuid.UUID]store.User{}
		if user != "" {
			u, err := tx.UserGetByName(ctx, user)
			if err != nil {
				return err
			}
			users[u.ID] = u
			p.UserID = uuid.NullUUID{UUID: u.ID, Valid: true}
		}
		toks, err := tx.TokenList(ctx, p)
		if err != nil {
			return err
		}
		for _, tok := range toks {
			u, ok := users[tok.UserID]
			if !ok {
				if u, err = tx.UserGet(ctx, tok.UserID); err != nil {
					return err
				}
				users[u.ID] = u
			}
			out = append(out, t.describe(tok, u, now))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return out, nil
}

// Revoke deletes the token id at once (store.ErrNotFound when there is
// none) and returns what it was.
func (t *Tokens) Revoke(ctx context.Context, id uuid.UUID) (TokenInfo, error) {
	var info TokenInfo
	err := t.store.InTx(ctx, func(tx store.Tx) error {
		tok, err := tx.TokenGet(ctx, id)
		if err != nil {
			return err
		}
		u, err := tx.UserGet(ctx, tok.UserID)
		if err != nil {
			return err
		}
		if _, err := tx.TokenDelete(ctx, id); err != nil {
			return err
		}
		info = t.describe(tok, u, t.clock.Now())
		return nil
	})
	if err != nil {
		return TokenInfo{}, fmt.Errorf("revoke token %s: %w", id, err)
	}
	return info, nil
}

// RevokeAll deletes every token of user (store.ErrNotFound when there is
// no such user) and reports how many went.
func (t *Tokens) RevokeAll(ctx context.Context, user string) (int64, error) {
	var n int64
	err := t.store.InTx(ctx, func(tx store.Tx) error {
		u, err := tx.UserGetByName(ctx, user)
		if err != nil {
			return err
		}
		n, err = tx.TokenDeleteForUser(ctx, u.ID)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("revoke the tokens of %s: %w", user, err)
	}
	return n, nil
}
