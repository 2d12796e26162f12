package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/chatd/chatd/store"
)

// Group commit. SQLite has one writer, so write transactions run one
// after another anyway; each commit of synchronous=FULL is an fsync, and
// the fsyncs, not the statements, bound how many transactions a second the
// store takes. InTx therefore queues its function, and whoever finds no
// transaction in progress leads: it runs every function queued so far in
// one BEGIN IMMEDIATE transaction, each inside its own savepoint, and
// commits once. The others wait for that commit. Each caller still gets
// its own result: a function that fails is rolled back to its savepoint,
// alone, and nobody is answered before the commit that makes their writes
// durable has returned (a failed commit fails every member).
//
// Inside a batch the statements ignore the callers' cancellation (their
// context's values stay): an interrupted statement can roll back the whole
// SQLite transaction, and so the other members' work, so a caller's
// cancellation is honoured before its function starts and by the function
// itself, never in the middle of a statement.

// txReq is one InTx call waiting in the queue.
type txReq struct {
	ctx  context.Context
	fn   func(store.Tx) error
	wake chan wake // buffered to one
	// res is the outcome; set before wake is sent, or by the leader for
	// its own request. answered says it is set.
	res      txResult
	answered bool
}

// errGoexit answers the members of a batch whose leader's goroutine ended
// in one of their functions (runtime.Goexit, as a test's FailNow does):
// their transaction is rolled back and nobody waits forever.
var errGoexit = errors.New("store: a write transaction's function ended its goroutine (runtime.Goexit); the batch was rolled back")

// wake tells a waiting caller that its transaction is over, or that it
// leads the next batch.
type wake struct{ lead bool }

// txResult is what a caller's InTx returns: an error, or a panic of its
// function to re-raise on the caller's goroutine.
type txResult struct {
	err      error
	panicked bool
	panicVal any
}

func (r txResult) finish() error {
	if r.panicked {
		panic(r.panicVal)
	}
	return r.err
}

// batcher is the queue of write transactions and who leads it.
type batcher struct {
	mu      sync.Mutex
	queue   []*txReq
	leading bool
	// txs counts the transactions begun (tests).
	txs int
}

// inBatch runs fn as part of a batched write transaction (see above).
func (s *Store) inBatch(ctx context.Context, fn func(store.Tx) error) error {
	req := &txReq{ctx: ctx, fn: fn, wake: make(chan wake, 1)}
	b := &s.batch
	b.mu.Lock()
	b.queue = append(b.queue, req)
	lead := !b.leading
	b.leading = true
	b.mu.Unlock()
	if !lead {
		if w := <-req.wake; !w.lead {
			return req.res.finish()
		}
	}
	// Leading: run what is queued (this request included) as one batch,
	// then hand the lead to the first caller that queued meanwhile (also
	// when this goroutine ends inside a function: see errGoexit).
	b.mu.Lock()
	batch := b.queue
	b.queue = nil
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		if len(b.queue) > 0 {
			b.queue[0].wake <- wake{lead: true}
		} else {
			b.leading = false
		}
		b.mu.Unlock()
	}()
	s.runBatch(batch, req)
	return req.res.finish()
}

// runBatch runs the batch's functions in transactions until each has its
// result: normally one transaction; a member whose failure rolls back the
// whole SQLite transaction (a full disk, an I/O error) ends it, and the
// members after it run in the next one. self is the leader's own request,
// which is answered by its return rather than a wake.
func (s *Store) runBatch(batch []*txReq, self *txReq) {
	answer := func(r *txReq, res txResult) {
		r.res, r.answered = res, true
		if r != self {
			r.wake <- wake{}
		}
	}
	for len(batch) > 0 {
		batch = s.runTx(batch, answer)
	}
}

// runTx runs members of batch in one transaction and answers them; it
// returns the members it did not get to.
func (s *Store) runTx(batch []*txReq, answer func(*txReq, txResult)) []*txReq {
	// The transaction is the batch's, not one caller's: no caller's
	// cancellation may roll it back.
	raw, err := s.writer.BeginTx(context.Background(), nil)
	if err != nil {
		for _, r := range batch {
			answer(r, txResult{err: fmt.Errorf("begin: %w", translate(err))})
		}
		return nil
	}
	s.batch.mu.Lock()
	s.batch.txs++
	s.batch.mu.Unlock()
	finished := false
	defer func() {
		if finished {
			return
		}
		// A function ended this goroutine (runtime.Goexit): nothing of
		// the transaction is kept, and every member still waiting hears.
		_ = raw.Rollback()
		for _, r := range batch {
			if !r.answered {
				answer(r, txResult{err: errGoexit})
			}
		}
	}()
	t := &sqlTx{tx: raw, cache: s.writes, detached: true}
	exec := func(q string) error {
		_, err := t.ExecContext(context.Background(), q)
		return err
	}
	// A lone member needs no savepoint: its failure rolls back the whole
	// transaction, as without batching.
	alone := len(batch) == 1
	var done []*txReq // ran without error, answered at commit
	rest := []*txReq(nil)
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			answer(r, txResult{err: fmt.Errorf("begin: %w", err)})
			continue
		}
		if !alone {
			if err := exec("SAVEPOINT batch_member"); err != nil {
				rest = batch[i:]
				break
			}
		}
		res := call(r.fn, &tx{tx: t})
		if res.err == nil && !res.panicked {
			if alone {
				done = append(done, r)
				continue
			}
			if err := exec("RELEASE batch_member"); err == nil {
				done = append(done, r)
				continue
			}
			// The release failed: the transaction cannot be trusted.
			res = txResult{err: fmt.Errorf("release savepoint: %w", translate(err))}
		}
		if alone {
			_ = raw.Rollback()
			answer(r, res)
			s.writes.prepare(context.Background(), t.missed)
			finished = true
			return nil
		}
		answer(r, res)
		if err := rollbackMember(exec); err != nil {
			// SQLite rolled the whole transaction back (SQLITE_FULL,
			// an I/O error): the members that ran lost their work with
			// it, and the rest run in a new transaction.
			_ = raw.Rollback()
			for _, d := range done {
				answer(d, txResult{err: fmt.Errorf("batched write rolled back with another: %w", res.err)})
			}
			s.writes.prepare(context.Background(), t.missed)
			finished = true
			return batch[i+1:]
		}
	}
	if len(done) == 0 {
		_ = raw.Rollback()
	} else if err := s.commit(raw, t); err != nil {
		for _, d := range done {
			answer(d, txResult{err: err})
		}
		done = nil
	}
	for _, d := range done {
		answer(d, txResult{})
	}
	// The connection is free again: cache what ran unprepared.
	s.writes.prepare(context.Background(), t.missed)
	finished = true
	return rest
}

// commit indexes the messages left for search (when it is time, see
// flushSearch), then commits; a failure of either rolls everything back.
func (s *Store) commit(raw *sql.Tx, t *sqlTx) error {
	flush, err := s.flushSearch(t)
	if err == nil && flush {
		for _, q := range SearchIndexPending {
			if _, err = t.ExecContext(context.Background(), q); err != nil {
				break
			}
		}
	}
	if err != nil {
		_ = raw.Rollback()
		return fmt.Errorf("index messages for search: %w", translate(err))
	}
	if err := raw.Commit(); err != nil {
		return fmt.Errorf("commit: %w", translate(err))
	}
	return nil
}

// searchPendingFlush is how many messages a busy writer leaves pending
// for search before it indexes them.
const searchPendingFlush = 256

// flushSearch decides whether this commit indexes the pending messages:
// always when no other write transaction waits for the writer (so an idle
// store keeps the list empty), else once searchPendingFlush messages wait.
// A busy writer thus indexes many transactions' messages in one go (FTS5
// writes one index segment per flush, and merges them later), while search
// reads the pending ones directly (search.go).
func (s *Store) flushSearch(t *sqlTx) (bool, error) {
	s.batch.mu.Lock()
	idle := len(s.batch.queue) == 0
	s.batch.mu.Unlock()
	if idle {
		return true, nil
	}
	var n int
	err := t.QueryRowContext(context.Background(),
		`SELECT count(*) FROM (SELECT 1 FROM chat_message_fts_pending LIMIT `+strconv.Itoa(searchPendingFlush)+`)`).Scan(&n)
	return n >= searchPendingFlush, err
}

// SearchIndexPending indexes for search the messages that writes listed
// in chat_message_fts_pending (migration 00019), those still searchable,
// and empties the list. The store runs it before a commit (flushSearch);
// anything else that writes messages into a SQLite database (chatd copy)
// runs it before its own. CROSS JOIN keeps the pending list the outer
// loop: SQLite would otherwise scan every message.
var SearchIndexPending = []string{
	`INSERT INTO chat_message_fts (rowid, body, chat_id) SELECT id, body, chat_id FROM (` + pendingBodies + `)`,
	`DELETE FROM chat_message_fts_pending`,
}

// rollbackMember undoes one member's writes and leaves its savepoint.
func rollbackMember(exec func(string) error) error {
	if err := exec("ROLLBACK TO batch_member"); err != nil {
		return err
	}
	return exec("RELEASE batch_member")
}

// call runs fn, turning a panic into a result for its caller.
func call(fn func(store.Tx) error, t *tx) (res txResult) {
	defer func() {
		if p := recover(); p != nil {
			res = txResult{panicked: true, panicVal: p}
		}
	}()
	return txResult{err: fn(t)}
}
