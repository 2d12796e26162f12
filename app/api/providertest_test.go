package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

type providerTestAnswer struct {
	OK     bool   `json:"ok"`
	Error  string `json:"error"`
	Models []struct {
		ID           string `json:"id"`
		DisplayName  string `json:"display_name"`
		ContextLimit int64  `json:"context_limit"`
	} `json:"models"`
}

// POST /chats/providers/{id}/test lists the provider's models with its
// stored key and base URL: an OpenAI-compatible fake server's list with
// its context windows (else the built-in table's), Anthropic's list with
// its headers, ok false with the error for a provider that cannot be
// reached; admins only; never the key in the answer.
func TestProviderTestAPI(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		const secret = "sk-test-connection-9d2e"
		rig := newSecretRig(t, newStore(t), "", secret)
		adminToken, userToken, do := rig.adminToken, rig.userToken, rig.do
		create := func(body string) sdk.ChatProviderConfig {
			t.Helper()
			status, out := do(adminToken, "POST", "/api/v2/chats/providers", body)
			require.Equal(t, http.StatusCreated, status, "%s", out)
			var p sdk.ChatProviderConfig
			require.NoError(t, json.Unmarshal(out, &p))
			return p
		}
		test := func(token string, id string) (int, providerTestAnswer) {
			t.Helper()
			status, out := do(token, "POST", "/api/v2/chats/providers/"+id+"/test", "")
			var r providerTestAnswer
			if status == http.StatusOK {
				require.NoError(t, json.Unmarshal(out, &r), "%s", out)
			}
			return status, r
		}

		// An OpenAI-compatible server (vLLM-style list with max_model_len).
		fake := llmtest.NewOpenAI(t)
		fake.SetModels(llmtest.ListedModel{ID: "qwen3", Fields: map[string]any{"max_model_len": 32768}}, llmtest.ListedModel{ID: "gpt-4o"})
		compat := create(fmt.Sprintf(`{"provider":"openai-compat","display_name":"Local","base_url":%q,"api_key":%q}`, fake.URL, secret))
		status, r := test(adminToken, compat.ID.String())
		require.Equal(t, http.StatusOK, status)
		require.True(t, r.OK, r.Error)
		require.Empty(t, r.Error)
		require.Len(t, r.Models, 2)
		require.Equal(t, "gpt-4o", r.Models[0].ID)
		require.Equal(t, int64(128000), r.Models[0].ContextLimit, "from the built-in table")
		require.Equal(t, "qwen3", r.Models[1].ID)
		require.Equal(t, int64(32768), r.Models[1].ContextLimit, "from the server's list")
		reqs := fake.Requests()
		require.NotEmpty(t, reqs)
		require.Equal(t, "GET", reqs[0].Method)
		require.Equal(t, "Bearer "+secret, reqs[0].Header.Get("Authorization"), "the stored key is sent to the provider")

		// Anthropic: GET /v1/models with x-api-key and a version.
		var gotKey, gotVersion string
		anth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/models" {
				http.NotFound(w, r)
				return
			}
			gotKey, gotVersion = r.Header.Get("x-api-key"), r.Header.Get("anthropic-version")
			if gotKey != secret {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
				return
			}
			_, _ = w.Write([]byte(`{"data":[{"id":"claude-sonnet-4-5","display_name":"Claude Sonnet 4.5","type":"model"}],"has_more":false}`))
		}))
		t.Cleanup(anth.Close)
		ap := create(fmt.Sprintf(`{"provider":"anthropic","base_url":%q,"api_key":%q}`, anth.URL, secret))
		status, r = test(adminToken, ap.ID.String())
		require.Equal(t, http.StatusOK, status)
		require.True(t, r.OK, r.Error)
		require.Equal(t, secret, gotKey)
		require.NotEmpty(t, gotVersion)
		require.Len(t, r.Models, 1)
		require.Equal(t, "Claude Sonnet 4.5", r.Models[0].DisplayName)
		require.Positive(t, r.Models[0].ContextLimit, "from the built-in table")

		// A wrong key: ok false with the provider's message.
		status, out := do(adminToken, "PATCH", "/api/v2/chats/providers/"+ap.ID.String(), `{"api_key":"sk-wrong"}`)
		require.Equal(t, http.StatusOK, status, "%s", out)
		status, r = test(adminToken, ap.ID.String())
		require.Equal(t, http.StatusOK, status)
		require.False(t, r.OK)
		require.Contains(t, r.Error, "invalid x-api-key")
		require.Empty(t, r.Models)

		// A server that is not there: ok false, an error.
		gone := llmtest.NewOpenAI(t)
		goneURL := gone.URL
		gone.Close()
		down := create(fmt.Sprintf(`{"provider":"openai-compat","base_url":%q}`, goneURL))
		status, r = test(adminToken, down.ID.String())
		require.Equal(t, http.StatusOK, status)
		require.False(t, r.OK)
		require.NotEmpty(t, r.Error)

		// Who may test, and bad ids.
		status, _ = test(userToken, compat.ID.String())
		require.Equal(t, http.StatusForbidden, status)
		status, _ = test("", compat.ID.String())
		require.Equal(t, http.StatusUnauthorized, status)
		status, _ = test(adminToken, "nope")
		require.Equal(t, http.StatusNotFound, status, "a path that names no provider")
		status, _ = test(adminToken, "5c4f8a61-3b8d-4a8e-9d0c-0f1e2d3c4b5a")
		require.Equal(t, http.StatusNotFound, status)
		status, _ = do(adminToken, "POST", "/api/experimental/chats/providers/"+compat.ID.String()+"/test", "")
		require.Equal(t, http.StatusOK, status)
	})
}
