package openaiapi_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
	"github.com/chatd/chatd/store/open"
	"github.com/chatd/chatd/store/postgres"
)

// sharedSchema opens n stores on one migrated Postgres schema, as n
// replicas would.
func sharedSchema(t *testing.T, n int) []store.Store {
	t.Helper()
	ctx := context.Background()
	dsn, schema := dbtest.PostgresSchema(t)
	var out []store.Store
	for range n {
		s, err := postgres.Open(ctx, dsn, postgres.Options{SearchPath: schema})
		require.NoError(t, err)
		out = append(out, s)
	}
	migrations, err := out[0].(*postgres.Store).Migrations()
	require.NoError(t, err)
	_, err = migrations.Up(ctx)
	require.NoError(t, err)
	return out
}

// TestResumeOnAnotherReplica: a background response runs on replica A;
// its stream, cut on A, resumes on replica B (which runs no worker, so its
// live parts come through the relay) with no gap and no duplicate.
func TestResumeOnAnotherReplica(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stores := sharedSchema(t, 2)
	llm := llmtest.NewOpenAI(t)
	cfg := testConfig(llm.URL)
	a, urlA := serve(t, ctx, cfg, stores[0])
	cfgB := cfg
	cfgB.NoWorker = true
	_, urlB := serve(t, ctx, cfgB, stores[1])
	tok := token(t, a, "alice")
	onA, onB := client(t, urlA, tok), client(t, urlB, tok)

	for _, tc := range []struct {
		name        string
		first, then openai.Client
	}{{"A then B", onA, onB}, {"B then A", onB, onA}} {
		release := make(chan struct{})
		llm.Enqueue(llmtest.Join(llmtest.TextChunks("One ", "two "), llmtest.Pause(release), llmtest.TextChunks("three ", "four.")))
		resp, err := tc.first.Responses.New(ctx, responses.ResponseNewParams{Model: model, Input: text("Count " + tc.name), Background: openai.Bool(true)})
		require.NoError(t, err, tc.name)
		requireResume(t, ctx, tc.first, tc.then, resp.ID, release, "One two three four.")
	}
}

// TestResumeAfterCrash: the replica running a background response dies
// mid-generation (no release, no commit: the crash technique of
// app/worker's crash tests); the next owner runs the turn again and the
// client's stream, cut on the dead replica, resumes on the live one.
func TestResumeAfterCrash(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db := filepath.Join(t.TempDir(), "chatd.db")
		openSQLite := func() store.Store {
			s, err := open.Store(context.Background(), db)
			require.NoError(t, err)
			return s
		}
		first := openSQLite()
		migrations, err := first.(interface {
			Migrations() (*goose.Provider, error)
		}).Migrations()
		require.NoError(t, err)
		_, err = migrations.Up(context.Background())
		require.NoError(t, err)
		crashTest(t, func() store.Store { return first }, func() store.Store { return openSQLite() })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		stores := sharedSchema(t, 2)
		crashTest(t, func() store.Store { return stores[0] }, func() store.Store { return stores[1] })
	})
}

func crashTest(t *testing.T, firstStore, secondStore func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hang := llmtest.Join(llmtest.TextChunks("Half an"), llmtest.Hang())
	llm := llmtest.NewOpenAI(t, hang, llmtest.TextChunks("Answer after ", "the crash."))
	cfg := testConfig(llm.URL)
	cfg.Worker.HeartbeatInterval, cfg.Worker.LeaseTimeout = 100*time.Millisecond, 300*time.Millisecond

	runA, crashA := context.WithCancel(ctx)
	a, urlA := serve(t, runA, cfg, firstStore())
	tok := token(t, a, "alice")
	onA := client(t, urlA, tok)
	resp, err := onA.Responses.New(ctx, responses.ResponseNewParams{Model: model, Input: text("A long question"), Background: openai.Bool(true)})
	require.NoError(t, err)
	var got collected
	got.read(t, onA.Responses.GetStreaming(ctx, resp.ID, responses.ResponseGetParams{}), func(e responses.ResponseStreamEventUnion) bool {
		return e.Type == "response.in_progress"
	})
	waitClosed(t, hang.Started(), "the model to stream on replica A")
	crashA() // no Abandon, no commit: the worker just stops
	a.Stop()
	if a.Internals().Store.Dialect() == "sqlite" {
		require.NoError(t, a.Close()) // one process per SQLite file
	}

	b, urlB := serve(t, ctx, cfg, secondStore())
	require.NotEqual(t, a.Internals().Worker.ID(), b.Internals().Worker.ID())
	onB := client(t, urlB, tok)
	got.read(t, onB.Responses.GetStreaming(ctx, resp.ID, responses.ResponseGetParams{StartingAfter: openai.Int(got.last())}), nil)
	requireIncreasing(t, got.seqs)
	require.NotNil(t, got.final)
	require.Equal(t, "Answer after the crash.", got.text.String())
	require.Equal(t, got.final.OutputText(), got.text.String())
	require.Len(t, llm.Requests(), 2, "the turn ran twice: once cut by the crash, once to the end")
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
