package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/google/uuid"
	"github.com/pressly/goose/v3"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/wire"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
)

// Tools is the operator's tooling for durable requests (`chatd invocation`):
// inspect a request and reconcile an unresolved one, over the configured
// store, with the same state machine the server runs.
type Tools struct {
	cfg   Config
	store migrator
	log   *slog.Logger
}

// OpenTools opens and migrates the store cfg.DB names. Close releases it.
// A SQLite file is locked while a server runs on it.
func OpenTools(ctx context.Context, cfg Config) (*Tools, error) {
	cfg = cfg.withDefaults()
	s, err := openMigrated(ctx, cfg.DB)
	if err != nil {
		return nil, fmt.Errorf("%w (a SQLite file is locked while chatd serve runs: stop it first)", err)
	}
	return &Tools{cfg: cfg, store: s, log: slog.Default()}, nil
}

// openMigrated opens db for a short-lived command and brings its schema
// up to date, closing it again on failure.
func openMigrated(ctx context.Context, db string) (migrator, error) {
	s, err := OpenStore(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", describeDB(db), err)
	}
	if err := Migrate(ctx, s, func(p *goose.Provider) error { _, err := p.Up(ctx); return err }); err != nil {
		s.Close()
		return nil, fmt.Errorf("migrate %s: %w", describeDB(db), err)
	}
	return s, nil
}

// Close releases the store.
func (t *Tools) Close() error { return t.store.Close() }

// Review is the operator's assessment for Reconcile (the JSON of
// `chatd invocation reconcile --review FILE.json`).
type Review struct {
	// Assessment says what the operator found (required).
	Assessment string `json:"assessment"`
	// Result becomes the result of each unresolved tool call, so the model
	// learns what happened; the assessment is used when it is absent.
	Result json.RawMessage `json:"result,omitempty"`
	// IsError marks the result as a failure.
	IsError bool `json:"is_error,omitempty"`
}

// Validate reports what is wrong with a review, naming the field.
func (r Review) Validate() error {
	if r.Assessment == "" {
		return errors.New(`"assessment" is required`)
	}
	if len(r.Result) > 0 && !json.Valid(r.Result) {
		return errors.New(`"result" must be JSON`)
	}
	return nil
}

// Inspection is what Inspect reports: a claim, its chat, its turn and its
// tool journal.
type Inspection struct {
	Claim   ClaimView            `json:"claim"`
	Chat    *ChatView            `json:"chat,omitempty"`
	Turn    []sdk.ChatMessage    `json:"turn"`
	Journal []store.JournalEntry `json:"tool_journal"`
}

// ClaimView is a durable request claim as an operator sees it.
type ClaimView struct {
	RequestID       uuid.UUID       `json:"request_id"`
	AuditID         uuid.UUID       `json:"audit_id"`
	CallerID        uuid.UUID       `json:"caller_id"`
	Kind            string          `json:"kind"`
	State           string          `json:"state"`
	ContentSHA256   string          `json:"content_sha256"`
	RequestSHA256   string          `json:"request_sha256"` // "" for claims from before it existed
	ChatID          uuid.UUID       `json:"chat_id"`
	MessageID       *int64          `json:"message_id,omitempty"`
	QueuedMessageID *int64          `json:"queued_message_id,omitempty"`
	Outcome         json.RawMessage `json:"outcome,omitempty"`
	Review          json.RawMessage `json:"review,omitempty"`
	CreatedAt       string          `json:"created_at"`
	CompletedAt     *string         `json:"completed_at,omitempty"`
}

// ChatView is the claim's chat, when it still exists.
type ChatView struct {
	ID     uuid.UUID        `json:"id"`
	Title  string           `json:"title"`
	Status store.ChatStatus `json:"status"`
	State  chatstate.State  `json:"state"`
}

const inspectTimeFormat = "2006-01-02T15:04:05Z07:00"

// Inspect reads a request's claim, its chat, its turn (the request's
// message and everything after it, deleted ones included) and its tool
// journal in one snapshot.
func (t *Tools) Inspect(ctx context.Context, requestID uuid.UUID) (Inspection, error) {
	var in Inspection
	err := t.store.ReadTx(ctx, func(tx store.Reader) error {
		inv, err := tx.InvocationGet(ctx, requestID)
		if err != nil {
			return fmt.Errorf("request %s: %w", requestID, err)
		}
		in.Claim = ClaimView{
			RequestID: inv.RequestID, AuditID: inv.AuditID, CallerID: inv.CallerID, Kind: inv.Kind, State: string(inv.State),
			ContentSHA256: inv.ContentSHA256, RequestSHA256: inv.RequestSHA256, ChatID: inv.ChatID, MessageID: inv.MessageID,
			QueuedMessageID: inv.QueuedMessageID, Outcome: inv.Outcome, Review: inv.Review,
			CreatedAt: inv.CreatedAt.Format(inspectTimeFormat),
		}
		if inv.CompletedAt != nil {
			at := inv.CompletedAt.Format(inspectTimeFormat)
			in.Claim.CompletedAt = &at
		}
		c, err := tx.ChatGet(ctx, inv.ChatID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return fmt.Errorf("read chat %s: %w", inv.ChatID, err)
		default:
			q, err := tx.QueueCount(ctx, c.ID)
			if err != nil {
				return fmt.Errorf("count queue of chat %s: %w", c.ID, err)
			}
			in.Chat = &ChatView{ID: c.ID, Title: c.Title, Status: c.Status, State: chatstate.Classify(true, c.Status, c.Archived, q > 0)}
		}
		in.Turn = []sdk.ChatMessage{}
		if inv.MessageID != nil {
			ms, err := tx.MessageList(ctx, inv.ChatID, store.MessageListParams{AfterID: *inv.MessageID - 1, IncludeDeleted: true})
			if err != nil {
				return fmt.Errorf("list turn of request %s: %w", requestID, err)
			}
			in.Turn = wire.ToMessages(ms)
		}
		if in.Journal, err = tx.JournalList(ctx, inv.ChatID, uuid.NullUUID{UUID: requestID, Valid: true}); err != nil {
			return fmt.Errorf("list journal of request %s: %w", requestID, err)
		}
		return nil
	})
	return in, err
}

// Reconcile records an operator's review of an unresolved request without
// replaying anything (chatstate.Tx.ReconcileRequest): the request becomes
// reconciled, each unresolved tool call gets the reviewed result, and the
// chat resumes. Serving replicas are notified as by any transition.
func (t *Tools) Reconcile(ctx context.Context, requestID uuid.UUID, review Review) error {
	if err := review.Validate(); err != nil {
		return fmt.Errorf("review: %w", err)
	}
	reviewJSON, err := json.Marshal(review)
	if err != nil {
		return fmt.Errorf("encode review: %w", err)
	}
	result := review.Result
	if len(result) == 0 {
		result, _ = json.Marshal(map[string]string{"reviewed": review.Assessment})
	}
	// The store's own pubsub (Postgres NOTIFY) lets serving replicas pick
	// the change up at once; on SQLite nobody else is listening.
	pub, closePub, err := openPubsub(ctx, t.store, t.log)
	if err != nil {
		return err
	}
	defer closePub()
	m := chatstate.New(t.store, pub, machineConfig(t.cfg, sharedByReplicas(t.store), t.log, t.cfg.Clock))
	return m.Do(ctx, func(tx *chatstate.Tx) error {
		_, err := tx.ReconcileRequest(requestID, chatstate.Reconciliation{
			Review: reviewJSON, Result: result, IsError: review.IsError,
		})
		return err
	})
}

// machineConfig is the state machine's configuration for cfg: leases are
// heartbeat rows (and an owner with a stale heartbeat counts as gone) only
// with several replicas on Postgres.
func machineConfig(cfg Config, leases bool, log *slog.Logger, clk clock.Clock) chatstate.Config {
	mcfg := chatstate.Config{QueueLimit: cfg.QueueLimit, RequiresActionTimeout: cfg.RequiresActionTimeout, Log: log, Clock: clk}
	if leases {
		mcfg.LeaseTimeout = cfg.Worker.LeaseTimeout
		if mcfg.LeaseTimeout == 0 {
			mcfg.LeaseTimeout = worker.DefaultLeaseTimeout
		}
	}
	return mcfg
}
