package e2e_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/admin"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/open"
)

// TestOpenAdminInspectAndReconcile runs the operator's tooling over both
// stores, opened from a DB string as `chatd invocation` does with no server
// running (app.OpenAdmin's local client): a request
// left unresolved by an effectful call in doubt is inspected, reconciled
// once (its chat resumes with the reviewed result) and then stays closed.
func TestOpenAdminInspectAndReconcile(t *testing.T) {
	dbs := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return filepath.Join(t.TempDir(), "chatd.db") },
		"postgres": func(t *testing.T) string {
			dsn, schema := dbtest.PostgresSchema(t)
			return dsn + " search_path=" + schema
		},
	}
	for name, newDB := range dbs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			db := newDB(t)
			chatID, requestID := seedUnresolved(t, ctx, db)

			c, closeAdmin, err := app.OpenAdmin(ctx, config.Config{DB: db})
			require.NoError(t, err)
			defer closeAdmin()
			inspect := func(requestID uuid.UUID) (in admin.Inspection, err error) {
				return in, c.Call(ctx, admin.CmdInvocationInspect, admin.InvocationTarget{RequestID: requestID}, &in)
			}
			reconcile := func(requestID uuid.UUID, review sdk.ReconcileRequest) error {
				var out sdk.ReconcileResponse
				return c.Call(ctx, admin.CmdInvocationReconcile, admin.InvocationReconcileRequest{
					InvocationTarget: admin.InvocationTarget{RequestID: requestID}, Review: review}, &out)
			}
			in, err := inspect(requestID)
			require.NoError(t, err)
			require.Equal(t, "unresolved", in.Claim.State)
			require.Equal(t, chatID, in.Claim.ChatID)
			require.NotNil(t, in.Chat)
			require.Equal(t, chatstate.StateA0, in.Chat.State, "stopped for review")
			require.NotEmpty(t, in.Turn)
			require.Len(t, in.Journal, 1)
			require.Equal(t, store.JournalUnresolved, in.Journal[0].State)

			_, err = inspect(uuid.New())
			require.ErrorIs(t, err, store.ErrNotFound)
			require.Error(t, reconcile(requestID, sdk.ReconcileRequest{}), "an assessment is required")

			require.NoError(t, reconcile(requestID, sdk.ReconcileRequest{Assessment: "it ran", Result: json.RawMessage(`{"delivered":true}`)}))
			in, err = inspect(requestID)
			require.NoError(t, err)
			require.Equal(t, "reconciled", in.Claim.State)
			require.JSONEq(t, `{"assessment":"it ran","result":{"delivered":true}}`, string(in.Claim.Review))
			require.NotNil(t, in.Claim.CompletedAt)
			require.Equal(t, chatstate.StateR0, in.Chat.State, "the chat resumes")
			require.Equal(t, store.JournalReconciled, in.Journal[0].State)
			require.JSONEq(t, `{"delivered":true}`, string(in.Journal[0].Result))

			err = reconcile(requestID, sdk.ReconcileRequest{Assessment: "again"})
			var refused *admin.Error
			require.ErrorAs(t, err, &refused)
			require.Equal(t, admin.CodeConflict, refused.Code, "a reconciled request stays closed: %v", err)
		})
	}
}

// seedUnresolved leaves a durable request unresolved the way a crash
// during an effectful call does, then closes the store (a SQLite file has
// one owner at a time).
func seedUnresolved(t *testing.T, ctx context.Context, db string) (chatID, requestID uuid.UUID) {
	t.Helper()
	s, err := open.Store(ctx, db)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, open.Migrate(ctx, s, func(p *goose.Provider) error { _, err := p.Up(ctx); return err }))
	user := uuid.New()
	require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
		_, err := tx.UserInsert(ctx, store.UserInsertParams{ID: user, Name: "alice", Now: time.Now()})
		return err
	}))
	m := chatstate.New(s, pubsub.NewMemory(), chatstate.Config{})
	chatID, requestID = uuid.New(), uuid.New()
	request := uuid.NullUUID{UUID: requestID, Valid: true}
	require.NoError(t, m.Do(ctx, func(tx *chatstate.Tx) error {
		in := chatstate.UserInput{Content: sdk.Text("notify the shop"), RequestID: request}
		if _, err := tx.Create(chatstate.CreateParams{ID: chatID, OwnerID: user, Title: "shop", Input: in}); err != nil {
			return err
		}
		ms, err := tx.Reader().MessageList(ctx, chatID, store.MessageListParams{})
		if err != nil {
			return err
		}
		_, err = tx.AdmitRequest(chatstate.Claim{
			RequestID: requestID, CallerID: user, ContentSHA256: "00", Kind: "create_chat", ChatID: chatID,
			MessageID: &ms[len(ms)-1].ID, Response: json.RawMessage(`{}`),
		})
		return err
	}))
	require.NoError(t, m.Do(ctx, func(tx *chatstate.Tx) error {
		if _, err := tx.Acquire(chatID, uuid.New(), uuid.New()); err != nil {
			return err
		}
		call, err := chatstate.EncodeParts([]sdk.ChatMessagePart{
			{Type: sdk.PartToolCall, ToolCallID: "call_hook", ToolName: "send_webhook", Args: json.RawMessage(`{}`)},
		})
		if err != nil {
			return err
		}
		if _, err := tx.CommitStep(chatID, chatstate.Step{Messages: []store.MessageInsertParams{{Role: store.RoleAssistant, Content: call}}}); err != nil {
			return err
		}
		_, _, err = tx.JournalStart(chatID, chatstate.JournalCall{
			ToolCallID: "call_hook", ToolName: "send_webhook", Effect: store.EffectEffectful, RequestID: request,
		})
		return err
	}))
	require.NoError(t, m.Do(ctx, func(tx *chatstate.Tx) error {
		_, err := tx.MarkUnresolved(chatID, request, []string{"call_hook"})
		return err
	}))
	return chatID, requestID
}
