package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// LoginCodeTTL is how long a login link's code can be exchanged.
const LoginCodeTTL = 15 * time.Minute

// LoginCodePrefix marks login codes, so they are not mistaken for tokens.
const LoginCodePrefix = "chatdlc_"

// MaxUserNameLen and MaxTokenNameLen bound names, in characters.
const (
	MaxUserNameLen  = 64
	MaxTokenNameLen = 128
)

// Errors of user administration and login codes.
var (
	// ErrLastAdmin: the change would leave no enabled admin.
	ErrLastAdmin = errors.New("the last enabled admin cannot be disabled or demoted")
	// ErrUserExists: the name is taken.
	ErrUserExists = errors.New("a user with this name exists")
	// ErrLoginCodeInvalid: the code is unknown, used, expired, or its
	// user is disabled.
	ErrLoginCodeInvalid = errors.New("the login code is invalid, used or expired")
	// ErrUserDisabled: the user is disabled.
	ErrUserDisabled = errors.New("the user is disabled")
)

// ValidationError is bad input to a user or token operation.
type ValidationError struct {
	Field, Detail string
}

func (e *ValidationError) Error() string { return e.Field + ": " + e.Detail }

// ValidateUserName checks a new user's name: 1 to MaxUserNameLen
// printable characters without spaces or slashes, not "me" (the caller's
// alias in routes) and not a UUID (routes take ids too).
func ValidateUserName(name string) error {
	bad := func(detail string) error { return &ValidationError{Field: "username", Detail: detail} }
	switch {
	case name == "":
		return bad("must not be empty")
	case len([]rune(name)) > MaxUserNameLen:
		return bad(fmt.Sprintf("at most %d characters", MaxUserNameLen))
	case name == "me":
		return bad(`"me" is reserved`)
	}
	if _, err := uuid.Parse(name); err == nil {
		return bad("must not be a UUID")
	}
	for _, r := range name {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) || r == '/' {
			return bad("no spaces, slashes or control characters")
		}
	}
	return nil
}

// Users lists every user, oldest first.
func (t *Tokens) Users(ctx context.Context) ([]store.User, error) {
	var out []store.User
	err := t.store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		out, err = tx.UserList(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return out, nil
}

// User finds a user by id or, when ref is not a UUID, by name
// (store.ErrNotFound when there is none).
func (t *Tokens) User(ctx context.Context, ref string) (store.User, error) {
	var u store.User
	err := t.store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		if id, perr := uuid.Parse(ref); perr == nil {
			u, err = tx.UserGet(ctx, id)
		} else {
			u, err = tx.UserGetByName(ctx, ref)
		}
		return err
	})
	if err != nil {
		return store.User{}, fmt.Errorf("find user %q: %w", ref, err)
	}
	return u, nil
}

// CreateUser creates a user (ErrUserExists when the name is taken).
func (t *Tokens) CreateUser(ctx context.Context, name string, admin bool) (store.User, error) {
	if err := ValidateUserName(name); err != nil {
		return store.User{}, err
	}
	var u store.User
	err := t.store.InTx(ctx, func(tx store.Tx) error {
		var err error
		u, err = tx.UserInsert(ctx, store.UserInsertParams{ID: uuid.New(), Name: name, Admin: admin, Now: t.clock.Now()})
		return err
	})
	if errors.Is(err, store.ErrConflict) {
		return store.User{}, fmt.Errorf("create user %q: %w", name, ErrUserExists)
	}
	if err != nil {
		return store.User{}, fmt.Errorf("create user %q: %w", name, err)
	}
	return u, nil
}

// UserPatch changes a user; nil fields stay.
type UserPatch struct {
	Disabled *bool
	Admin    *bool
}

// UpdateUser applies p to user id. A change that would leave no enabled
// admin is ErrLastAdmin; concurrent changes are serialised on the enabled
// admins' rows, so two admins cannot demote each other to none.
func (t *Tokens) UpdateUser(ctx context.Context, id uuid.UUID, p UserPatch) (store.User, error) {
	var u store.User
	err := t.store.InTx(ctx, func(tx store.Tx) error {
		admins, err := tx.UserLockEnabledAdmins(ctx)
		if err != nil {
			return err
		}
		if u, err = tx.UserGet(ctx, id); err != nil {
			return err
		}
		wasAdmin := u.Admin && !u.Disabled
		if p.Admin != nil && *p.Admin != u.Admin {
			if err := tx.UserSetAdmin(ctx, id, *p.Admin); err != nil {
				return err
			}
			u.Admin = *p.Admin
		}
		if p.Disabled != nil && *p.Disabled != u.Disabled {
			if err := tx.UserSetDisabled(ctx, id, *p.Disabled); err != nil {
				return err
			}
			u.Disabled = *p.Disabled
		}
		if wasAdmin && !(u.Admin && !u.Disabled) && len(admins) <= 1 {
			return ErrLastAdmin
		}
		return nil
	})
	if err != nil {
		return store.User{}, fmt.Errorf("update user %s: %w", id, err)
	}
	return u, nil
}

// CreateAPIToken mints an API token for the existing user u, named name,
// expiring at expiresAt when it is not nil (it must be in the future).
func (t *Tokens) CreateAPIToken(ctx context.Context, u store.User, name string, expiresAt *time.Time) (string, TokenInfo, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", TokenInfo{}, &ValidationError{Field: "token_name", Detail: "must not be empty"}
	case len([]rune(name)) > MaxTokenNameLen:
		return "", TokenInfo{}, &ValidationError{Field: "token_name", Detail: fmt.Sprintf("at most %d characters", MaxTokenNameLen)}
	}
	now := t.clock.Now()
	if expiresAt != nil && !expiresAt.After(now) {
		return "", TokenInfo{}, &ValidationError{Field: "expires_at", Detail: "must be in the future"}
	}
	token := NewToken()
	var info TokenInfo
	err := t.store.InTx(ctx, func(tx store.Tx) error {
		tok, err := tx.TokenInsert(ctx, store.TokenInsertParams{
			ID: uuid.New(), UserID: u.ID, Hash: Hash(token), Name: name, Kind: store.TokenKindAPI, ExpiresAt: expiresAt, Now: now,
		})
		if err != nil {
			return err
		}
		info = t.describe(tok, u, now)
		return nil
	})
	if err != nil {
		return "", TokenInfo{}, fmt.Errorf("create a token for %s: %w", u.Name, err)
	}
	return token, info, nil
}

// RevokeOf deletes token id of user userID at once; a token of another
// user is store.ErrNotFound, as is an unknown one.
func (t *Tokens) RevokeOf(ctx context.Context, userID, id uuid.UUID) (TokenInfo, error) {
	var info TokenInfo
	err := t.store.InTx(ctx, func(tx store.Tx) error {
		tok, err := tx.TokenGet(ctx, id)
		if err != nil {
			return err
		}
		if tok.UserID != userID {
			return fmt.Errorf("token %s of another user: %w", id, store.ErrNotFound)
		}
		u, err := tx.UserGet(ctx, userID)
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

// newLoginCode returns a fresh random login code.
func newLoginCode() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return LoginCodePrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// CreateLoginCode mints a one-time login code for the enabled user called
// name (store.ErrNotFound when there is none, ErrUserDisabled when
// disabled), valid for LoginCodeTTL. Only its hash is stored.
func (t *Tokens) CreateLoginCode(ctx context.Context, name string) (string, time.Time, error) {
	code := newLoginCode()
	now := t.clock.Now()
	exp := now.Add(LoginCodeTTL)
	err := t.store.InTx(ctx, func(tx store.Tx) error {
		u, err := tx.UserGetByName(ctx, name)
		if err != nil {
			return err
		}
		if u.Disabled {
			return ErrUserDisabled
		}
		if _, err := tx.LoginCodeDeleteExpired(ctx, now); err != nil {
			return err
		}
		return tx.LoginCodeInsert(ctx, store.LoginCodeInsertParams{Hash: Hash(code), UserID: u.ID, ExpiresAt: exp, Now: now})
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("create a login code for %q: %w", name, err)
	}
	return code, exp, nil
}

// ExchangeLoginCode uses up a login code and returns its user. An unknown,
// used or expired code, or one of a disabled user, is ErrLoginCodeInvalid.
func (t *Tokens) ExchangeLoginCode(ctx context.Context, code string) (store.User, error) {
	code = strings.TrimSpace(code)
	if !strings.HasPrefix(code, LoginCodePrefix) || len(code) > 512 {
		return store.User{}, ErrLoginCodeInvalid
	}
	var u store.User
	err := t.store.InTx(ctx, func(tx store.Tx) error {
		id, err := tx.LoginCodeTake(ctx, Hash(code), t.clock.Now())
		if err != nil {
			return err
		}
		if u, err = tx.UserGet(ctx, id); err != nil {
			return err
		}
		if u.Disabled {
			return store.ErrNotFound
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return store.User{}, ErrLoginCodeInvalid
	}
	if err != nil {
		return store.User{}, fmt.Errorf("exchange a login code: %w", err)
	}
	return u, nil
}
