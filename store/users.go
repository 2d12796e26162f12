package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// UserReader reads users, tokens and replica records. It is part of Reader.
type UserReader interface {
	// ReplicaGet reads a replica by its worker id.
	ReplicaGet(ctx context.Context, workerID uuid.UUID) (Replica, error)

	// UserGet reads a user by id.
	UserGet(ctx context.Context, id uuid.UUID) (User, error)

	// UserGetByName reads a user by name.
	UserGetByName(ctx context.Context, name string) (User, error)

	// UserCount counts users.
	UserCount(ctx context.Context) (int64, error)

	// UserList lists every user, oldest first.
	UserList(ctx context.Context) ([]User, error)

	// TokenGetByHash finds a token by its hash.
	TokenGetByHash(ctx context.Context, hash []byte) (Token, error)

	// TokenGet reads a token by id; its Hash is left nil.
	TokenGet(ctx context.Context, id uuid.UUID) (Token, error)

	// TokenList lists tokens oldest first (all users', or one user's when
	// p.UserID is set). Hashes are never read: Hash is nil.
	TokenList(ctx context.Context, p TokenListParams) ([]Token, error)
}

// UserTx writes users, login codes, tokens and replica records. It is
// part of Tx.
type UserTx interface {
	// ReplicaUpsert publishes a replica's relay address (several replicas
	// on Postgres: streams dial the replica that runs a chat). The record
	// is stamped by the lease clock: r.UpdatedAt, the caller's time, or the
	// database's (see LeaseWindow).
	ReplicaUpsert(ctx context.Context, r Replica) error

	// ReplicaDelete removes a replica's record.
	ReplicaDelete(ctx context.Context, workerID uuid.UUID) error

	// UserInsert creates a user.
	UserInsert(ctx context.Context, p UserInsertParams) (User, error)

	// UserSetAdmin grants or revokes admin.
	UserSetAdmin(ctx context.Context, id uuid.UUID, admin bool) error

	// UserLock takes the user's row lock until the transaction ends (FOR
	// NO KEY UPDATE on Postgres; SQLite's writer lock already serialises), so
	// per-user quota checks see each other's writes. ErrNotFound when the
	// user does not exist.
	UserLock(ctx context.Context, id uuid.UUID) error

	// UserSetDisabled disables or enables a user (store.ErrNotFound when
	// there is none).
	UserSetDisabled(ctx context.Context, id uuid.UUID, disabled bool) error

	// UserLockEnabledAdmins locks the rows of the enabled admins until the
	// transaction ends (Postgres FOR UPDATE; SQLite's writer lock) and
	// returns their ids, so "not the last admin" checks are serialised.
	UserLockEnabledAdmins(ctx context.Context) ([]uuid.UUID, error)

	// LoginCodeInsert stores a login code's hash.
	LoginCodeInsert(ctx context.Context, p LoginCodeInsertParams) error

	// LoginCodeTake deletes the login code with this hash and returns its
	// user when it has not expired at now; otherwise (unknown, used,
	// expired) store.ErrNotFound and nothing changes.
	LoginCodeTake(ctx context.Context, hash []byte, now time.Time) (uuid.UUID, error)

	// LoginCodeDeleteExpired removes the codes expired at now.
	LoginCodeDeleteExpired(ctx context.Context, now time.Time) (int64, error)

	// TokenInsert stores a token's hash; the clear token never reaches the store.
	TokenInsert(ctx context.Context, p TokenInsertParams) (Token, error)

	// TokenDeleteByHash removes one token and reports whether it existed.
	TokenDeleteByHash(ctx context.Context, hash []byte) (int64, error)

	// TokenDeleteForUser removes all of a user's tokens and reports how many.
	TokenDeleteForUser(ctx context.Context, userID uuid.UUID) (int64, error)

	// TokenDelete removes one token by id and reports whether it existed.
	TokenDelete(ctx context.Context, id uuid.UUID) (int64, error)

	// TokenTouch records a use: last_used_at = at, unless a later use is
	// already recorded. It reports whether the row changed.
	TokenTouch(ctx context.Context, id uuid.UUID, at time.Time) (bool, error)

	// TokenDeleteExpired removes tokens whose expires_at is at or before
	// now and, when sessionIdleBefore is not zero, session tokens last used
	// (or, never used, created) at or before it. It reports how many went.
	TokenDeleteExpired(ctx context.Context, now, sessionIdleBefore time.Time) (int64, error)
}

// Replica is where a worker's parts endpoint can be reached.
type Replica struct {
	WorkerID uuid.UUID
	Address  string // base URL, e.g. http://10.0.0.5:8080
	// TokenHash is the hex SHA-256 of the token this replica presents on
	// the others' parts endpoints; the token itself is never stored.
	TokenHash string
	// UpdatedAt is when the record was last refreshed, by the lease clock
	// (see LeaseWindow).
	UpdatedAt time.Time
}

// User is a local chatd user.
type User struct {
	ID        uuid.UUID
	Name      string
	Admin     bool
	Disabled  bool // a disabled user's tokens and sessions do not authenticate
	CreatedAt time.Time
}

// LoginCodeInsertParams store a login code's hash.
type LoginCodeInsertParams struct {
	Hash      []byte
	UserID    uuid.UUID
	ExpiresAt time.Time
	Now       time.Time
}

// UserInsertParams create a user.
type UserInsertParams struct {
	ID    uuid.UUID
	Name  string
	Admin bool
	Now   time.Time
}

// TokenKind says how a token was made, which decides how it expires.
type TokenKind string

// Token kinds.
const (
	// TokenKindAPI is made by `chatd token create` (or the first start);
	// it expires only at its ExpiresAt, if it has one.
	TokenKindAPI TokenKind = "api"
	// TokenKindSession is the web UI's login session; it expires when it
	// has not been used for the session TTL.
	TokenKindSession TokenKind = "session"
	// TokenKindBootstrap is the admin's CHATD_BOOTSTRAP_TOKEN; a start with
	// a different bootstrap token deletes it.
	TokenKindBootstrap TokenKind = "bootstrap"
)

// Token is an API token; only its hash is stored.
type Token struct {
	ID         uuid.UUID
	UserID     uuid.UUID
	Hash       []byte // nil when read by TokenGet or TokenList
	Name       string // the label
	Kind       TokenKind
	CreatedAt  time.Time
	ExpiresAt  *time.Time // nil: no fixed expiry
	LastUsedAt *time.Time // nil: never used (uses are recorded coarsely)
}

// TokenInsertParams store a token hash. An empty Kind is TokenKindAPI.
type TokenInsertParams struct {
	ID        uuid.UUID
	UserID    uuid.UUID
	Hash      []byte
	Name      string
	Kind      TokenKind
	ExpiresAt *time.Time
	Now       time.Time
}

// TokenListParams filter TokenList.
type TokenListParams struct {
	// UserID, when valid, lists only that user's tokens.
	UserID uuid.NullUUID
}
