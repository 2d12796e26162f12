package dbcopy_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/auth"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/dbcopy"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/postgres"
)

const secretKey = "dbcopy-test-secret-key-0123456789abcdef"

// world is what fill made: the ids the API answers are compared on.
type world struct {
	admin, alice string // tokens
	chats        []uuid.UUID
	requests     []uuid.UUID
	project      uuid.UUID
	hidden       int64 // a message off its chat's active branch (chats[4])
}

// serve starts an app (no worker: nothing moves between the snapshots)
// on db and returns its URL and a stop function.
func serve(t *testing.T, db, adminToken string) (*app.App, string, func()) {
	t.Helper()
	a, err := app.New(t.Context(), config.Config{DB: db, BootstrapToken: adminToken, SecretKey: secretKey}, io.Discard)
	require.NoError(t, err)
	srv := httptest.NewServer(a.Handler())
	return a, srv.URL, func() { srv.Close(); require.NoError(t, a.Close()) }
}

// fill writes every kind of row through the API (and, for what only a
// running turn writes, through the store): users and tokens, a provider
// with a sealed key and a model config, an MCP server with sealed env,
// a project with a memory, durable chats and messages (claims), a queue,
// a family, an archived chat, an errored chat and a tool journal entry.
func fillWith(t *testing.T, a *app.App, url string, w *world) {
	ctx := t.Context()
	admin := sdk.New(url, w.admin)
	tok, _, err := auth.CreateToken(ctx, a.Internals().Store, "alice", false, "test", time.Now())
	require.NoError(t, err)
	w.alice = tok
	alice := sdk.New(url, tok)

	var prov map[string]any
	require.NoError(t, admin.Do(ctx, "POST", "/chats/providers", map[string]any{"provider": "openai", "api_key": "sk-sealed", "base_url": "http://127.0.0.1:1/v1"}, &prov))
	require.NoError(t, admin.Do(ctx, "POST", "/chats/model-configs", map[string]any{"ai_provider_id": prov["id"], "model": "gpt-4o"}, nil))
	var mcpServer sdk.MCPServer
	require.NoError(t, admin.Do(ctx, "POST", "/chats/mcp-servers", map[string]any{"name": "tools", "command": "true", "env": map[string]string{"API_KEY": "sekrit"}, "access": "all"}, &mcpServer))
	_, _, err = auth.New(a.Internals().Store, nil, nil, auth.Config{}).CreateLoginCode(ctx, "alice")
	require.NoError(t, err)

	p, err := alice.CreateProject(ctx, sdk.CreateProjectRequest{Name: "proj", Instructions: "be brief"})
	require.NoError(t, err)
	w.project = p.ID
	_, err = alice.PutMemory(ctx, p.ID, "facts", "the sky is blue")
	require.NoError(t, err)

	// A durable chat, then a durable message to it: the chat is running
	// (no worker), so the message queues.
	rid1, rid2 := uuid.New(), uuid.New()
	created, err := alice.CreateChatWithID(ctx, rid1, sdk.CreateChatRequest{Content: sdk.Text("hello"), Title: "first", Labels: map[string]string{"k": "v"}}, sdk.RetryPolicy{Attempts: 1})
	require.NoError(t, err)
	root := created.Chat.ID
	_, err = alice.SendWithID(ctx, root, rid2, sdk.CreateChatMessageRequest{Content: sdk.Text("and then?")}, sdk.RetryPolicy{Attempts: 1})
	require.NoError(t, err)
	w.requests = []uuid.UUID{rid1, rid2}

	child, err := alice.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("sub task"), ParentChatID: &root})
	require.NoError(t, err)
	archived, err := alice.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("old"), MCPServerIDs: []uuid.UUID{}})
	require.NoError(t, err)
	failed, err := alice.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("doomed"), MCPServerIDs: []uuid.UUID{mcpServer.ID}})
	require.NoError(t, err)
	w.chats = []uuid.UUID{root, child.ID, archived.ID, failed.ID}

	// Versions (issue 32): an edit leaves its first version hidden, a fork
	// copies a branch; the copy keeps the tree (parent_id, sibling_ids, the
	// hidden branch).
	versioned, err := alice.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("version one")})
	require.NoError(t, err)
	page, err := alice.ChatMessages(ctx, versioned.ID, sdk.MessagesOptions{})
	require.NoError(t, err)
	w.hidden = page.Messages[0].ID
	_, err = alice.EditMessage(ctx, versioned.ID, w.hidden, sdk.EditChatMessageRequest{Content: sdk.Text("version two")})
	require.NoError(t, err)
	fork, err := alice.ForkChat(ctx, versioned.ID, sdk.ForkChatRequest{MessageID: w.hidden})
	require.NoError(t, err)
	w.chats = append(w.chats, versioned.ID, fork.ID)

	// What a turn would write: an error and a tool journal entry.
	now := time.Now().UTC()
	require.NoError(t, a.Internals().Store.InTx(ctx, func(tx store.Tx) error {
		if _, err := tx.ChatUpdate(ctx, failed.ID, store.ChatPatch{
			Status:    store.Some(store.ChatStatusError),
			LastError: store.Some(json.RawMessage(`{"code":"provider_error","message":"boom"}`)),
		}); err != nil {
			return err
		}
		if _, err := tx.ChatUpdate(ctx, archived.ID, store.ChatPatch{Status: store.Some(store.ChatStatusWaiting)}); err != nil {
			return err
		}
		// A usage record and a budget with a cost (a REAL / double column).
		if _, err := tx.UsageRecord(ctx, store.UsageRecord{Key: "step:copy", UserID: failed.OwnerID, ChatID: failed.ID,
			Kind: store.UsageKindStep, Provider: "openai", Model: "m", CreatedAt: now,
			UsageTokens: store.UsageTokens{InputTokens: 3, OutputTokens: 2, CostNanos: 1500}}); err != nil {
			return err
		}
		cost := 2.5
		if err := tx.UserBudgetSet(ctx, failed.OwnerID, &store.Budget{CostPerDay: &cost}, now); err != nil {
			return err
		}
		return tx.JournalStart(ctx, store.JournalEntry{
			ChatID: root, ToolCallID: "call_1", RequestID: uuid.NullUUID{UUID: rid1, Valid: true},
			ToolName: "fetch", Effect: "effectful", Args: json.RawMessage(`{"url":"https://example.com","n":1.5}`), StartedAt: now,
		})
	}))
	yes := true
	require.NoError(t, alice.UpdateChat(ctx, archived.ID, sdk.UpdateChatRequest{Archived: &yes, ProjectID: sdk.SelectProject(p.ID)}))
}

// answers reads what the API says about w.
func answers(t *testing.T, url string, w world) map[string]any {
	ctx := t.Context()
	out := map[string]any{}
	get := func(c *sdk.Client, key, path string) {
		var v any
		if err := c.Do(ctx, "GET", path, nil, &v); err != nil {
			var apiErr *sdk.Error
			require.ErrorAs(t, err, &apiErr, path)
			v = "error: " + err.Error() // an answer too (in progress, say)
		}
		out[key] = v
	}
	admin, alice := sdk.New(url, w.admin), sdk.New(url, w.alice)
	get(alice, "me", "/users/me")
	get(alice, "chats", "/chats?archived=all")
	// Message text search: a SQLite target must have indexed the copy.
	get(alice, "search", "/chats?archived=all&q=hello")
	get(admin, "users", "/users")
	get(admin, "alice tokens", "/users/alice/tokens")
	get(admin, "providers", "/chats/providers")
	get(admin, "model configs", "/chats/model-configs")
	get(admin, "mcp servers", "/chats/mcp-servers")
	// A server's connection (state, last_error, tools) is the process's,
	// not the database's: it races with the server's start.
	for _, srv := range out["mcp servers"].([]any) {
		for _, k := range []string{"state", "last_error", "tools"} {
			delete(srv.(map[string]any), k)
		}
	}
	get(alice, "models", "/chats/models")
	get(alice, "projects", "/projects")
	get(alice, "memories", "/projects/"+w.project.String()+"/memories")
	for _, id := range w.chats {
		get(alice, "chat "+id.String(), "/chats/"+id.String())
		get(alice, "messages "+id.String(), "/chats/"+id.String()+"/messages")
	}
	get(alice, "hidden branch", "/chats/"+w.chats[4].String()+"/messages?message_id="+strconv.FormatInt(w.hidden, 10))
	for _, id := range w.requests {
		get(alice, "request "+id.String(), "/requests/"+id.String())
	}
	return out
}

func TestCopyRoundTrip(t *testing.T) {
	dsn := dbtest.PostgresDSN(t)
	ctx := t.Context()
	dir := t.TempDir()
	db := filepath.Join(dir, "chatd.db")
	w := world{admin: auth.NewToken()}

	a, url, stop := serve(t, db, w.admin)
	fillWith(t, a, url, &w)
	want := answers(t, url, w)
	require.Contains(t, fmt.Sprint(want["hidden branch"]), "version one", "the hidden branch reads")
	_, schema := dbtest.PostgresSchema(t)
	pg := dsn + " search_path=" + schema

	// A running server holds the file: refused.
	_, err := dbcopy.Copy(ctx, dbcopy.Options{From: db, To: pg})
	require.ErrorIs(t, err, dbcopy.ErrRefused)
	require.ErrorIs(t, err, store.ErrLocked)
	stop()

	var progress bytes.Buffer
	there, err := dbcopy.Copy(ctx, dbcopy.Options{From: db, To: pg, Progress: &progress})
	require.NoError(t, err, progress.String())
	require.Contains(t, progress.String(), "chat_messages")
	require.Contains(t, progress.String(), "verified")
	rows := map[string]int64{}
	for _, tr := range there.Tables {
		rows[tr.Name] = tr.Rows
	}
	for _, name := range []string{"users", "api_tokens", "login_codes", "ai_providers", "model_configs", "mcp_servers", "projects", "project_memories", "chats", "chat_messages", "chat_queued_messages", "invocations", "tool_journal"} {
		require.Positive(t, rows[name], "%s copied no rows: the fixture misses a kind of row", name)
	}

	// A second copy into the same (now non-empty) target is refused.
	_, err = dbcopy.Copy(ctx, dbcopy.Options{From: db, To: pg})
	require.ErrorIs(t, err, dbcopy.ErrRefused)
	require.Contains(t, err.Error(), "not empty")

	a2, url2, stop2 := serve(t, pg, w.admin)
	require.Equal(t, want, answers(t, url2, w), "the API on Postgres answers as on SQLite")
	// New rows get fresh ids after the copied ones (sequences were reset).
	alice := sdk.New(url2, w.alice)
	res, err := alice.SendMessage(ctx, w.chats[3], sdk.CreateChatMessageRequest{Content: sdk.Text("new")})
	require.NoError(t, err, "%+v", res)
	_ = a2
	// Postgres is backed up with pg_dump, not through chatd.
	err = sdk.New(url2, w.admin).Do(ctx, "GET", "/admin/backup", nil, nil)
	require.ErrorContains(t, err, "pg_dump")
	stop2()

	// A replica that published its record moments ago: the source is in use.
	pgStore, err := postgres.Open(ctx, dsn, postgres.Options{SearchPath: schema})
	require.NoError(t, err)
	_, err = pgStore.Pool().Exec(ctx, `INSERT INTO chat_replicas (worker_id, address, token_hash, updated_at) VALUES ($1, 'http://x', 'h', now())`, uuid.New())
	require.NoError(t, err)
	_, err = dbcopy.Copy(ctx, dbcopy.Options{From: pg, To: filepath.Join(dir, "refused.db")})
	require.ErrorIs(t, err, dbcopy.ErrRefused)
	require.ErrorContains(t, err, "in use")
	_, err = pgStore.Pool().Exec(ctx, `DELETE FROM chat_replicas`)
	require.NoError(t, err)
	require.NoError(t, pgStore.Close())

	// And back: a fresh SQLite file from the Postgres copy (before the
	// new message, so compare with a copy of the state after it).
	back := filepath.Join(dir, "back.db")
	again, err := dbcopy.Copy(ctx, dbcopy.Options{From: pg, To: back})
	require.NoError(t, err)
	require.Len(t, again.Tables, len(there.Tables))
	// The copy indexed its messages for search before committing.
	raw, err := sql.Open("sqlite", back)
	require.NoError(t, err)
	var pending, indexed int
	require.NoError(t, raw.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM chat_message_fts_pending), (SELECT count(*) FROM chat_message_fts)`).Scan(&pending, &indexed))
	require.NoError(t, raw.Close())
	require.Zero(t, pending)
	require.Positive(t, indexed)
	_, url3, stop3 := serve(t, back, w.admin)
	defer stop3()
	got := answers(t, url3, w)
	_, url4, stop4 := serve(t, pg, w.admin)
	fromPG := answers(t, url4, w)
	stop4()
	require.Equal(t, fromPG, got, "the API on the copied-back SQLite answers as on Postgres")
}

func TestCopyRefusesBadInput(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	_, err := dbcopy.Copy(ctx, dbcopy.Options{From: filepath.Join(dir, "a.db"), To: filepath.Join(dir, "b.db")})
	require.ErrorIs(t, err, dbcopy.ErrRefused)
	dsn := dbtest.PostgresDSN(t)
	_, err = dbcopy.Copy(ctx, dbcopy.Options{From: filepath.Join(dir, "missing.db"), To: dsn})
	require.ErrorIs(t, err, dbcopy.ErrRefused)
}

// TestTablesCoverTheSchema fails when a migration adds a table the copy
// does not know (add it to dbcopy.Tables, in foreign-key order).
func TestTablesCoverTheSchema(t *testing.T) {
	ctx := t.Context()
	unknown, err := dbcopy.UnknownTables(ctx, filepath.Join(t.TempDir(), "chatd.db"))
	require.NoError(t, err)
	require.Empty(t, unknown, "sqlite")
	dsn, schema := dbtest.PostgresSchema(t)
	unknown, err = dbcopy.UnknownTables(ctx, dsn+" search_path="+schema)
	require.NoError(t, err)
	require.Empty(t, unknown, "postgres")
}
