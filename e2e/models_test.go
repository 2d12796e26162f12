package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app"
	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/modelconfig"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/worker"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// A chat keeps running while an admin edits its model: the turn goes on
// with the edited config. The reasoning effort the chat asked for is not
// sent while the config has no reasoning_effort, and is clamped to the
// config's max once it has one.
func TestRunningChatSurvivesModelEdit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		fake := llmtest.NewOpenAI(t, llmtest.ToolCall("call_1", "lookup", `{}`), llmtest.TextChunks("done"))
		admin := apptest.Start(t, apptest.Options{Store: newStore, Config: config.Config{
			OpenAIBaseURL: fake.URL, DefaultModel: "openai/test-model",
			Worker: worker.Config{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, SyncInterval: 50 * time.Millisecond},
		}}).Admin

		id := modelconfig.ModelID("openai", "test-model")
		created, err := admin.CreateChat(ctx, sdk.CreateChatRequest{Content: sdk.Text("look it up"), Title: "no title call", ModelConfigID: &id,
			ReasoningEffort: "high", UnsafeDynamicTools: []sdk.DynamicTool{{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)}}})
		require.NoError(t, err)
		waitStatus(t, ctx, admin, created.ID, sdk.ChatStatusRequiresAction)

		var edited sdk.ChatModelConfig
		require.NoError(t, admin.Do(ctx, http.MethodPatch, "/chats/model-configs/"+id.String(), map[string]any{
			"display_name": "Edited", "model_config": map[string]any{"reasoning_effort": map[string]string{"max": "low"}},
		}, &edited))
		require.Equal(t, "Edited", edited.DisplayName)

		require.NoError(t, admin.SubmitToolResults(ctx, created.ID, sdk.SubmitToolResultsRequest{
			Results: []sdk.ToolResult{{ToolCallID: "call_1", Output: json.RawMessage(`"42"`)}}}))
		waitStatus(t, ctx, admin, created.ID, sdk.ChatStatusWaiting)

		reqs := fake.Requests()
		require.Len(t, reqs, 2)
		require.NotContains(t, reqs[0].JSON(t), "reasoning_effort", "the config had no reasoning_effort")
		require.Equal(t, "low", reqs[1].JSON(t)["reasoning_effort"], "clamped to the edited max")
	})
}

// Without CHATD_SECRET_KEY, PostgreSQL refuses to start; SQLite creates a
// private key file next to the database and reuses it. A construction
// test: app.New on a database path, as chatd serve opens it.
func TestSecretKeyRequirements(t *testing.T) {
	_, err := app.New(context.Background(), config.Config{DB: "postgres://nowhere.invalid/chatd"}, io.Discard)
	require.ErrorContains(t, err, "CHATD_SECRET_KEY is required with PostgreSQL")

	dir := t.TempDir()
	db := filepath.Join(dir, "chatd.db")
	a, err := app.New(context.Background(), config.Config{DB: db, NoWorker: true}, io.Discard)
	require.NoError(t, err)
	require.NoError(t, a.Close())
	info, err := os.Stat(db + ".secret-key")
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	first, err := os.ReadFile(db + ".secret-key")
	require.NoError(t, err)
	a, err = app.New(context.Background(), config.Config{DB: db, NoWorker: true}, io.Discard)
	require.NoError(t, err)
	require.NoError(t, a.Close())
	again, err := os.ReadFile(db + ".secret-key")
	require.NoError(t, err)
	require.Equal(t, first, again)

	require.NoError(t, os.Chmod(db+".secret-key", 0o644))
	_, err = app.New(context.Background(), config.Config{DB: db, NoWorker: true}, io.Discard)
	require.ErrorContains(t, err, "chmod 600")
}
