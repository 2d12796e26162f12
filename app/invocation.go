package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/admin"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/wire"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/open"
)

// Tools is the operator's tooling for durable requests (`chatd invocation`):
// inspect a request and reconcile an unresolved one, over the configured
// store, with the same state machine the server runs.
type Tools struct {
	cfg   Config
	store open.Migrator
	log   *slog.Logger
}

// OpenTools opens and migrates the store cfg.DB names. Close releases it.
// A SQLite file is locked while a server runs on it.
func OpenTools(ctx context.Context, cfg Config) (*Tools, error) {
	cfg = cfg.withDefaults()
	s, err := open.Migrated(ctx, cfg.DB)
	if err != nil {
		return nil, fmt.Errorf("%w (a SQLite file is locked while chatd serve runs: stop it first)", err)
	}
	return &Tools{cfg: cfg, store: s, log: slog.Default()}, nil
}

// Close releases the store.
func (t *Tools) Close() error { return t.store.Close() }

// Review is the operator's assessment for Reconcile (the JSON of
// `chatd invocation reconcile --review FILE.json`).
type Review = sdk.ReconcileRequest

// Inspection is what Inspect reports: a claim, its chat, its turn and its
// tool journal.
type Inspection = admin.Inspection

// ClaimView is a durable request claim as an operator sees it.
type ClaimView = admin.ClaimView

// ChatView is the claim's chat, when it still exists.
type ChatView = admin.ChatView

// Inspect reads a request's claim, its chat, its turn (the request's
// message and everything after it, deleted ones included) and its tool
// journal in one snapshot.
func (t *Tools) Inspect(ctx context.Context, requestID uuid.UUID) (Inspection, error) {
	return invocations{store: t.store}.Inspect(ctx, admin.InvocationTarget{RequestID: requestID})
}

// Reconcile records an operator's review of an unresolved request without
// replaying anything (chatstate.Tx.Reconcile): the request becomes
// reconciled, each unresolved tool call gets the reviewed result, and the
// chat resumes. Serving replicas are notified as by any transition.
func (t *Tools) Reconcile(ctx context.Context, requestID uuid.UUID, review Review) error {
	if err := review.Validate(); err != nil {
		return fmt.Errorf("review: %w", err)
	}
	// The store's own pubsub (Postgres NOTIFY) lets serving replicas pick
	// the change up at once; on SQLite nobody else is listening.
	pub, closePub, err := openPubsub(ctx, t.store, t.log)
	if err != nil {
		return err
	}
	defer closePub()
	m := chatstate.New(t.store, pub, machineConfig(t.cfg, sharedByReplicas(t.store), t.log, t.cfg.Clock))
	_, err = invocations{store: t.store, machine: m}.Reconcile(ctx, admin.InvocationTarget{RequestID: requestID}, review)
	return err
}

// invocations answers the invocation.* admin commands over a store and
// its state machine: the server's own (the admin socket), or one the CLI
// opened.
type invocations struct {
	store   store.ReadStore
	machine *chatstate.Machine
}

var _ admin.Invocations = invocations{}

const inspectTimeFormat = "2006-01-02T15:04:05Z07:00"

// Inspect reads a target in one snapshot. A request: its claim, its chat,
// its turn (the request's message and everything after it, deleted ones
// included) and its tool journal. A tool call: its request's inspection
// when its turn has a claim; else its chat, its turn (from the user
// message before the call) and its journal entry.
func (v invocations) Inspect(ctx context.Context, g admin.InvocationTarget) (Inspection, error) {
	var in Inspection
	err := v.store.ReadTx(ctx, func(tx store.Reader) error {
		chatID, requestID := g.ChatID, g.RequestID
		var entry *store.JournalEntry
		if requestID == uuid.Nil {
			e, err := tx.JournalGet(ctx, g.ChatID, g.ToolCallID)
			if err != nil {
				return fmt.Errorf("tool call %s of chat %s: %w", g.ToolCallID, g.ChatID, err)
			}
			entry = &e
			if e.RequestID.Valid {
				if _, err := tx.InvocationGet(ctx, e.RequestID.UUID); err == nil {
					requestID = e.RequestID.UUID
				}
			}
		}
		var turnFrom int64 // the first message of the turn; 0: none
		if requestID != uuid.Nil {
			inv, err := tx.InvocationGet(ctx, requestID)
			if err != nil {
				return fmt.Errorf("request %s: %w", requestID, err)
			}
			claim := ClaimView{
				RequestID: inv.RequestID, AuditID: inv.AuditID, CallerID: inv.CallerID, Kind: inv.Kind, State: string(inv.State),
				ContentSHA256: inv.ContentSHA256, RequestSHA256: inv.RequestSHA256, ChatID: inv.ChatID, MessageID: inv.MessageID,
				QueuedMessageID: inv.QueuedMessageID, Outcome: inv.Outcome, Review: inv.Review,
				CreatedAt: inv.CreatedAt.Format(inspectTimeFormat),
			}
			if inv.CompletedAt != nil {
				at := inv.CompletedAt.Format(inspectTimeFormat)
				claim.CompletedAt = &at
			}
			in.Claim, chatID = &claim, inv.ChatID
			if inv.MessageID != nil {
				turnFrom = *inv.MessageID
			}
		}
		c, err := tx.ChatGet(ctx, chatID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return fmt.Errorf("read chat %s: %w", chatID, err)
		default:
			q, err := tx.QueueCount(ctx, c.ID)
			if err != nil {
				return fmt.Errorf("count queue of chat %s: %w", c.ID, err)
			}
			in.Chat = &ChatView{ID: c.ID, Title: c.Title, Status: c.Status, State: chatstate.Classify(true, c.Status, c.Archived, q > 0)}
		}
		in.Turn = []sdk.ChatMessage{}
		if entry != nil && in.Claim == nil {
			all, err := tx.MessageList(ctx, chatID, store.MessageListParams{IncludeDeleted: true})
			if err != nil {
				return fmt.Errorf("list messages of chat %s: %w", chatID, err)
			}
			turnFrom = turnOf(wire.ToMessages(all), entry.ToolCallID)
		}
		if turnFrom > 0 {
			ms, err := tx.MessageList(ctx, chatID, store.MessageListParams{AfterID: turnFrom - 1, IncludeDeleted: true})
			if err != nil {
				return fmt.Errorf("list turn of chat %s: %w", chatID, err)
			}
			in.Turn = wire.ToMessages(ms)
		}
		if in.Claim == nil {
			in.Journal = []store.JournalEntry{*entry}
			return nil
		}
		if in.Journal, err = tx.JournalList(ctx, chatID, uuid.NullUUID{UUID: requestID, Valid: true}); err != nil {
			return fmt.Errorf("list journal of request %s: %w", requestID, err)
		}
		return nil
	})
	return in, err
}

// turnOf is the id of the user message that starts the turn of a tool
// call (the last one before the message calling it), or of the calling
// message itself when no user message precedes it; 0 when no message
// calls it.
func turnOf(ms []sdk.ChatMessage, toolCallID string) int64 {
	for i, m := range ms {
		if !slices.ContainsFunc(m.Content, func(p sdk.ChatMessagePart) bool {
			return p.Type == sdk.PartToolCall && p.ToolCallID == toolCallID
		}) {
			continue
		}
		for j := i; j >= 0; j-- {
			if ms[j].Role == string(store.RoleUser) {
				return ms[j].ID
			}
		}
		return m.ID
	}
	return 0
}

// Reconcile records an operator's review through the state machine
// (chatstate.Tx.Reconcile), the one mechanism every way in shares.
func (v invocations) Reconcile(ctx context.Context, g admin.InvocationTarget, review sdk.ReconcileRequest) (sdk.ReconcileResponse, error) {
	var out sdk.ReconcileResponse
	err := v.machine.Do(ctx, func(tx *chatstate.Tx) error {
		res, err := tx.Reconcile(chatstate.ReconcileTarget{RequestID: g.RequestID, ChatID: g.ChatID, ToolCallID: g.ToolCallID}, review)
		if err != nil {
			return err
		}
		out = wire.ToReconcileResponse(res.Request, res.Chat, res.ToolCallIDs)
		return nil
	})
	return out, err
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
