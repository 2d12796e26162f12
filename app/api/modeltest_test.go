package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/llm/llmtest"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// POST /chats/model-configs/{id}/test runs one tiny real generation
// through the config's provider and model, as a chat's turn would: Chat
// Completions for an OpenAI-compatible server, the Responses API for an
// OpenAI model that takes it, the config's reasoning effort, a small
// max_tokens, the stored key. A provider failure is a 200 with ok false
// and the provider's message, never the key; a disabled config is tested
// itself (no fallback to the default). Admins only; 404 for an unknown id.
func TestModelConfigTestAPI(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		const secret = "sk-model-test-5e7a91c3"
		rig := newSecretRig(t, newStore(t), "", secret)
		adminToken, userToken, do := rig.adminToken, rig.userToken, rig.do
		create := func(path, body string, out any) {
			t.Helper()
			status, raw := do(adminToken, "POST", "/api/v2"+path, body)
			require.Equal(t, http.StatusCreated, status, "%s", raw)
			require.NoError(t, json.Unmarshal(raw, out))
		}

		// Chat Completions: an OpenAI-compatible server with a reasoning model.
		compat := llmtest.NewOpenAI(t)
		var compatP sdk.ChatProviderConfig
		create("/chats/providers", fmt.Sprintf(`{"provider":"openai-compat","display_name":"Local","base_url":%q,"api_key":%q}`, compat.URL, secret), &compatP)
		var qwen, plain sdk.ChatModelConfig
		create("/chats/model-configs", fmt.Sprintf(`{"ai_provider_id":%q,"model":"qwen3","model_config":{"reasoning_effort":{"default":"low","max":"high"}}}`, compatP.ID), &qwen)
		create("/chats/model-configs", fmt.Sprintf(`{"ai_provider_id":%q,"model":"llama3","model_config":{"max_output_tokens":8}}`, compatP.ID), &plain)
		// The Responses API: an OpenAI provider and a model that takes it.
		responses := llmtest.NewOpenAIResponses(t)
		var openaiP sdk.ChatProviderConfig
		create("/chats/providers", fmt.Sprintf(`{"provider":"openai","base_url":%q,"api_key":%q}`, responses.URL, secret), &openaiP)
		var astra sdk.ChatModelConfig
		create("/chats/model-configs", fmt.Sprintf(`{"ai_provider_id":%q,"model":"gpt-6-astra"}`, openaiP.ID), &astra)
		var demoID string
		var all []sdk.ChatModelConfig
		_, raw := do(adminToken, "GET", "/api/v2/chats/model-configs", "")
		require.NoError(t, json.Unmarshal(raw, &all))
		for _, m := range all {
			if m.Model == "demo" {
				demoID = m.ID.String()
			}
		}
		require.NotEmpty(t, demoID)

		type scenario struct {
			name    string
			token   string
			path    string // under /api/v2 unless it starts with /api/
			setup   func()
			status  int
			ok      bool
			sample  string // contained in the sample when ok
			errText string // contained in the error when not ok
			fake    *llmtest.Server
			request func(t *testing.T, r llmtest.Request)
		}
		testPath := func(id string) string { return "/chats/model-configs/" + id + "/test" }
		scenarios := []scenario{
			{name: "chat completions, effort and few tokens", token: adminToken, path: testPath(qwen.ID.String()),
				setup:  func() { compat.Enqueue(llmtest.TextChunks("O", "K")) },
				status: http.StatusOK, ok: true, sample: "OK", fake: compat,
				request: func(t *testing.T, r llmtest.Request) {
					require.Equal(t, "/v1/chat/completions", r.Path)
					require.Equal(t, "Bearer "+secret, r.Header.Get("Authorization"), "the stored key")
					body := r.JSON(t)
					require.Equal(t, "qwen3", body["model"])
					require.Equal(t, "low", body["reasoning_effort"], "the config's default effort")
					require.EqualValues(t, 32, body["max_completion_tokens"])
				}},
			{name: "no effort for a model without one; its own smaller max", token: adminToken, path: testPath(plain.ID.String()),
				status: http.StatusOK, ok: true, sample: "Hello from llmtest.", fake: compat,
				request: func(t *testing.T, r llmtest.Request) {
					body := r.JSON(t)
					require.Equal(t, "llama3", body["model"])
					require.NotContains(t, body, "reasoning_effort")
					require.EqualValues(t, 8, body["max_completion_tokens"])
				}},
			{name: "the responses API", token: adminToken, path: testPath(astra.ID.String()),
				status: http.StatusOK, ok: true, sample: "Hello from llmtest.", fake: responses,
				request: func(t *testing.T, r llmtest.Request) {
					require.Equal(t, "/v1/responses", r.Path)
					body := r.JSON(t)
					require.Equal(t, "gpt-6-astra", body["model"])
					require.EqualValues(t, 32, body["max_output_tokens"])
				}},
			{name: "the demo model", token: adminToken, path: testPath(demoID), status: http.StatusOK, ok: true},
			{name: "401: the provider's message without the key", token: adminToken, path: testPath(qwen.ID.String()),
				setup: func() {
					compat.Enqueue(llmtest.HTTPError(http.StatusUnauthorized, "Incorrect API key provided: "+secret))
				},
				status: http.StatusOK, ok: false, errText: "Incorrect API key provided", fake: compat},
			{name: "500", token: adminToken, path: testPath(astra.ID.String()),
				setup:  func() { responses.Enqueue(llmtest.HTTPError(http.StatusInternalServerError, "the model is on fire")) },
				status: http.StatusOK, ok: false, errText: "the model is on fire", fake: responses},
			{name: "a disabled config is tested itself", token: adminToken, path: testPath(plain.ID.String()),
				setup: func() {
					status, raw := do(adminToken, "PATCH", "/api/v2/chats/model-configs/"+plain.ID.String(), `{"enabled":false}`)
					require.Equal(t, http.StatusOK, status, "%s", raw)
				},
				status: http.StatusOK, ok: true, fake: compat,
				request: func(t *testing.T, r llmtest.Request) { require.Equal(t, "llama3", r.JSON(t)["model"], "no fallback") }},
			{name: "experimental path", token: adminToken, path: "/api/experimental" + testPath(qwen.ID.String()), status: http.StatusOK, ok: true, fake: compat},
			{name: "a user", token: userToken, path: testPath(qwen.ID.String()), status: http.StatusForbidden},
			{name: "anonymous", path: testPath(qwen.ID.String()), status: http.StatusUnauthorized},
			{name: "an unknown id", token: adminToken, path: testPath("5c4f8a61-3b8d-4a8e-9d0c-0f1e2d3c4b5a"), status: http.StatusNotFound},
			{name: "a bad id", token: adminToken, path: testPath("nope"), status: http.StatusNotFound},
		}
		for _, sc := range scenarios {
			t.Run(sc.name, func(t *testing.T) {
				if sc.setup != nil {
					sc.setup()
				}
				before := 0
				if sc.fake != nil {
					before = len(sc.fake.Requests())
				}
				path := sc.path
				if !strings.HasPrefix(path, "/api/") {
					path = "/api/v2" + path
				}
				status, raw := do(sc.token, "POST", path, "")
				require.Equal(t, sc.status, status, "%s", raw)
				if status != http.StatusOK {
					var e sdk.Error
					require.NoError(t, json.Unmarshal(raw, &e), "%s", raw)
					require.NotEmpty(t, e.Message)
					return
				}
				var r sdk.ChatModelConfigTest
				require.NoError(t, json.Unmarshal(raw, &r), "%s", raw)
				require.Equal(t, sc.ok, r.OK, "%s", raw)
				require.NotNil(t, r.Models, "the provider test's shape: models is a list")
				require.GreaterOrEqual(t, r.LatencyMS, int64(0))
				if sc.ok {
					require.Empty(t, r.Error)
					require.NotEmpty(t, r.Sample)
					require.Contains(t, r.Sample, sc.sample)
				} else {
					require.Contains(t, r.Error, sc.errText)
					require.Empty(t, r.Sample)
				}
				if sc.fake != nil {
					reqs := sc.fake.Requests()
					require.Len(t, reqs, before+1, "one generation")
					if sc.request != nil {
						sc.request(t, reqs[len(reqs)-1])
					}
				}
			})
		}
	})
}
