package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/chatd/chatd/store"
)

// maxCachedStmts bounds a pool's statement cache. The store's statements
// are a fixed set plus the dynamic ones (patches, IN lists), whose texts
// vary: beyond the bound a statement is prepared for its one use, as
// without a cache.
const maxCachedStmts = 512

// stmtCache keeps one prepared statement per query text for a pool, so a
// statement is parsed once per connection rather than on every call
// (modernc.org/sqlite parses each unprepared query anew, and parsing was
// the largest single cost of a chat turn). database/sql prepares a cached
// statement lazily on every connection that runs it and, inside a
// transaction, reuses the connection's (Tx.StmtContext).
type stmtCache struct {
	db *sql.DB

	mu     sync.Mutex
	stmts  map[string]*sql.Stmt
	closed bool
	// prepares counts the statements prepared into the cache (tests).
	prepares int
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, stmts: map[string]*sql.Stmt{}}
}

// get returns the cached statement for query, or nil when there is none
// yet (the caller runs query unprepared and hands it to prepare after its
// transaction) or the cache is full.
func (c *stmtCache) get(query string) (s *sql.Stmt, wanted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.stmts[query]; ok {
		return s, false
	}
	return nil, !c.closed && len(c.stmts) < maxCachedStmts
}

// prepare caches the statements of queries that are not cached yet. It
// runs after a transaction, never inside one: preparing takes a
// connection of the pool, and inside a transaction on the one writer
// connection that would wait for itself. A query that fails to prepare is
// left uncached.
func (c *stmtCache) prepare(ctx context.Context, queries []string) {
	for _, q := range queries {
		c.mu.Lock()
		_, done := c.stmts[q]
		full := c.closed || len(c.stmts) >= maxCachedStmts
		c.mu.Unlock()
		if done || full {
			continue
		}
		s, err := c.db.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		c.mu.Lock()
		if _, dup := c.stmts[q]; dup || c.closed {
			c.mu.Unlock()
			_ = s.Close()
			continue
		}
		c.stmts[q] = s
		c.prepares++
		c.mu.Unlock()
	}
}

// close closes every cached statement; later gets prepare nothing.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for q, s := range c.stmts {
		errs = append(errs, s.Close())
		delete(c.stmts, q)
	}
	return errors.Join(errs...)
}

// sqlTx is a transaction whose statements come from its pool's cache.
type sqlTx struct {
	tx    *sql.Tx
	cache *stmtCache
	// missed lists the queries it ran unprepared that the cache wants.
	missed []string
	// detached: a batched transaction (batch.go), whose statements do not
	// end with their caller's context.
	detached bool
	// writes counts the statements run that may have written
	// (txcache.go).
	writes store.WriteCounts
}

// use is the context a statement runs with.
func (t *sqlTx) use(ctx context.Context) context.Context {
	if t.detached {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// stmt is query's cached statement bound to this transaction (nil: run
// query unprepared, noting it for the cache).
func (t *sqlTx) stmt(ctx context.Context, query string) *sql.Stmt {
	s, wanted := t.cache.get(query)
	if s == nil {
		if wanted {
			t.missed = append(t.missed, query)
		}
		return nil
	}
	return t.tx.StmtContext(ctx, s)
}

// ExecContext is sql.Tx.ExecContext through the cache.
func (t *sqlTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx = t.use(ctx)
	t.writes.Note(query)
	if s := t.stmt(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

// QueryContext is sql.Tx.QueryContext through the cache.
func (t *sqlTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx = t.use(ctx)
	t.writes.Note(query)
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

// QueryRowContext is sql.Tx.QueryRowContext through the cache.
func (t *sqlTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	ctx = t.use(ctx)
	t.writes.Note(query)
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}
