package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/admin"
	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/open"
)

// seedReview leaves two chats stopped for review the way a crash during an
// effectful call does: one whose turn has a durable request, one sent
// without a request id. It returns the store closed again.
func seedReview(t *testing.T, db string) seeded {
	t.Helper()
	ctx := context.Background()
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
	one := func(req uuid.NullUUID, call string) uuid.UUID {
		chatID := uuid.New()
		require.NoError(t, m.Do(ctx, func(tx *chatstate.Tx) error {
			in := chatstate.UserInput{Content: sdk.Text("notify the shop"), RequestID: req}
			if _, err := tx.Create(chatstate.CreateParams{ID: chatID, OwnerID: user, Title: "shop", Input: in}); err != nil {
				return err
			}
			if !req.Valid {
				return nil
			}
			ms, err := tx.Reader().MessageList(ctx, chatID, store.MessageListParams{})
			if err != nil {
				return err
			}
			_, err = tx.AdmitRequest(chatstate.Claim{
				RequestID: req.UUID, CallerID: user, ContentSHA256: "00", Kind: "create_chat", ChatID: chatID,
				MessageID: &ms[len(ms)-1].ID, Response: json.RawMessage(`{}`),
			})
			return err
		}))
		require.NoError(t, m.Do(ctx, func(tx *chatstate.Tx) error {
			if _, err := tx.Acquire(chatID, uuid.New(), uuid.New()); err != nil {
				return err
			}
			parts, err := chatstate.EncodeParts([]sdk.ChatMessagePart{{Type: sdk.PartToolCall, ToolCallID: call, ToolName: "send_webhook", Args: json.RawMessage(`{}`)}})
			if err != nil {
				return err
			}
			if _, err := tx.CommitStep(chatID, chatstate.Step{Messages: []store.MessageInsertParams{{Role: store.RoleAssistant, Content: parts}}}); err != nil {
				return err
			}
			if _, _, err := tx.JournalStart(chatID, chatstate.JournalCall{ToolCallID: call, ToolName: "send_webhook", Effect: store.EffectEffectful, RequestID: req}); err != nil {
				return err
			}
			_, err = tx.MarkUnresolved(chatID, req, []string{call})
			return err
		}))
		return chatID
	}
	request := uuid.New()
	return seeded{
		withReq: one(uuid.NullUUID{UUID: request, Valid: true}, "call_req"), request: request, call1: "call_req",
		noReq: one(uuid.NullUUID{}, "call_bare"), call2: "call_bare",
	}
}

func inspect(t *testing.T, args ...string) admin.Inspection {
	t.Helper()
	out, _, err := cli(t, append([]string{"invocation", "inspect"}, args...)...)
	require.NoError(t, err)
	var in admin.Inspection
	require.NoError(t, json.Unmarshal([]byte(out), &in))
	return in
}

func writeReview(t *testing.T, review string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "review.json")
	require.NoError(t, os.WriteFile(path, []byte(review), 0o600))
	return path
}

// checkInvocationCLI inspects and reconciles both kinds of unresolved call
// (by request id, and by chat and tool call) on db.
func checkInvocationCLI(t *testing.T, db string, s seeded, via string) {
	t.Helper()
	withReq, request, call1, noReq, call2 := s.withReq, s.request, s.call1, s.noReq, s.call2
	in := inspect(t, "--db", db, "--chat", noReq.String(), "--tool-call", call2)
	require.Nil(t, in.Claim, "a turn sent without a request id has no claim")
	require.Equal(t, chatstate.StateA0, in.Chat.State)
	require.Len(t, in.Journal, 1)
	require.Equal(t, store.JournalUnresolved, in.Journal[0].State)
	require.Len(t, in.Turn, 2, "the user message and the call")
	in = inspect(t, "--db", db, "--chat", withReq.String(), "--tool-call", call1)
	require.NotNil(t, in.Claim, "a call of a request's turn shows its request")
	require.Equal(t, request, in.Claim.RequestID)
	require.Equal(t, "unresolved", in.Claim.State)

	review := writeReview(t, `{"assessment":"delivered","result":{"ok":true}}`)
	out, _, err := cli(t, "invocation", "reconcile", "--db", db, "--request-id", request.String(), "--review", review)
	require.NoError(t, err)
	require.Contains(t, out, "reconciled request "+request.String())
	require.Contains(t, out, via)
	out, _, err = cli(t, "invocation", "reconcile", "--db", db, "--chat", noReq.String(), "--tool-call", call2, "--review", review)
	require.NoError(t, err)
	require.Contains(t, out, "reconciled tool call "+call2)
	_, _, err = cli(t, "invocation", "reconcile", "--db", db, "--chat", noReq.String(), "--tool-call", call2, "--review", review)
	require.ErrorContains(t, err, "cannot become reconciled", "a reviewed call stays closed")
	_, _, err = cli(t, "invocation", "inspect", "--db", db, "--chat", noReq.String(), "--tool-call", "call_nobody")
	require.ErrorContains(t, err, "not found")

	for _, chat := range []uuid.UUID{withReq, noReq} {
		in := inspect(t, "--db", db, "--chat", chat.String(), "--tool-call", map[uuid.UUID]string{withReq: call1, noReq: call2}[chat])
		require.Equal(t, chatstate.StateR0, in.Chat.State, "the chat resumed")
		require.Equal(t, store.JournalReconciled, in.Journal[0].State)
	}
}

type seeded struct {
	withReq, request, noReq uuid.UUID
	call1, call2            string
}

// `chatd invocation` works beside a running SQLite server, through its
// admin socket, and the server's chats resume at once.
func TestInvocationBesideARunningServer(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chatd.db")
	s := seedReview(t, db)
	token := createToken(t, db, "--user", "root", "--admin")
	base, _ := serve(t, db)
	checkInvocationCLI(t, db, s, "the running server at "+db+".sock")

	req, err := http.NewRequest("GET", base+"/api/v2/chats/"+s.withReq.String(), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var c sdk.Chat
	require.NoError(t, json.NewDecoder(res.Body).Decode(&c))
	require.Equal(t, sdk.ChatStatusRunning, c.Status, "the server's own state machine recorded the review")
}

// With Postgres (or no server) the CLI opens the database itself.
func TestInvocationOnPostgres(t *testing.T) {
	t.Parallel()
	dsn, schema := dbtest.PostgresSchema(t)
	db := dsn + " search_path=" + schema
	s := seedReview(t, db)
	checkInvocationCLI(t, db, s, "the database")
}

func TestInvocationCommandErrors(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chatd.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"invocation"}, "usage"},
		{[]string{"invocation", "inspect", "--db", db}, "give --request-id, or --chat and --tool-call"},
		{[]string{"invocation", "inspect", "--db", db, "--request-id", uuid.NewString(), "--chat", uuid.NewString()}, "not both"},
		{[]string{"invocation", "inspect", "--db", db, "--request-id", "nope"}, "non-nil UUID"},
		{[]string{"invocation", "inspect", "--db", db, "--chat", "nope", "--tool-call", "x"}, "--chat must be"},
		{[]string{"invocation", "reconcile", "--db", db, "--request-id", uuid.NewString()}, "--review"},
		{[]string{"invocation", "inspect", "--db", db, "--request-id", uuid.NewString()}, "not found"},
	} {
		_, _, err := cli(t, tc.args...)
		require.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}
