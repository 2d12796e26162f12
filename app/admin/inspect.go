package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/wire"
	"github.com/chatd/chatd/store"
)

// StoreInvocations answers the invocation.* admin commands over a store
// and its state machine: the server's own (the admin socket), or one the
// CLI opened.
func StoreInvocations(s store.ReadStore, m *chatstate.Machine) Invocations {
	return invocations{store: s, machine: m}
}

// invocations is StoreInvocations.
type invocations struct {
	store   store.ReadStore
	machine *chatstate.Machine
}

const inspectTimeFormat = "2006-01-02T15:04:05Z07:00"

// Inspect reads a target in one snapshot. A request: its claim, its chat,
// its turn (the request's message and everything after it, deleted ones
// included) and its tool journal. A tool call: its request's inspection
// when its turn has a claim; else its chat, its turn (from the user
// message before the call) and its journal entry.
func (v invocations) Inspect(ctx context.Context, g InvocationTarget) (Inspection, error) {
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
func (v invocations) Reconcile(ctx context.Context, g InvocationTarget, review sdk.ReconcileRequest) (sdk.ReconcileResponse, error) {
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
