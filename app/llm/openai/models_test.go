package openai_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/llm/openai"
	"github.com/chatd/chatd/app/sdk"
)

func paths(reqs []llmtest.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

func TestListModelsOpenAIShape(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t)
	srv.SetModels(
		llmtest.ListedModel{ID: "gpt-4.1", OwnedBy: "system"},
		llmtest.ListedModel{ID: "gpt-4.1-mini", OwnedBy: "system"},
		llmtest.ListedModel{ID: "dall-e-3", OwnedBy: "system"},
	)
	models, err := openai.ListModels(context.Background(), openai.Config{APIKey: "sk-test", BaseURL: srv.URL})
	require.NoError(t, err)
	require.Equal(t, []openai.Model{
		{ID: "dall-e-3", OwnedBy: "system"},
		{ID: "gpt-4.1", OwnedBy: "system"},
		{ID: "gpt-4.1-mini", OwnedBy: "system"},
	}, models)
	reqs := srv.Requests()
	require.Equal(t, "Bearer sk-test", reqs[0].Header.Get("Authorization"))
	// One /api/show probe finds no Ollama; no more are sent.
	require.Equal(t, []string{"GET /v1/models", "POST /api/show"}, paths(reqs))
	require.Zero(t, srv.Pending())
}

// TestListModelsReportedContext: the context windows servers put in their
// list entries.
func TestListModelsReportedContext(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t)
	srv.SetModels(
		llmtest.ListedModel{ID: "Qwen/Qwen3-8B", OwnedBy: "vllm", Fields: map[string]any{"max_model_len": 32768, "root": "Qwen/Qwen3-8B"}},
		llmtest.ListedModel{ID: "openai/gpt-4.1", Fields: map[string]any{"context_length": 1047576}},
		llmtest.ListedModel{ID: "llama-3.3-70b-versatile", OwnedBy: "Meta", Fields: map[string]any{"context_window": 131072}},
		llmtest.ListedModel{ID: "qwen2.5-7b-instruct", Fields: map[string]any{"max_context_length": "8192"}},
		llmtest.ListedModel{ID: "bad", Fields: map[string]any{"max_model_len": -1, "context_length": "lots"}},
	)
	models, err := openai.ListModels(context.Background(), openai.Config{BaseURL: srv.URL})
	require.NoError(t, err)
	require.Equal(t, []openai.Model{
		{ID: "Qwen/Qwen3-8B", OwnedBy: "vllm", ContextLimit: 32768},
		{ID: "bad", OwnedBy: "llmtest"},
		{ID: "llama-3.3-70b-versatile", OwnedBy: "Meta", ContextLimit: 131072},
		{ID: "openai/gpt-4.1", OwnedBy: "llmtest", ContextLimit: 1047576},
		{ID: "qwen2.5-7b-instruct", OwnedBy: "llmtest", ContextLimit: 8192},
	}, models)
}

// TestListModelsOllama: Ollama's list has no context window; /api/show
// gives the model's num_ctx parameter, else its model_info maximum.
func TestListModelsOllama(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t)
	srv.SetModels(
		llmtest.ListedModel{ID: "llama3.2:3b", OwnedBy: "library"},
		llmtest.ListedModel{ID: "mine:latest", OwnedBy: "library"},
		llmtest.ListedModel{ID: "qwen3:8b", OwnedBy: "library"},
	)
	srv.SetOllamaShow("llama3.2:3b", llmtest.OllamaShow{
		ModelInfo:  map[string]any{"general.architecture": "llama", "llama.context_length": 131072, "llama.embedding_length": 3072},
		Parameters: `stop "<|eot_id|>"`,
	})
	srv.SetOllamaShow("qwen3:8b", llmtest.OllamaShow{
		ModelInfo:  map[string]any{"general.architecture": "qwen3", "qwen3.context_length": 40960},
		Parameters: "temperature 0.6\nnum_ctx 16384\ntop_k 20",
	})
	// mine:latest has no /api/show answer (404): its window stays unknown.
	models, err := openai.ListModels(context.Background(), openai.Config{Name: "ollama", BaseURL: srv.URL})
	require.NoError(t, err)
	require.Equal(t, []openai.Model{
		{ID: "llama3.2:3b", OwnedBy: "library", ContextLimit: 131072},
		{ID: "mine:latest", OwnedBy: "library"},
		{ID: "qwen3:8b", OwnedBy: "library", ContextLimit: 16384},
	}, models)
	require.Equal(t, []string{"GET /v1/models", "POST /api/show", "POST /api/show", "POST /api/show"}, paths(srv.Requests()))
	require.JSONEq(t, `{"model":"llama3.2:3b"}`, string(srv.Requests()[1].Body))
}

// TestListModelsDefaultBaseURL: api.openai.com is never asked /api/show.
func TestListModelsDefaultBaseURL(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t)
	srv.SetModels(llmtest.ListedModel{ID: "gpt-5"})
	target, err := url.Parse(srv.URL)
	require.NoError(t, err)
	client := &http.Client{Transport: rewriteHost{target: target}}
	models, err := openai.ListModels(context.Background(), openai.Config{APIKey: "sk-test", HTTPClient: client})
	require.NoError(t, err)
	require.Equal(t, []openai.Model{{ID: "gpt-5", OwnedBy: "llmtest"}}, models)
	require.Equal(t, []string{"GET /v1/models"}, paths(srv.Requests()))
}

// rewriteHost sends every request to target's host, keeping the path.
type rewriteHost struct{ target *url.URL }

func (rt rewriteHost) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = rt.target.Scheme, rt.target.Host
	return http.DefaultTransport.RoundTrip(r)
}

func TestListModelsErrors(t *testing.T) {
	t.Parallel()
	t.Run("bad key", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
		}))
		defer srv.Close()
		_, err := openai.ListModels(context.Background(), openai.Config{Name: "openai", APIKey: "sk-bad", BaseURL: srv.URL + "/v1"})
		var e *llm.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, sdk.ChatErrorAuth, e.Kind)
		require.Equal(t, http.StatusUnauthorized, e.StatusCode)
		require.Equal(t, "Incorrect API key provided", e.Message)
		require.Contains(t, err.Error(), "list models of openai")
	})
	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewOpenAI(t)
		srv.Close()
		_, err := openai.ListModels(context.Background(), openai.Config{Name: "ollama", BaseURL: srv.URL})
		var e *llm.Error
		require.ErrorAs(t, err, &e)
		require.True(t, e.Retryable)
		require.Equal(t, "ollama", e.Provider)
	})
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewOpenAI(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := openai.ListModels(ctx, openai.Config{BaseURL: srv.URL})
		require.True(t, errors.Is(err, context.Canceled), "%v", err)
	})
}
