// Package store declares the storage contract chatd runs on: a Store that
// opens transactions, a Tx with noun-first data operations, the row types and
// the sentinel errors. Concrete stores live in store/sqlite and store/postgres;
// both pass store/storetest unchanged.
//
// Stores provide data operations and the version bookkeeping of the
// architecture spec (revisions, history_version, queue_version,
// retry_state_version). They never decide whether a state transition is
// allowed: that is app/chatstate's job.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Sentinel errors. Store packages translate driver errors into these so no
// caller ever inspects a driver error.
var (
	// ErrNotFound: the row does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: a unique constraint was violated.
	ErrConflict = errors.New("store: conflict")
	// ErrForeignKey: a referenced row does not exist.
	ErrForeignKey = errors.New("store: foreign key violation")
	// ErrInvariant: a database-level invariant (trigger or check) refused the write.
	ErrInvariant = errors.New("store: invariant violated")
	// ErrReadOnly: a write was attempted inside a read transaction.
	ErrReadOnly = errors.New("store: read-only transaction")
	// ErrLocked: another process holds the database (SQLite single-owner rule).
	ErrLocked = errors.New("store: database is in use by another process")
	// ErrUnavailable: the database could not be reached or timed out.
	ErrUnavailable = errors.New("store: unavailable")
	// ErrStorageFull: the database could not write because its disk (or
	// quota) is full; nothing of the failed write was kept.
	ErrStorageFull = errors.New("store: storage full")
)

// ReadStore is the read-only half of a Store: what the packages that never
// write chat state (the worker, the stream) hold. Their writes go through
// app/chatstate, which holds the Store.
type ReadStore interface {
	// ReadTx runs fn in a read-only transaction that sees one snapshot.
	ReadTx(ctx context.Context, fn func(Reader) error) error
	// Dialect names the database: "sqlite" or "postgres".
	Dialect() string
}

// Store opens transactions. Every chat mutation runs in one write
// transaction; every consistent multi-query read runs in one read transaction.
type Store interface {
	ReadStore
	// InTx runs fn in a write transaction and commits when fn returns nil.
	// On SQLite the transaction is BEGIN IMMEDIATE on the single writer
	// connection; on Postgres rows are locked explicitly with ChatLock.
	InTx(ctx context.Context, fn func(Tx) error) error
	// Close releases connections and the process lock.
	Close() error
}

// Reader is the read-only half of a transaction: what ReadTx hands out and
// what callers outside app/chatstate see of a write transaction. Method
// names put the noun first so they group when sorted. Every operation that
// returns a slice (here and in Tx) returns a non-nil, empty one when nothing
// matches, on every store.
type Reader interface {
	ProjectReader
	VersionReader
	UsageReader
	ScheduleReader
	WebhookReader
	ElicitationReader
	MCPTokenReader

	// ChatGet reads a chat without locking it.
	ChatGet(ctx context.Context, id uuid.UUID) (Chat, error)

	// ChatGetMany reads the chats with the given ids, in no particular order;
	// missing ids are skipped.
	ChatGetMany(ctx context.Context, ids []uuid.UUID) ([]Chat, error)

	// ChatDescendants returns every chat whose root is rootID (not the root itself).
	ChatDescendants(ctx context.Context, rootID uuid.UUID) ([]Chat, error)

	// ChatList lists chats for the listing endpoint, newest first.
	ChatList(ctx context.Context, p ChatListParams) ([]Chat, error)

	// ChatSearchHits returns, for each of chatIDs with a searchable
	// message matching query (see ChatListParams.Query), its oldest such
	// message; chats without one are left out, in no particular order.
	ChatSearchHits(ctx context.Context, chatIDs []uuid.UUID, query string) ([]SearchHit, error)

	// ChatCountByOwner counts the chats a user owns, archived and
	// subagent chats included (the per-user chat quota).
	ChatCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error)

	// MessageGet reads one message of a chat.
	MessageGet(ctx context.Context, chatID uuid.UUID, id int64) (Message, error)

	// MessageList returns a chat's messages in id order.
	MessageList(ctx context.Context, chatID uuid.UUID, p MessageListParams) ([]Message, error)

	// QueueList returns the queue in position order.
	QueueList(ctx context.Context, chatID uuid.UUID) ([]QueuedMessage, error)

	// QueueGet reads one queued message of a chat.
	QueueGet(ctx context.Context, chatID uuid.UUID, id int64) (QueuedMessage, error)

	// QueueCount counts a chat's queued messages.
	QueueCount(ctx context.Context, chatID uuid.UUID) (int64, error)

	// HeartbeatAt reads a lease's last heartbeat (ErrNotFound when none).
	// It is the stamp as written (see LeaseWindow for which clock wrote
	// it); whether the lease is fresh is HeartbeatFresh's question.
	HeartbeatAt(ctx context.Context, chatID, runnerID uuid.UUID) (time.Time, error)

	// HeartbeatFresh reports whether the lease of (chat, runner) has a
	// heartbeat inside w (false when there is no heartbeat row).
	HeartbeatFresh(ctx context.Context, chatID, runnerID uuid.UUID, w LeaseWindow) (bool, error)

	// HeartbeatOldestForeign reports how long, by the lease clock (see
	// LeaseWindow), until the oldest fresh lease that a worker other than
	// p.Self holds on an unarchived runnable chat goes stale: then a chat
	// needs taking over. It reports false when there is none or without
	// p.Leases.
	HeartbeatOldestForeign(ctx context.Context, p AcquirableParams) (time.Duration, bool, error)

	// ChatListAcquirable lists unarchived chats in a runnable status
	// (running, interrupting, requires_action) that no live worker owns, in
	// admission order: requires_action first (it takes no slot), then the
	// chats of the users holding the fewest slots (ChatCountOwnedByOwner),
	// then the oldest (updated_at, id).
	ChatListAcquirable(ctx context.Context, p AcquirableParams) ([]Chat, error)

	// ChatListByWorker lists the ids of the chats whose worker_id is
	// workerID, whatever their state, oldest first (created_at, id): what
	// a worker holds when it hands its chats over on shutdown.
	ChatListByWorker(ctx context.Context, workerID uuid.UUID) ([]uuid.UUID, error)

	// ChatListArchivable lists the root chats the auto-archive loop may
	// archive (spec: "Auto-archive loop"), oldest first (created_at, id):
	// unarchived, unpinned, not running, interrupting or requires_action,
	// created before p.Cutoff, no descendant running, interrupting or
	// requires_action, and no non-deleted message in the family created at
	// or after p.Cutoff.
	ChatListArchivable(ctx context.Context, p ArchivableParams) ([]Chat, error)

	// MessageNewestInFamily reads when the newest non-deleted message of a
	// root chat and its descendants was created; false when there is none.
	MessageNewestInFamily(ctx context.Context, rootID uuid.UUID) (time.Time, bool, error)

	// ChatCountOwned counts the chats that hold a slot of the concurrent
	// agent limiter, split into root chats and subagent (child) chats: a
	// live owner holds them and they are not in requires_action (a chat
	// waiting on a person or an operator keeps its owner, not its slot).
	ChatCountOwned(ctx context.Context, p AcquirableParams) (roots, subagents int64, err error)

	// ChatCountOwnedByOwner counts the same chats as ChatCountOwned, both
	// pools together, per owning user (users holding none are absent).
	ChatCountOwnedByOwner(ctx context.Context, p AcquirableParams) (map[uuid.UUID]int64, error)

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

	// InvocationGet reads a claim (ErrNotFound when none).
	InvocationGet(ctx context.Context, requestID uuid.UUID) (Invocation, error)

	// JournalGet reads a tool call's entry (ErrNotFound when none).
	JournalGet(ctx context.Context, chatID uuid.UUID, toolCallID string) (JournalEntry, error)

	// JournalList lists a chat's entries in start order; with requestID set,
	// only that request's.
	JournalList(ctx context.Context, chatID uuid.UUID, requestID uuid.NullUUID) ([]JournalEntry, error)

	// MCPServerGet reads a stored MCP server (ErrNotFound when none).
	MCPServerGet(ctx context.Context, id uuid.UUID) (MCPServer, error)

	// MCPServerList lists the stored MCP servers by name.
	MCPServerList(ctx context.Context) ([]MCPServer, error)
	// Providers and model configs (app/modelconfig).
	ModelConfigReader

	// FileGet reads an uploaded file with its content.
	FileGet(ctx context.Context, id uuid.UUID) (File, error)

	// FileListByChat lists the files a chat holds, earliest uploaded first
	// (created_at, id), without their content.
	FileListByChat(ctx context.Context, chatID uuid.UUID) ([]File, error)

	// FileBytesByOwner sums the sizes of a user's files (the upload quota).
	FileBytesByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error)

	// FileCountByOwner counts a user's files (the per-user cap).
	FileCountByOwner(ctx context.Context, ownerID uuid.UUID) (int64, error)
}

// Tx is the set of data operations available inside a write transaction:
// every read of Reader plus the writes. Only app/chatstate (and the stores'
// own tests) hold one.
type Tx interface {
	Reader
	ProjectTx
	UsageTx
	ScheduleTx
	WebhookTx
	ElicitationTx
	MCPTokenTx
	// Providers and model configs: only app/modelconfig writes them.
	ModelConfigWriter

	// ChatInsert creates a chat with snapshot_version = 1 and every other
	// version at 0.
	ChatInsert(ctx context.Context, p ChatInsertParams) (Chat, error)

	// ChatLock takes the chat's row lock (FOR UPDATE on Postgres; the SQLite
	// write transaction already holds the database write lock) and returns it.
	ChatLock(ctx context.Context, id uuid.UUID) (Chat, error)

	// ChatLockShared takes a shared row lock (FOR SHARE on Postgres).
	ChatLockShared(ctx context.Context, id uuid.UUID) (Chat, error)

	// ChatBumpSnapshot advances snapshot_version by one and returns the new value.
	ChatBumpSnapshot(ctx context.Context, id uuid.UUID) (int64, error)

	// ChatUpdate writes the fields set in p and returns the row as the
	// triggers left it.
	ChatUpdate(ctx context.Context, id uuid.UUID, p ChatPatch) (Chat, error)

	// ChatIncrementGenerationAttempt adds one to generation_attempt.
	ChatIncrementGenerationAttempt(ctx context.Context, id uuid.UUID) (Chat, error)

	// ChatTouchHistory records a history change without a message write:
	// history_version = snapshot_version and generation_attempt = 0
	// (RequestCompaction needs a fresh episode without inserting history).
	ChatTouchHistory(ctx context.Context, id uuid.UUID) (Chat, error)

	// ChatDelete removes a chat; messages, queue, heartbeats and the tool
	// journal cascade. Invocations stay: a claim outlives its chat.
	ChatDelete(ctx context.Context, id uuid.UUID) error

	// MessageInsert appends a message. The database assigns id and revision.
	MessageInsert(ctx context.Context, p MessageInsertParams) (Message, error)

	// MessageUpdate writes the fields set in p; the revision trigger decides
	// whether history changed.
	MessageUpdate(ctx context.Context, chatID uuid.UUID, id int64, p MessagePatch) (Message, error)

	// MessageSoftDeleteFrom marks every non-deleted message with id >= fromID
	// as deleted and returns their ids.
	MessageSoftDeleteFrom(ctx context.Context, chatID uuid.UUID, fromID int64) ([]int64, error)

	// QueueInsert appends a queued message at the tail.
	QueueInsert(ctx context.Context, p QueueInsertParams) (QueuedMessage, error)

	// QueueSetPosition moves a queued message to position.
	QueueSetPosition(ctx context.Context, chatID uuid.UUID, id int64, position int64) error

	// QueueDelete removes one queued message and reports how many rows went.
	QueueDelete(ctx context.Context, chatID uuid.UUID, id int64) (int64, error)

	// QueueDeleteAll empties a chat's queue and reports how many rows went.
	QueueDeleteAll(ctx context.Context, chatID uuid.UUID) (int64, error)

	// HeartbeatInsert records a runner's lease on a chat (Acquire's initial
	// heartbeat), replacing an existing row for the same pair. The
	// heartbeat is stamped by the lease clock: now, the caller's time, or
	// the database's (see LeaseWindow).
	HeartbeatInsert(ctx context.Context, chatID, runnerID uuid.UUID, now time.Time) error

	// HeartbeatRenew stamps a new heartbeat (by the lease clock, as
	// HeartbeatInsert) on the given leases that are still fresh in w and
	// whose chat is still owned by that runner; it returns the renewed
	// ones. A stale lease is never revived.
	HeartbeatRenew(ctx context.Context, leases []Lease, w LeaseWindow) ([]Lease, error)

	// HeartbeatDeleteStale removes the leases whose heartbeat is older than
	// w allows (strictly older than w.Timeout).
	HeartbeatDeleteStale(ctx context.Context, w LeaseWindow) (int64, error)

	// AdmissionLock serialises capacity admission until the transaction
	// ends (a Postgres advisory lock; SQLite's writer lock already does).
	AdmissionLock(ctx context.Context) error

	// AdmissionTryLock takes the admission lock only if no other
	// transaction holds it, without waiting, and reports whether it did:
	// for a transaction that already holds chat row locks, which must not
	// wait for the admission lock (an acquisition takes it first, then the
	// chat).
	AdmissionTryLock(ctx context.Context) (bool, error)

	// ReplicaUpsert publishes a replica's relay address (several replicas
	// on Postgres: streams dial the replica that runs a chat). The record
	// is stamped by the lease clock: r.UpdatedAt, the caller's time, or the
	// database's (see LeaseWindow).
	ReplicaUpsert(ctx context.Context, r Replica) error

	// ReplicaDelete removes a replica's record.
	ReplicaDelete(ctx context.Context, workerID uuid.UUID) error

	// ReplicaTouch stamps a replica's record as refreshed (its worker does
	// on every heartbeat tick) by the lease clock, as HeartbeatInsert, and
	// reports whether the record exists.
	ReplicaTouch(ctx context.Context, workerID uuid.UUID, now time.Time) (bool, error)

	// ReplicaDeleteStale removes the records of replicas not refreshed for
	// longer than w allows (strictly older than w.Timeout): they are dead,
	// and nobody may dial them.
	ReplicaDeleteStale(ctx context.Context, w LeaseWindow) (int64, error)

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

	// InvocationInsert stores a new request claim; ErrConflict when the
	// request_id is already claimed.
	InvocationInsert(ctx context.Context, inv Invocation) error

	// InvocationUpdate writes the set fields of p and updated_at, and
	// returns the row (ErrNotFound when none).
	InvocationUpdate(ctx context.Context, requestID uuid.UUID, p InvocationPatch) (Invocation, error)

	// JournalStart records that a tool call is about to run; ErrConflict
	// when the call already has an entry. An empty State is
	// JournalStarted and a zero Attempts is 1.
	JournalStart(ctx context.Context, e JournalEntry) error

	// JournalUpdate writes the set fields of p and returns the entry
	// (ErrNotFound when none).
	JournalUpdate(ctx context.Context, chatID uuid.UUID, toolCallID string, p JournalPatch) (JournalEntry, error)

	// MCPServerInsert stores an MCP server; ErrConflict when its id or
	// name is taken.
	MCPServerInsert(ctx context.Context, p MCPServer) (MCPServer, error)

	// MCPServerUpdate replaces a stored server's enabled, transport, spec
	// and secrets and sets updated_at to p.UpdatedAt; id, name, source and
	// created_at stay. ErrNotFound when none.
	MCPServerUpdate(ctx context.Context, p MCPServer) (MCPServer, error)

	// MCPServerDelete removes a stored server and reports whether it existed.
	MCPServerDelete(ctx context.Context, id uuid.UUID) (int64, error)

	// FileInsert stores an uploaded file, linked to no chat.
	FileInsert(ctx context.Context, p FileInsertParams) (File, error)

	// FileLink links a file to a chat at now (linked_at keeps the first
	// link's time); ErrNotFound when the file does not exist.
	FileLink(ctx context.Context, id, chatID uuid.UUID, now time.Time) error

	// FileDelete removes one file and reports whether it existed.
	FileDelete(ctx context.Context, id uuid.UUID) (int64, error)

	// FileDeleteUnlinked removes the files no chat holds that were uploaded
	// before cutoff, and reports how many went.
	FileDeleteUnlinked(ctx context.Context, cutoff time.Time) (int64, error)
}

// ChatStatus is the chats.status column.
type ChatStatus string

// The five statuses of the spec.
const (
	ChatStatusWaiting        ChatStatus = "waiting"
	ChatStatusRunning        ChatStatus = "running"
	ChatStatusInterrupting   ChatStatus = "interrupting"
	ChatStatusRequiresAction ChatStatus = "requires_action"
	ChatStatusError          ChatStatus = "error"
)

// AllChatStatuses lists every status, for validation and tests.
var AllChatStatuses = []ChatStatus{
	ChatStatusWaiting, ChatStatusRunning, ChatStatusInterrupting,
	ChatStatusRequiresAction, ChatStatusError,
}

// TitleSource ranks title writes: fallback < generated < user.
type TitleSource string

// Title sources in rank order.
const (
	TitleSourceFallback  TitleSource = "fallback"
	TitleSourceGenerated TitleSource = "generated"
	TitleSourceUser      TitleSource = "user"
)

// Rank orders title sources; a write applies when its rank is >= the current one.
func (s TitleSource) Rank() int {
	switch s {
	case TitleSourceFallback:
		return 1
	case TitleSourceGenerated:
		return 2
	case TitleSourceUser:
		return 3
	}
	return 0
}

// Chat is one row of chats.
type Chat struct {
	ID                       uuid.UUID
	OwnerID                  uuid.UUID
	ParentChatID             uuid.NullUUID
	RootChatID               uuid.NullUUID
	Title                    string
	TitleSource              TitleSource
	TitleUpdatedAt           time.Time
	Status                   ChatStatus
	Archived                 bool
	WorkerID                 uuid.NullUUID
	RunnerID                 uuid.NullUUID
	LastError                json.RawMessage // nil when NULL
	RetryState               json.RawMessage // nil when NULL
	SnapshotVersion          int64
	HistoryVersion           int64
	QueueVersion             int64
	RetryStateVersion        int64
	GenerationAttempt        int64
	RequiresActionDeadlineAt *time.Time
	CompactionRequestedAt    *time.Time
	Labels                   map[string]string
	PinOrder                 int64
	LastModelConfigID        uuid.NullUUID
	LastReasoningEffort      string
	DynamicTools             json.RawMessage // nil when NULL
	// MCPServerIDs restricts the chat's MCP servers: nil (NULL) means every
	// configured server, an empty non-nil slice none.
	MCPServerIDs []uuid.UUID
	// ToolApproval is the chat's own tool approval policy (ApprovalNever,
	// ApprovalEffectful or ApprovalAlways); it only ever tightens the
	// configured one.
	ToolApproval string
	// ToolApprovals is the approval round of the tool calls the chat waits
	// on, a JSON object (nil when NULL); app/chatstate owns its shape.
	ToolApprovals json.RawMessage
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// ProjectID is the project the chat is in, if any.
	ProjectID uuid.NullUUID
}

// Root returns the id of the chat's family root (itself for a root chat).
func (c Chat) Root() uuid.UUID {
	if c.RootChatID.Valid {
		return c.RootChatID.UUID
	}
	return c.ID
}

// ChatInsertParams are the columns a new chat is created with.
type ChatInsertParams struct {
	ID                  uuid.UUID
	OwnerID             uuid.UUID
	ParentChatID        uuid.NullUUID
	RootChatID          uuid.NullUUID
	Title               string
	TitleSource         TitleSource
	Status              ChatStatus
	Labels              map[string]string
	LastModelConfigID   uuid.NullUUID
	LastReasoningEffort string
	DynamicTools        json.RawMessage
	// MCPServerIDs: nil is every configured MCP server, empty none.
	MCPServerIDs []uuid.UUID
	// ToolApproval is the chat's approval policy (ApprovalNever when empty).
	ToolApproval string
	Now          time.Time
	// ProjectID puts the chat in a project.
	ProjectID uuid.NullUUID
}

// Opt is an optional field of a patch: only set fields are written.
type Opt[T any] struct {
	Value T
	Set   bool
}

// Some returns a set Opt.
func Some[T any](v T) Opt[T] { return Opt[T]{Value: v, Set: true} }

// ChatPatch names the chat columns an update writes. The version columns are
// not here: snapshot_version moves with ChatBumpSnapshot, generation_attempt
// with ChatIncrementGenerationAttempt, and the others only through triggers.
type ChatPatch struct {
	Status                   Opt[ChatStatus]
	Archived                 Opt[bool]
	WorkerID                 Opt[uuid.NullUUID]
	RunnerID                 Opt[uuid.NullUUID]
	LastError                Opt[json.RawMessage] // nil value writes NULL
	RetryState               Opt[json.RawMessage] // nil value writes NULL
	RequiresActionDeadlineAt Opt[*time.Time]
	CompactionRequestedAt    Opt[*time.Time]
	Title                    Opt[string]
	TitleSource              Opt[TitleSource]
	TitleUpdatedAt           Opt[time.Time]
	Labels                   Opt[map[string]string]
	PinOrder                 Opt[int64]
	LastModelConfigID        Opt[uuid.NullUUID]
	LastReasoningEffort      Opt[string]
	// MCPServerIDs: a nil value writes NULL (every configured server), an
	// empty one none.
	MCPServerIDs Opt[[]uuid.UUID]
	ToolApproval Opt[string]
	// ToolApprovals: a nil value writes NULL.
	ToolApprovals Opt[json.RawMessage]
	UpdatedAt     Opt[time.Time]
	// ProjectID moves the chat into a project (an unset value: out of any).
	ProjectID Opt[uuid.NullUUID]
}

// Lease is a runner's ownership of a chat.
type Lease struct {
	ChatID   uuid.UUID
	RunnerID uuid.UUID
}

// LeaseWindow says which heartbeats (and replica records) are fresh: those
// stamped less than Timeout ago by the lease clock, so a stamp exactly
// Timeout old is stale.
//
// The lease clock is the store's choice, and one clock stamps and judges
// every lease. A store that one process owns (SQLite) uses the caller's
// clock: Now, and the stamps the caller passes. A store that several
// replicas share (Postgres) ignores the caller's times and uses the
// database's, statement_timestamp(), for stamps and for judging alike, so
// clock skew between replicas can neither steal a live chat (a slow
// stamp looking stale to a fast clock) nor strand a dead one (a fast
// stamp looking fresh to a slow clock).
type LeaseWindow struct {
	Now     time.Time
	Timeout time.Duration
}

// AcquirableParams say which owners count as alive. With Leases set
// (several replicas), an owner is alive while its heartbeat row for
// (chat, runner) is fresh in that window. Without it (one process owns a
// SQLite file), only Self is alive: any other worker id belongs to a
// process that has died.
type AcquirableParams struct {
	Self   uuid.UUID
	Leases *LeaseWindow
	Limit  int // see ListLimit
}

// ArchivableParams select auto-archive candidates (ChatListArchivable).
type ArchivableParams struct {
	// Cutoff: a candidate was created, and its family last messaged,
	// before this instant.
	Cutoff time.Time
	Limit  int // see ListLimit
}

// Page sizes of the list operations that take a Limit (ChatList,
// ChatListAcquirable).
const (
	// DefaultListLimit is the page size when no limit is given.
	DefaultListLimit = 50
	// MaxListLimit caps any larger limit.
	MaxListLimit = 1000
)

// ListLimit is the page size every store uses for a requested limit n:
// DefaultListLimit when n <= 0, otherwise n capped at MaxListLimit.
func ListLimit(n int) int {
	if n <= 0 {
		return DefaultListLimit
	}
	return min(n, MaxListLimit)
}

// ChatListParams filter and page the chat listing.
type ChatListParams struct {
	OwnerID  uuid.NullUUID // unset lists every owner (admins)
	Archived *bool
	Query    string            // case-insensitive substring of the title or message text, see SearchIndexMinRunes
	Labels   map[string]string // every pair must match
	AfterID  uuid.NullUUID     // keyset: chats listed after this one
	Limit    int               // see ListLimit
	// ProjectID lists only the chats in this project.
	ProjectID uuid.NullUUID
}

// Search bounds. ChatListParams.Query matches a chat whose title, or the
// text parts of one of its searchable messages (user or assistant, not
// deleted, not model-only), contain it, case-insensitively. Terms of
// SearchIndexMinRunes or more characters are served by an index; shorter
// ones match titles by a scan and message text only within SearchShortScan.
const (
	// SearchIndexMinRunes is the shortest term the trigram indexes serve.
	SearchIndexMinRunes = 3
	// SearchShortScan bounds the scan of a shorter term: the message text
	// it sees is that of the newest SearchShortScan searchable messages of
	// the whole store.
	SearchShortScan = 2000
)

// SearchHit is a chat's message matching a search: the message and its
// searchable text (its text parts, one per line).
type SearchHit struct {
	ChatID    uuid.UUID
	MessageID int64
	Text      string
}

// ShortSearch reports whether q is too short for the trigram indexes.
func ShortSearch(q string) bool {
	return utf8.RuneCountInString(q) < SearchIndexMinRunes
}

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message visibilities: who sees a row. "model" rows go to the provider but
// not to people; "user" rows are shown but never sent to the provider.
const (
	VisibilityBoth  = "both"
	VisibilityUser  = "user"
	VisibilityModel = "model"
)

// Usage is the token accounting of one assistant message.
type Usage struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	ReasoningTokens     int64 `json:"reasoning_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_tokens"`
	CacheReadTokens     int64 `json:"cache_read_tokens"`
	ContextLimit        int64 `json:"context_limit"`
}

// Message is one row of chat_messages.
type Message struct {
	ID              int64
	ChatID          uuid.UUID
	Role            string
	Content         json.RawMessage // JSON array of parts
	Visibility      string
	Compressed      bool
	Deleted         bool
	Revision        int64
	QueuedMessageID *int64
	CreatedBy       uuid.NullUUID
	ModelConfigID   uuid.NullUUID
	ReasoningEffort string
	Usage           *Usage
	// RequestID links the user message of a durable request to its claim.
	RequestID uuid.NullUUID
	CreatedAt time.Time
	// ParentID, Pruned and SiblingIDs place the message in its chat's
	// tree of versions (see versions.go).
	ParentID   *int64
	Pruned     bool
	SiblingIDs []int64
}

// MessageInsertParams are the columns of a new message. Revision is
// assigned by the database; setting it is rejected by the store.
type MessageInsertParams struct {
	ChatID          uuid.UUID
	Role            string
	Content         json.RawMessage
	Visibility      string // defaults to VisibilityBoth
	Compressed      bool
	QueuedMessageID *int64
	CreatedBy       uuid.NullUUID
	ModelConfigID   uuid.NullUUID
	ReasoningEffort string
	Usage           *Usage
	RequestID       uuid.NullUUID
	Now             time.Time
}

// MessagePatch names the message columns an update writes.
type MessagePatch struct {
	Content    Opt[json.RawMessage]
	Visibility Opt[string]
	Compressed Opt[bool]
	Deleted    Opt[bool]
	// The model a turn asks for (a regenerate that names another).
	ModelConfigID   Opt[uuid.NullUUID]
	ReasoningEffort Opt[string]
}

// MessageListParams page a chat's messages.
type MessageListParams struct {
	IncludeDeleted bool
	// PeopleOnly skips model-only rows (what people see).
	PeopleOnly bool
	// RevisionAfter keeps rows with revision > this (0 = all).
	RevisionAfter int64
	AfterID       int64 // exclusive; 0 means from the start
	BeforeID      int64 // exclusive; 0 means to the end
	Limit         int   // 0 means no limit
	Descending    bool  // newest first (used with BeforeID for "load older")
}

// QueuedMessage is one row of chat_queued_messages.
type QueuedMessage struct {
	ID              int64
	ChatID          uuid.UUID
	Position        int64
	CreatedBy       uuid.NullUUID
	Content         json.RawMessage
	ModelConfigID   uuid.NullUUID
	ReasoningEffort string
	RequestID       uuid.NullUUID
	// HookContext is the lifecycle hook context the prompt enters history
	// with (app/chatstate's JSON array), nil when there is none.
	HookContext json.RawMessage
	CreatedAt   time.Time
}

// QueueInsertParams are the columns of a new queued message.
type QueueInsertParams struct {
	ChatID          uuid.UUID
	CreatedBy       uuid.NullUUID
	Content         json.RawMessage
	ModelConfigID   uuid.NullUUID
	ReasoningEffort string
	RequestID       uuid.NullUUID
	HookContext     json.RawMessage // nil: none
	Now             time.Time
}

// InvocationState is the invocations.state column: where a durable request
// is in its life. Which changes are allowed is app/chatstate's table.
type InvocationState string

// Invocation states of a durable request.
const (
	// InvocationAdmitted: the message is in history or queued; its turn
	// has not finished.
	InvocationAdmitted InvocationState = "admitted"
	// InvocationCompleted: the turn finished and its outcome is durable.
	InvocationCompleted InvocationState = "completed"
	// InvocationUnresolved: an effectful tool call of its turn was started
	// and never recorded as done; effects are unknown until reviewed.
	InvocationUnresolved InvocationState = "unresolved"
	// InvocationReconciled: an operator recorded an assessment.
	InvocationReconciled InvocationState = "reconciled"
)

// AllInvocationStates lists every invocation state, for validation and tests.
var AllInvocationStates = []InvocationState{
	InvocationAdmitted, InvocationCompleted, InvocationUnresolved, InvocationReconciled,
}

// Invocation is a durable request claim (spec: durable-messages).
type Invocation struct {
	RequestID     uuid.UUID
	CallerID      uuid.UUID
	ContentSHA256 string // hex SHA-256 of the message text
	// RequestSHA256 is the hex SHA-256 of the whole request's canonical
	// JSON (docs/API.md); empty on claims admitted before it existed.
	RequestSHA256 string
	Kind          string // "create_chat" or "send_message"
	ChatID        uuid.UUID
	AuditID       uuid.UUID
	State         InvocationState
	// MessageID is the request's user message once it is in history;
	// QueuedMessageID while it waits in the queue.
	MessageID       *int64
	QueuedMessageID *int64
	Response        json.RawMessage // the admission answer, replayed verbatim
	Outcome         json.RawMessage // set once the turn's result is durable
	Review          json.RawMessage // the operator's assessment
	CreatedAt       time.Time
	UpdatedAt       time.Time
	CompletedAt     *time.Time
}

// InvocationPatch names the invocation columns an update writes.
type InvocationPatch struct {
	State           Opt[InvocationState]
	MessageID       Opt[*int64]
	QueuedMessageID Opt[*int64]
	Response        Opt[json.RawMessage]
	Outcome         Opt[json.RawMessage]
	Review          Opt[json.RawMessage]
	CompletedAt     Opt[*time.Time]
	UpdatedAt       time.Time
}

// Effect classes of tools.
const (
	EffectPure       = "pure"
	EffectIdempotent = "idempotent"
	EffectEffectful  = "effectful"
)

// Tool approval policies (chats.tool_approval, the MCP config's approval
// keys, CHATD_TOOL_APPROVAL), loosest first: never asks; effectful asks
// for calls of effectful tools; always asks for every call.
const (
	ApprovalNever     = "never"
	ApprovalEffectful = "effectful"
	ApprovalAlways    = "always"
)

// AllApprovalPolicies lists the approval policies, loosest first.
var AllApprovalPolicies = []string{ApprovalNever, ApprovalEffectful, ApprovalAlways}

// JournalState is the tool_journal.state column: where a server-side tool
// call is in its life. Which changes are allowed is app/chatstate's table.
type JournalState string

// Journal states of a tool call.
const (
	// JournalStarted: the call is about to run or running (or a crash
	// interrupted it).
	JournalStarted JournalState = "started"
	// JournalCompleted: its result is durable in history.
	JournalCompleted JournalState = "completed"
	// JournalUnresolved: an effectful call that may have run before a
	// crash; its effects are unknown until reviewed.
	JournalUnresolved JournalState = "unresolved"
	// JournalReconciled: an operator recorded its result.
	JournalReconciled JournalState = "reconciled"
)

// AllJournalStates lists every journal state, for validation and tests.
var AllJournalStates = []JournalState{
	JournalStarted, JournalCompleted, JournalUnresolved, JournalReconciled,
}

// JournalEntry records one server-side tool call.
type JournalEntry struct {
	ChatID      uuid.UUID
	ToolCallID  string
	RequestID   uuid.NullUUID
	ToolName    string
	Effect      string
	Args        json.RawMessage
	State       JournalState
	Result      json.RawMessage
	IsError     bool
	Attempts    int64
	StartedAt   time.Time
	CompletedAt *time.Time
}

// JournalPatch names the journal columns an update writes.
type JournalPatch struct {
	State       Opt[JournalState]
	Result      Opt[json.RawMessage]
	IsError     Opt[bool]
	Attempts    Opt[int64]
	StartedAt   Opt[time.Time]
	CompletedAt Opt[*time.Time]
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

// MCP server sources (mcp_servers.source).
const (
	// MCPSourceDatabase: created through the API.
	MCPSourceDatabase = "database"
	// MCPSourceConfigFile: seeded from the MCP config file at start.
	MCPSourceConfigFile = "config_file"
)

// MCP server transports (mcp_servers.transport).
const (
	MCPTransportStdio = "stdio"
	MCPTransportHTTP  = "http"
)

// MCPServer is one stored MCP server (table mcp_servers). The store keeps
// Spec and Secrets as given: app/mcp decides what they hold.
type MCPServer struct {
	ID        uuid.UUID
	Name      string
	Source    string
	Enabled   bool
	Transport string
	// Spec is the server's non-secret settings, a JSON object.
	Spec json.RawMessage
	// Secrets is the sealed env and headers; nil when there are none.
	Secrets   []byte
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Provider types (AIProvider.Provider). ProviderDemo is the built-in
// offline model's; the API never creates one.
const (
	ProviderOpenAI       = "openai"
	ProviderOpenAICompat = "openai-compat"
	ProviderAnthropic    = "anthropic"
	ProviderDemo         = "demo"
)

// Sources of providers and model configs: made through the API, or from
// the environment at start.
const (
	SourceDatabase  = "database"
	SourceEnvPreset = "env_preset"
)

// AIProvider is an LLM provider configured at runtime. Only app/modelconfig
// writes it.
type AIProvider struct {
	ID          uuid.UUID
	Provider    string
	DisplayName string
	BaseURL     string
	// APIKeyCipher is the sealed API key (nil: none); the clear key never
	// reaches the store.
	APIKeyCipher []byte
	Enabled      bool
	Source       string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// ModelConfig is one model of a provider. Only app/modelconfig writes it.
type ModelConfig struct {
	ID           uuid.UUID
	AIProviderID uuid.UUID
	Model        string
	DisplayName  string
	Enabled      bool
	IsDefault    bool
	// ContextLimit is the context window in tokens (0: unknown).
	ContextLimit int64
	// CompressionThreshold is the percent of ContextLimit that triggers
	// compaction (0: the deployment's).
	CompressionThreshold int64
	// Options is the model_config JSON object (max_output_tokens,
	// reasoning_effort, use_responses_api).
	Options   json.RawMessage
	Source    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ModelConfigReader reads providers and model configs.
type ModelConfigReader interface {
	// AIProviderGet reads a provider.
	AIProviderGet(ctx context.Context, id uuid.UUID) (AIProvider, error)
	// AIProviderList lists the providers oldest first.
	AIProviderList(ctx context.Context) ([]AIProvider, error)
	// ModelConfigGet reads a model config.
	ModelConfigGet(ctx context.Context, id uuid.UUID) (ModelConfig, error)
	// ModelConfigList lists the model configs oldest first (created_at, id).
	ModelConfigList(ctx context.Context) ([]ModelConfig, error)
}

// ModelConfigWriter writes providers and model configs; app/modelconfig
// calls it after ModelConfigWriteLock.
type ModelConfigWriter interface {
	// ModelConfigWriteLock serializes model configuration writes until the
	// transaction ends (a Postgres advisory transaction lock; SQLite's one
	// writer already serializes).
	ModelConfigWriteLock(ctx context.Context) error
	// AIProviderInsert stores a provider (CreatedAt and UpdatedAt as given).
	AIProviderInsert(ctx context.Context, p AIProvider) (AIProvider, error)
	// AIProviderUpdate writes every field but ID, Source and CreatedAt.
	AIProviderUpdate(ctx context.Context, p AIProvider) (AIProvider, error)
	// AIProviderDelete removes a provider and its model configs and reports
	// whether it existed.
	AIProviderDelete(ctx context.Context, id uuid.UUID) (int64, error)
	// ModelConfigInsert stores a model config; a second config of the same
	// provider and model, or a second default, is ErrConflict.
	ModelConfigInsert(ctx context.Context, m ModelConfig) (ModelConfig, error)
	// ModelConfigUpdate writes every field but ID, Source and CreatedAt.
	ModelConfigUpdate(ctx context.Context, m ModelConfig) (ModelConfig, error)
	// ModelConfigDelete removes a model config and reports whether it existed.
	ModelConfigDelete(ctx context.Context, id uuid.UUID) (int64, error)
}
