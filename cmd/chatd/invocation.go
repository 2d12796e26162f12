package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/google/uuid"
	"github.com/pressly/goose/v3"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/wire"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/postgres"
)

// Review is the operator's assessment file for `chatd invocation reconcile`.
type Review struct {
	// Assessment says what the operator found (required).
	Assessment string `json:"assessment"`
	// Result becomes the result of each unresolved tool call, so the model
	// learns what happened; the assessment is used when it is absent.
	Result json.RawMessage `json:"result,omitempty"`
	// IsError marks the result as a failure.
	IsError bool `json:"is_error,omitempty"`
}

// inspection is what `chatd invocation inspect` prints.
type inspection struct {
	Claim   claimView            `json:"claim"`
	Chat    *chatView            `json:"chat,omitempty"`
	Turn    []sdk.ChatMessage    `json:"turn"`
	Journal []store.JournalEntry `json:"tool_journal"`
}

type claimView struct {
	RequestID       uuid.UUID       `json:"request_id"`
	AuditID         uuid.UUID       `json:"audit_id"`
	CallerID        uuid.UUID       `json:"caller_id"`
	Kind            string          `json:"kind"`
	State           string          `json:"state"`
	ContentSHA256   string          `json:"content_sha256"`
	ChatID          uuid.UUID       `json:"chat_id"`
	MessageID       *int64          `json:"message_id,omitempty"`
	QueuedMessageID *int64          `json:"queued_message_id,omitempty"`
	Outcome         json.RawMessage `json:"outcome,omitempty"`
	Review          json.RawMessage `json:"review,omitempty"`
	CreatedAt       string          `json:"created_at"`
	CompletedAt     *string         `json:"completed_at,omitempty"`
}

type chatView struct {
	ID     uuid.UUID        `json:"id"`
	Title  string           `json:"title"`
	Status store.ChatStatus `json:"status"`
	State  chatstate.State  `json:"state"`
}

func runInvocation(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "inspect" && args[0] != "reconcile") {
		return fmt.Errorf("usage: chatd invocation inspect|reconcile --request-id UUID [--review FILE.json] [--db ...]")
	}
	action := args[0]
	fs := flag.NewFlagSet("invocation "+action, flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", envDefault("CHATD_DB", app.DefaultDB), "SQLite file or postgres:// URL (CHATD_DB)")
	rawID := fs.String("request-id", "", "the request's UUID")
	reviewFile := fs.String("review", "", "reconcile: the operator's assessment (JSON: {assessment, result?, is_error?})")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	id, err := uuid.Parse(*rawID)
	if err != nil || id == uuid.Nil {
		return fmt.Errorf("--request-id must be a non-nil UUID")
	}
	s, err := app.OpenStore(ctx, *db)
	if err != nil {
		return fmt.Errorf("open %s: %w (a SQLite file is locked while chatd serve runs: stop it first)", *db, err)
	}
	defer s.Close()
	if err := app.Migrate(ctx, s, func(p *goose.Provider) error { _, err := p.Up(ctx); return err }); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if action == "inspect" {
		return inspect(ctx, s, id, stdout)
	}
	if *reviewFile == "" {
		return fmt.Errorf("reconcile needs --review FILE.json")
	}
	raw, err := os.ReadFile(*reviewFile)
	if err != nil {
		return err
	}
	var review Review
	if err := json.Unmarshal(raw, &review); err != nil {
		return fmt.Errorf("read %s: %w", *reviewFile, err)
	}
	if review.Assessment == "" {
		return fmt.Errorf("%s: \"assessment\" is required", *reviewFile)
	}
	if len(review.Result) > 0 && !json.Valid(review.Result) {
		return fmt.Errorf("%s: \"result\" must be JSON", *reviewFile)
	}
	var pub chatstate.Publisher = pubsub.NewMemory()
	if pg, ok := s.(*postgres.Store); ok {
		ps, err := postgres.NewPubsub(ctx, pg.Pool())
		if err != nil {
			return err
		}
		defer ps.Close()
		pub = ps // the serving replicas pick the chat up at once
	}
	if err := reconcile(ctx, chatstate.New(s, pub, chatstate.Config{}), id, review); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "reconciled request %s; it stays closed to execution and its chat continues\n", id)
	return nil
}

func inspect(ctx context.Context, s store.Store, id uuid.UUID, out io.Writer) error {
	var in inspection
	err := s.ReadTx(ctx, func(tx store.Reader) error {
		inv, err := tx.InvocationGet(ctx, id)
		if err != nil {
			return fmt.Errorf("request %s: %w", id, err)
		}
		in.Claim = claimView{
			RequestID: inv.RequestID, AuditID: inv.AuditID, CallerID: inv.CallerID, Kind: inv.Kind, State: string(inv.State),
			ContentSHA256: inv.ContentSHA256, ChatID: inv.ChatID, MessageID: inv.MessageID,
			QueuedMessageID: inv.QueuedMessageID, Outcome: inv.Outcome, Review: inv.Review,
			CreatedAt: inv.CreatedAt.Format("2006-01-02T15:04:05Z07:00"),
		}
		if inv.CompletedAt != nil {
			t := inv.CompletedAt.Format("2006-01-02T15:04:05Z07:00")
			in.Claim.CompletedAt = &t
		}
		c, err := tx.ChatGet(ctx, inv.ChatID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		default:
			q, err := tx.QueueCount(ctx, c.ID)
			if err != nil {
				return err
			}
			in.Chat = &chatView{ID: c.ID, Title: c.Title, Status: c.Status, State: chatstate.Classify(true, c.Status, c.Archived, q > 0)}
		}
		in.Turn = []sdk.ChatMessage{}
		if inv.MessageID != nil {
			ms, err := tx.MessageList(ctx, inv.ChatID, store.MessageListParams{AfterID: *inv.MessageID - 1, IncludeDeleted: true})
			if err != nil {
				return err
			}
			in.Turn = wire.ToMessages(ms)
		}
		in.Journal, err = tx.JournalList(ctx, inv.ChatID, uuid.NullUUID{UUID: id, Valid: true})
		return err
	})
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(in)
}

// reconcile records the review without replaying anything: the request
// becomes reconciled (closed to execution), each unresolved tool call gets
// the reviewed result, and the chat resumes from requires_action.
func reconcile(ctx context.Context, m *chatstate.Machine, id uuid.UUID, review Review) error {
	reviewJSON, _ := json.Marshal(review)
	result := review.Result
	if len(result) == 0 {
		result, _ = json.Marshal(map[string]string{"reviewed": review.Assessment})
	}
	return m.Do(ctx, func(t *chatstate.Tx) error {
		tx := t.Store()
		inv, err := tx.InvocationGet(ctx, id)
		if err != nil {
			return fmt.Errorf("request %s: %w", id, err)
		}
		// Lock the chat before touching the claim and the journal, in the
		// order runners use, then re-read the claim under the lock.
		_, st, err := t.State(inv.ChatID)
		if err != nil {
			return err
		}
		if inv, err = tx.InvocationGet(ctx, id); err != nil {
			return fmt.Errorf("request %s: %w", id, err)
		}
		if inv.State != store.InvocationUnresolved {
			return fmt.Errorf("request %s is %s; only unresolved requests are reconciled", id, inv.State)
		}
		entries, err := tx.JournalList(ctx, inv.ChatID, uuid.NullUUID{UUID: id, Valid: true})
		if err != nil {
			return err
		}
		reviewed := map[string]bool{}
		now := t.Now()
		for _, e := range entries {
			if e.State != store.JournalUnresolved {
				continue
			}
			reviewed[e.ToolCallID] = true
			if _, err := tx.JournalUpdate(ctx, inv.ChatID, e.ToolCallID, store.JournalPatch{
				State: store.Some(store.JournalReconciled), Result: store.Some(result),
				IsError: store.Some(review.IsError), CompletedAt: store.Some(&now),
			}); err != nil {
				return err
			}
		}
		if _, err := tx.InvocationUpdate(ctx, id, store.InvocationPatch{
			State: store.Some(store.InvocationReconciled), Review: store.Some(json.RawMessage(reviewJSON)),
			CompletedAt: store.Some(&now), UpdatedAt: now,
		}); err != nil {
			return err
		}
		if st != chatstate.StateA0 && st != chatstate.StateA1 {
			return nil // the chat moved on (or is gone): the review is recorded
		}
		pending, err := t.OutstandingToolCalls(inv.ChatID)
		if err != nil {
			return err
		}
		var results []sdk.ToolResult
		for _, c := range pending {
			if reviewed[c.ID] {
				results = append(results, sdk.ToolResult{ToolCallID: c.ID, Output: result, IsError: review.IsError})
			} else {
				out, _ := json.Marshal(map[string]string{"error": "not run: the request was reconciled by an operator"})
				results = append(results, sdk.ToolResult{ToolCallID: c.ID, Output: out, IsError: true})
			}
		}
		_, err = t.CompleteRequiresAction(inv.ChatID, results, uuid.NullUUID{})
		return err
	})
}
