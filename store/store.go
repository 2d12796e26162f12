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
	"errors"
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
// names put the noun first so they group when sorted; each noun's methods
// are declared in the file of its name (chats.go: ChatReader). Every
// operation that returns a slice (here and in Tx) returns a non-nil, empty
// one when nothing matches, on every store.
type Reader interface {
	ProjectReader
	VersionReader
	UsageReader
	ScheduleReader
	WebhookReader
	ElicitationReader
	MCPTokenReader
	MCPUserTokenReader
	SystemPromptReader
	ImportReader

	ChatReader
	SearchReader
	MessageReader
	QueueReader
	HeartbeatReader
	UserReader
	DurableReader
	MCPServerReader
	// Providers and model configs (app/modelconfig).
	ModelConfigReader
	FileReader
}

// Tx is the set of data operations available inside a write transaction:
// every read of Reader plus the writes, declared per noun as Reader's are
// (chats.go: ChatTx). Only app/chatstate (and the stores' own tests) hold
// one.
type Tx interface {
	Reader
	ProjectTx
	UsageTx
	ScheduleTx
	WebhookTx
	ElicitationTx
	MCPTokenTx
	MCPUserTokenTx
	SystemPromptTx
	ImportTx
	// Providers and model configs: only app/modelconfig writes them.
	ModelConfigWriter

	ChatTx
	MessageTx
	QueueTx
	HeartbeatTx
	UserTx
	DurableTx
	MCPServerTx
	FileTx
}

// Opt is an optional field of a patch: only set fields are written.
type Opt[T any] struct {
	Value T
	Set   bool
}

// Some returns a set Opt.
func Some[T any](v T) Opt[T] { return Opt[T]{Value: v, Set: true} }

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
